// Helpers for the model tests (with command_support.h: temporary folders, commands run and captured): the tiny
// GPT-2 checkpoints that tests/model/gpt2_reference.py writes with its NumPy forward's numbers.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/model/forward.h"
#include "command_support.h"
#include "compare.h"

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

// The worst error of `model --out`'s maps (written["layers"][l]["heads"][h]) against NumPy's
// expected["weights"][l][h], every layer's and head count asserted (a missing one fails, as an infinite error).
inline double writtenMapsError(const nlohmann::json& written, const nlohmann::json& expected) {
  const std::size_t layers = expected["weights"].size(), heads = expected["weights"][0].size();
  EXPECT_EQ(written["layers"].size(), layers);
  if (written["layers"].size() != layers) return INFINITY;
  double worst = 0;
  for (std::size_t l = 0; l < layers; ++l) {
    EXPECT_EQ(written["layers"][l]["heads"].size(), heads) << "layer " << l;
    if (written["layers"][l]["heads"].size() != heads) return INFINITY;
    for (std::size_t h = 0; h < heads; ++h)
      worst = attnscope::test::worse(
          worst, attnscope::test::maxError(attnscope::test::jsonMatrix(written["layers"][l]["heads"][h]),
                                           attnscope::test::jsonMatrix(expected["weights"][l][h]), {}, "maps"));
  }
  return worst;
}

// A tiny checkpoint in a new folder: gpt2_reference.py ARGS (e.g. "--dtype F16 --no-prefix").
inline std::string tinyCheckpoint(const std::string& args = "") {
  const std::string dir = tempDir() + "/ckpt";
  const CommandRun r =
      run(std::string(kPython) + " '" + ATTNSCOPE_SOURCE_DIR + "/tests/model/gpt2_reference.py' '" + dir + "' " + args);
  if (r.status != 0) throw std::runtime_error("gpt2_reference.py failed: " + r.err);
  return dir;
}

// A tiny checkpoint in a new folder, written by tests/model/SCRIPT (a family's *_reference.py, which also writes
// its NumPy forward's numbers into expected.json) with ARGS.
inline std::string referenceCheckpoint(const std::string& script, const std::string& args) {
  const std::string dir = tempDir() + "/ckpt";
  const CommandRun r = run(std::string(kPython) + " '" + ATTNSCOPE_SOURCE_DIR + "/tests/model/" + script + "' '" + dir +
                           "' " + args);
  if (r.status != 0) throw std::runtime_error(script + " failed: " + r.err);
  return dir;
}

// expected.json's token ids.
inline std::vector<int> idsOf(const nlohmann::json& expected) {
  std::vector<int> ids;
  for (const nlohmann::json& id : expected["ids"]) ids.push_back(id.get<int>());
  return ids;
}

// The largest |engine - NumPy| over every map of a forward against expected.json's weights [layer][head].
inline double worstMap(const attnscope::model::ForwardResult& f, const nlohmann::json& expected) {
  double worst = 0;
  for (std::size_t l = 0; l < expected["weights"].size(); ++l)
    for (std::size_t h = 0; h < expected["weights"][l].size(); ++h)
      worst = attnscope::test::worse(
          worst, attnscope::test::maxError(f.map(static_cast<int>(l), static_cast<int>(h)),
                                           attnscope::test::jsonMatrix(expected["weights"][l][h]), {}, "maps"));
  return worst;
}

}  // namespace model_test
