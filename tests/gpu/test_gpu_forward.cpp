// The whole checkpoint forward on the GPU (attnscope/gpu_forward.h) on every row of the family table
// (tests/model/family_rows.h) and GPT-2: its maps, kept and recomputed from its Q, K and row statistics, and its
// final hidden state against the NumPy float64 forward (expected.json) and against the CPU forward; ln_1, the
// traced token and the statistics against the CPU forward; weights held as the file stores them.
//
// Tolerances: the CPU forward's own bars against NumPy (model_test::kWeightTol 1e-5 on maps, kHiddenTol 5e-5 on
// the hidden state: float32 rounding carried through two or three layers), since the GPU forward is the same
// float32 arithmetic in another order of summation (one rounding per term, ~1e-7 relative; erf by a fit of relative
// error 1.2e-7). GPU against CPU: each within the bar of NumPy, so within twice it. Seen on llvmpipe: see the
// printed lines (maps to 1.5e-6, hidden to 8e-6).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "attnscope/error.h"
#include "attnscope/gpu_forward.h"
#include "attnscope/model/model.h"
#include "compare.h"
#include "gpu_test_support.h"
#include "model/family_rows.h"
#include "../engine/gpu/src/forward/forward_check.h"  // the check itself, tested on the CPU

using namespace attnscope;
using nlohmann::json;

