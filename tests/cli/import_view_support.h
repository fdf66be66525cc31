// Shared by the import and view tests: a safetensors writer of the tests' own (JSON header + float32 data, as
// Hugging Face's format document describes), and a NumPy converter of such a file to .npz.
#pragma once

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command_support.h"

namespace attnscope::test {

struct TestTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;  // C order
};

inline void writeSafetensors(const std::string& path, const std::map<std::string, TestTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, t] : tensors) {
    const std::size_t begin = data.size();
    data.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
    header[name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t length = text.size();
  out.write(reinterpret_cast<const char*>(&length), 8);
  out << text << data;
}

// NumPy's own np.savez (or np.savez_compressed) of a safetensors file's tensors, parsed in Python.
inline CommandRun safetensorsToNpz(const std::string& from, const std::string& to, bool compressed = false) {
  return run(std::string("/usr/bin/python3 -c \"import json, struct, sys, numpy as np\n"
                         "b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]\n"
                         "h = json.loads(b[8:8 + n])\n"
                         "a = {k: np.frombuffer(b[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]], '<f4')"
                         ".reshape(v['shape']) for k, v in h.items()}\n"
                         "np.") +
             (compressed ? "savez_compressed" : "savez") + "(sys.argv[2], **a)\" '" + from + "' '" + to + "'");
}

}  // namespace attnscope::test
