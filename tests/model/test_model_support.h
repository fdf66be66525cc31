// Helpers for the model tests (with command_support.h: temporary folders, commands run and captured): the tiny
// GPT-2 checkpoints that tests/model/gpt2_reference.py writes with its NumPy forward's numbers.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
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

// Where the reference scripts run from: the build's source tree and Python, or, where the tests run on another
// machine (the lent GPU machine: ../shared/tools/device-pack), $ATTNSCOPE_SOURCE_DIR and $ATTNSCOPE_PYTHON.
inline std::string referenceSourceDir() {
  const char* dir = std::getenv("ATTNSCOPE_SOURCE_DIR");
  return dir && *dir ? dir : ATTNSCOPE_SOURCE_DIR;
}
inline std::string referencePython() {
  const char* python = std::getenv("ATTNSCOPE_PYTHON");
  return python && *python ? python : kPython;
}

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
      run(referencePython() + " '" + referenceSourceDir() + "/tests/model/gpt2_reference.py' '" + dir + "' " + args);
  if (r.status != 0) throw std::runtime_error("gpt2_reference.py failed: " + r.err);
  return dir;
}

// A tiny checkpoint in a new folder, written by tests/model/SCRIPT (a family's *_reference.py, which also writes
// its NumPy forward's numbers into expected.json) with ARGS.
inline std::string referenceCheckpoint(const std::string& script, const std::string& args) {
  const std::string dir = tempDir() + "/ckpt";
  const CommandRun r = run(referencePython() + " '" + referenceSourceDir() + "/tests/model/" + script + "' '" + dir +
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

// --- the families' shared bars, texts and refusals (tests/model/test_family_references.cpp runs every family) ---

// float32 against float64 on the same stored weights (hidden 32 to 64, head_dim 12 to 16, 2 or 3 layers, 30 to 151
// tokens). Per score a 12-to-16-term dot product of vectors that went through two or three layers of float32
// residual stream (~1e-7 relative per step, a few 1e-6 after the norms, each dividing by a deviation near 1); a
// softmax moves a weight by at most w(1 - w) x the score's error, so the weights' errors stay near 1e-6 even for
// Gemma's scores of about 30. The bars: 1e-5 maps (and layer scenes), 1e-6 rollout (a product of maps each in
// [0, 1], rows summing to 1), 5e-5 hidden. Seen over the 21 rows of test_family_references.cpp (each prints its
// own): maps to 4.8e-6 (Gemma 1), rollout 4.1e-7, hidden 7.4e-6, layer scenes and the forward through scenes
// 4.8e-6: every bar at least 2x the worst seen, 6.8x for the hidden state. GPT-2's sharper maps have their own
// (test_model_forward.cpp).
inline constexpr double kWeightTol = 1e-5, kRolloutTol = 1e-6, kHiddenTol = 5e-5;

inline const std::string kShort = "Hello there, attention heads!";  // BOS + 29 byte tokens (the decoders' tokenizers)
inline const std::string kLong =  // 150 bytes: past attendHead's 128-row block, far past the sliding windows
    "A sliding window lets each query see only its last few keys; this text is long enough that the window, the "
    "blocks and the causal mask all matter.";
inline const std::string kEncoderShort = "Hello there, every key sees the query!";  // [CLS] + 9 words + [SEP]
// 131 tokens with [CLS] / [SEP] (words outside the vocabulary go letter by letter)
inline const std::string kEncoderLong =
    "An encoder lets every query see every key; this text is long enough that the blocks of query rows and "
    "the key blocks all matter, and no causal mask hides anything: words after a query count too, you see?";

inline int lineCount(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// `model DIR --text hi --out OUT`: exit 2, one line holding every needle, OUT not written.
inline void expectRefused(const std::string& dir, const std::vector<std::string>& needles) {
  const std::string out = tempDir() + "/out.json";
  const CommandRun r = run(std::string("'") + ATTNSCOPE_BINARY + "' model '" + dir + "' --text 'hi' --out '" + out + "'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lineCount(r.err), 1) << r.err;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' in " << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace model_test