namespace {

using model_test::FamilyRow;
using model_test::kHiddenTol;
using model_test::kWeightTol;

// Declares `gpu`, a GpuForward made of the arguments, or skips the test with the reason where no GL 4.3 context
// starts (fails instead under ATTNSCOPE_REQUIRE_GPU=1), as ATTNSCOPE_REQUIRE_GPU does for the shared backend.
#define GPU_FORWARD_OR_SKIP(gpu, ...)                                                 \
  std::unique_ptr<GpuForward> gpu;                                                    \
  try {                                                                               \
    gpu = std::make_unique<GpuForward>(__VA_ARGS__);                                  \
  } catch (const GpuUnavailable& e) {                                                 \
    if (test::gpuRequired()) GTEST_FAIL() << "ATTNSCOPE_REQUIRE_GPU=1 but: " << e.what(); \
    GTEST_SKIP() << "no OpenGL 4.3 context: " << e.what();                            \
  }

struct Bars {
  double maps = kWeightTol, hidden = kHiddenTol;
};

// The GPU forward of `dir`'s checkpoint against expected.json and the CPU forward; `stored`: the dtype its
// weights are held in on the device ("float32", "bfloat16", "float16").
void expectGpuForwardMatches(const std::string& dir, const std::string& label, const std::string& stored,
                             const Bars& bars = {}) {
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  const model::Model m = model::loadModel(dir);
  const std::vector<int> ids = model_test::idsOf(expected);
  const int n = static_cast<int>(ids.size()), last = n - 1;
  GPU_FORWARD_OR_SKIP(gpu, m.weights);
  EXPECT_EQ(gpu->weightStorage(), stored);
  EXPECT_TRUE(gpu->warnings().empty());
  const model::ForwardOptions kept{.keep_ln1 = true, .maps = MapPolicy::Keep, .trace_position = last};
  const model::ForwardResult cpu = model::modelForward(m, ids, kept);
  const model::ForwardResult on_gpu = gpu->forward(ids, kept);
  ASSERT_TRUE(on_gpu.keepsMaps());
  const double maps = model_test::worstMap(on_gpu, expected);
  const double hidden = test::expectClose(on_gpu.hidden, test::jsonMatrix(expected["hidden"]), bars.hidden, "hidden");
  EXPECT_LE(maps, bars.maps);
  double apart = 0, ln1 = 0;
  for (int l = 0; l < m.layout().n_layer; ++l) {
    for (int h = 0; h < m.layout().n_head; ++h)
      apart = test::worse(apart, test::maxError(on_gpu.map(l, h), cpu.map(l, h), test::kMixed, "gpu vs cpu map"));
    ln1 =
        test::worse(ln1, test::expectClose(on_gpu.ln1[static_cast<std::size_t>(l)],
                                           cpu.ln1[static_cast<std::size_t>(l)], 2 * bars.hidden, "ln1", test::kMixed));
  }
  EXPECT_LE(apart, 2 * bars.maps);
  const double trace = test::expectClose(on_gpu.trace, cpu.trace, 2 * bars.hidden, "trace", test::kMixed);

  // Maps dropped: each layer's Q, K and row statistics, from which map() recomputes every weight.
  const model::ForwardResult dropped = gpu->forward(ids, {.keep_ln1 = false, .maps = MapPolicy::Drop});
  ASSERT_FALSE(dropped.keepsMaps());
  ASSERT_EQ(dropped.stats.size(), static_cast<std::size_t>(m.layout().n_layer));
  const double recomputed = model_test::worstMap(dropped, expected);
  EXPECT_LE(recomputed, bars.maps);
  test::expectClose(dropped.hidden, on_gpu.hidden, 1e-6, "hidden, maps dropped", test::kMixed);  // the same work
  std::printf(
      "[ %s ] GPU forward (%s) vs NumPy: maps %.2g, hidden %.2g, maps from statistics %.2g; vs CPU: maps "
      "%.2g, ln_1 %.2g, trace %.2g\n",
      label.c_str(), stored.c_str(), maps, hidden, recomputed, apart, ln1, trace);
  EXPECT_TRUE(gpu->warnings().empty()) << gpu->warnings().front();  // the run-time check silent on a right answer
}

// The dtype a row's script writes (--dtype BF16 / F16; float32 otherwise).
std::string storedOf(const std::string& args) {
  if (args.find("--dtype BF16") != std::string::npos) return "bfloat16";
  if (args.find("--dtype F16") != std::string::npos) return "float16";
  return "float32";
}

class GpuForwardFamilies : public ::testing::TestWithParam<FamilyRow> {};

TEST_P(GpuForwardFamilies, MatchesNumPyAndTheCpuForward) {
  const FamilyRow row = GetParam();
  expectGpuForwardMatches(model_test::checkpointOf(row), std::string(row.model_type) + " " + row.args,
                          storedOf(row.args));
}

INSTANTIATE_TEST_SUITE_P(Families, GpuForwardFamilies, ::testing::ValuesIn(model_test::kFamilyRows),
                         model_test::familyRowName);

// GPT-2's tiny checkpoint has random W_QK giving logits of tens: sharp maps, which amplify float32's rounding of the
// residual stream. The CPU forward's bars there (test_model_forward.cpp: 5e-5 on maps and hidden, seen 1.2e-5 and
// 1.5e-5); the GPU's seen: maps 2.5e-5, hidden 3.5e-5, so its hidden bar is doubled to 1e-4.
TEST(GpuForward, Gpt2MatchesNumPyAndTheCpuForward) {
  const Bars sharp{.maps = 5e-5, .hidden = 1e-4};
  expectGpuForwardMatches(model_test::tinyCheckpoint(), "gpt2", "float32", sharp);
  expectGpuForwardMatches(model_test::tinyCheckpoint("--dtype F16"), "gpt2 F16", "float16", sharp);
}

// What the GPU forward refuses, as the CPU forward does: no tokens, an id past the vocabulary, too many tokens, the
// CPU forward's interventions; and a stage that overflows float32 named as the CPU forward names it.
TEST(GpuForward, RefusesWhatTheCpuForwardRefuses) {
  std::mt19937 rng(3);
  model::Model m = test::randomGpt2({.layers = 2, .heads = 2, .d = 16, .vocab = 40, .positions = 24}, rng);
  GPU_FORWARD_OR_SKIP(gpu, m.weights);
  const auto refusal = [&](const std::vector<int>& ids, const model::ForwardOptions& o) -> std::string {
    try {
      (void)gpu->forward(ids, o);
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(refusal({}, {}), "tokens: expected 1 to 24 (n_positions), got 0");
  EXPECT_EQ(refusal({1, 40}, {}), "tokens[1]: expected an id below vocab_size 40, got 40");
  EXPECT_EQ(refusal(std::vector<int>(25, 1), {}), "tokens: expected 1 to 24 (n_positions), got 25");
  EXPECT_EQ(refusal({1, 2}, {.keep_residual = true}),
            "keep_residual: expected none on the GPU forward (the CPU forward's), got set");
  EXPECT_EQ(refusal({1, 2}, {.trace_position = 2}), "position: expected a token from 0 to 1, got 2");

  // Layer 2's attention output biased by 3e38: its ln_2 sums 16 such values, past float32's 3.4e38. The CPU
  // forward's message, word for word.
  m.weights.layers[1].b_o.setConstant(3e38f);
  GpuForward overflowing(m.weights);
  const std::vector<int> ids = {1, 2, 3, 4};
  std::string cpu_message, gpu_message;
  try {
    (void)model::modelForward(m, ids);
  } catch (const InputError& e) {
    cpu_message = e.what();
  }
  try {
    (void)overflowing.forward(ids);
  } catch (const InputError& e) {
    gpu_message = e.what();
  }
  EXPECT_NE(cpu_message.find("layer 2, ln_2, token 0"), std::string::npos) << cpu_message;
  EXPECT_EQ(gpu_message, cpu_message);
}

// ATTNSCOPE_GPU_FAULT=1 (the test aid: the last layer's last head's l doubled after the flash pass) is caught by the
// run-time check, with maps kept and dropped; the forward is then the CPU's, number for number.
TEST(GpuForward, RunTimeCheckCatchesAWrongLayerAndRecomputesOnTheCpu) {
  std::mt19937 rng(6);
  const model::Model m = test::randomGpt2(
      {.layers = 2, .heads = 3, .d = 24, .vocab = 50, .positions = 90, .random_norms_and_biases = true}, rng);
  std::vector<int> ids;
  for (int i = 0; i < 80; ++i) ids.push_back(static_cast<int>(rng() % 50));
  std::unique_ptr<GpuForward> gpu;
  {  // the backend reads ATTNSCOPE_GPU_FAULT when it is made: set for this one alone
    struct FaultSet {
      FaultSet() { ::setenv("ATTNSCOPE_GPU_FAULT", "1", 1); }
      ~FaultSet() { ::unsetenv("ATTNSCOPE_GPU_FAULT"); }
    } fault_set;
    GPU_FORWARD_OR_SKIP(faulty, m.weights);
    gpu = std::move(faulty);
  }
  for (const MapPolicy maps : {MapPolicy::Keep, MapPolicy::Drop}) {
    const model::ForwardResult cpu = model::modelForward(m, ids, {.maps = maps});
    const std::size_t before = gpu->warnings().size();
    const model::ForwardResult checked = gpu->forward(ids, {.maps = maps});
    ASSERT_EQ(gpu->warnings().size(), before + 1);
    const std::string& warning = gpu->warnings().back();
    EXPECT_NE(warning.find("at layer 2, head 3, query row"), std::string::npos) << warning;  // from 1: the last
    EXPECT_NE(warning.find(maps == MapPolicy::Keep ? "weights at key" : ": l is"), std::string::npos) << warning;
    EXPECT_NE(warning.find("recomputed on the CPU"), std::string::npos) << warning;
    EXPECT_EQ(test::maxError(checked.map(1, 2), cpu.map(1, 2), {}, "map"), 0.0);
    EXPECT_EQ(test::maxError(checked.hidden, cpu.hidden, {}, "hidden"), 0.0);
  }
  // Without the fault the check is silent (the other tests: every family, no warning).
  const model::Model clean = m;
  GpuForward healthy(clean.weights);
  (void)healthy.forward(ids);
  EXPECT_TRUE(healthy.warnings().empty()) << healthy.warnings().front();
}

// An embedding table larger than one device buffer may be is gathered on the CPU instead; the forward is the same.
TEST(GpuForward, GathersTheEmbeddingOnTheCpuWhenItsTableIsTooLargeForABuffer) {
  std::mt19937 rng(7);
  const model::Model m = test::randomGpt2(
      {.layers = 2, .heads = 2, .d = 16, .vocab = 2000, .positions = 40, .random_norms_and_biases = true}, rng);
  std::vector<int> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(static_cast<int>(rng() % 2000));
  GPU_FORWARD_OR_SKIP(on_device, m.weights);
  GPU_FORWARD_OR_SKIP(on_cpu, m.weights, GpuOptions{.max_buffer_bytes = 64 << 10});  // the table: 125 KiB
  EXPECT_TRUE(on_device->embeddingOnDevice());
  EXPECT_FALSE(on_cpu->embeddingOnDevice());
  const model::ForwardResult a = on_device->forward(ids, {.trace_position = 29}),
                             b = on_cpu->forward(ids, {.trace_position = 29});
  // The same sums in the same order (token row, then position row), one float32 rounding each: equal.
  EXPECT_EQ(test::maxError(a.trace.topRows(1), b.trace.topRows(1), {}, "embedding"), 0.0);
  EXPECT_EQ(test::maxError(a.hidden, b.hidden, {}, "hidden"), 0.0);
}

// The products' half of the run-time check (forward_check.h), on the CPU alone: a float32 product within its bound
// passes in either layout, written or added to what C held; one element off by 1% is named.
TEST(GpuForwardCheck, ProductCheckNamesOneWrongElement) {
  std::mt19937 rng(8);
  const Matrix a = test::randomMatrix(6, 300, 1.0f, rng), w = test::randomMatrix(20, 300, 0.1f, rng);
  const RowVector b = test::randomRow(20, 0.5f, rng);
  const Matrix before = test::randomMatrix(6, 20, 2.0f, rng);
  const std::vector<int> rows = {0, 2, 5}, cols = {1, 7, 19};
  for (const bool in_out : {false, true})
    for (const bool added : {false, true}) {
      const Matrix stored = in_out ? Matrix(w.transpose()) : w;  // (in, out) or (out, in)
      Matrix c(rows.size(), cols.size()), a_rows(rows.size(), 300), held(rows.size(), cols.size());
      for (std::size_t r = 0; r < rows.size(); ++r) {
        a_rows.row(static_cast<Eigen::Index>(r)) = a.row(rows[r]);
        for (std::size_t k = 0; k < cols.size(); ++k) {
          float sum = 0;  // float32, in order: what a GPU's sum may be
          for (int t = 0; t < 300; ++t) sum += a(rows[r], t) * w(cols[k], t);
          held(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(k)) = before(rows[r], cols[k]);
          c(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(k)) =
              (added ? before(rows[r], cols[k]) : 0.0f) + (sum + b[cols[k]]);
        }
      }
      const Matrix* was = added ? &held : nullptr;
      EXPECT_FALSE(gpu::checkProductRows(stored, in_out, &b, rows, cols, a_rows, c, was).has_value());
      c(1, 2) += 0.01f * (1.0f + std::fabs(c(1, 2)));  // the bound here: (300 + 2) eps32 sum |a w| ~ 1e-3
      const std::optional<std::string> caught = gpu::checkProductRows(stored, in_out, &b, rows, cols, a_rows, c, was);
      ASSERT_TRUE(caught.has_value());
      EXPECT_EQ(caught->rfind("row 2, column 19 is ", 0), 0u) << *caught;
    }
}

// A checkpoint whose weights do not fit the device's budget is refused before any upload, naming the bytes.
TEST(GpuForward, RefusesWeightsPastTheMemoryBudget) {
  std::mt19937 rng(4);
  const model::Model m = test::randomGpt2({.layers = 2, .heads = 2, .d = 16, .vocab = 40, .positions = 24}, rng);
  try {
    GpuForward gpu(m.weights, {.memory_budget_bytes = 1024});
    ADD_FAILURE() << "uploaded past a 1 KiB budget";
  } catch (const GpuUnavailable& e) {
    if (test::gpuRequired()) GTEST_FAIL() << e.what();
    GTEST_SKIP() << e.what();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("gpu memory: expected at most 0 MiB (GpuOptions::memory_budget_bytes)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
