// Helpers for the model tests: temporary folders, running a command with its output captured, and the tiny
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

namespace model_test {

// Debian's python3 (python3-numpy is installed for it by scripts/setup-deps.sh), not whatever is first on PATH.
inline const char* kPython = "/usr/bin/python3";

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

inline std::string tempDir() {
  std::string pattern = ::testing::TempDir() + "attnscope_model_XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

struct CommandRun {
  int status = -1;
  std::string out, err;
};

// Runs a shell command line with stdout and stderr captured.
inline CommandRun run(const std::string& command_line) {
  const std::string dir = tempDir();
  const std::string command = command_line + " >'" + dir + "/out' 2>'" + dir + "/err'";
  const int raw = std::system(command.c_str());
  CommandRun r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  return r;
}

// A tiny checkpoint in a new folder: gpt2_reference.py ARGS (e.g. "--dtype F16 --no-prefix").
inline std::string tinyCheckpoint(const std::string& args = "") {
  const std::string dir = tempDir() + "/ckpt";
  const CommandRun r =
      run(std::string(kPython) + " '" + ATTNSCOPE_SOURCE_DIR + "/tests/model/gpt2_reference.py' '" + dir + "' " + args);
  if (r.status != 0) throw std::runtime_error("gpt2_reference.py failed: " + r.err);
  return dir;
}

}  // namespace model_test
