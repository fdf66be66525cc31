// Helpers for the model tests (with command_support.h: temporary folders, commands run and captured): the tiny
// GPT-2 checkpoints that tests/model/gpt2_reference.py writes with its NumPy forward's numbers.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "command_support.h"

namespace model_test {

// Debian's python3 (python3-numpy is installed for it by scripts/setup-deps.sh), not whatever is first on PATH.
inline const char* kPython = "/usr/bin/python3";

using attnscope::test::CommandRun;
using attnscope::test::run;
using attnscope::test::slurp;

inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

inline std::string tempDir() { return attnscope::test::tempDir("attnscope_model"); }

// A tiny checkpoint in a new folder: gpt2_reference.py ARGS (e.g. "--dtype F16 --no-prefix").
inline std::string tinyCheckpoint(const std::string& args = "") {
  const std::string dir = tempDir() + "/ckpt";
  const CommandRun r =
      run(std::string(kPython) + " '" + ATTNSCOPE_SOURCE_DIR + "/tests/model/gpt2_reference.py' '" + dir + "' " + args);
  if (r.status != 0) throw std::runtime_error("gpt2_reference.py failed: " + r.err);
  return dir;
}

}  // namespace model_test
