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
// A (layers, heads, n, n) float32 NPY of uniform causal rows: row i is 1 / (i + 1) on keys 0..i, 0 after.
inline void writeUniformCausalNpy(const std::string& path, int layers, int heads, int n) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(layers) + ", " +
                       std::to_string(heads) + ", " + std::to_string(n) + ", " + std::to_string(n) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  for (int m = 0; m < layers * heads; ++m)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const float w = j <= i ? 1.0f / static_cast<float>(i + 1) : 0.0f;
        bytes.append(reinterpret_cast<const char*>(&w), 4);  // x86-64 is little-endian, as '<f4' says
      }
  std::ofstream(path, std::ios::binary) << bytes;
}

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
