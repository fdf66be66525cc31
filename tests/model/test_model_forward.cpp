// The GPT-2 forward against an independent NumPy forward (tests/model/gpt2_reference.py, float64) on tiny
// random checkpoints stored as F32, F16 and BF16, with and without the "transformer." prefix; the rollout
// against NumPy's; and every layer opened as a scene, computed by the ordinary CpuBackend, against the
// forward's own maps.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/model/forward.h"
#include "attnscope/model/model.h"
#include "attnscope/model/safetensors.h"
#include "compare.h"
#include "model/test_model_support.h"

using attnscope::Matrix;
using nlohmann::json;
namespace model = attnscope::model;

namespace {

// float32 forward vs float64 NumPy on the same stored weights (d = 32, 3 layers, 4 heads, 24 tokens; the
// random W_QK make logits of tens, so sharp maps, which amplify float32's rounding of the residual stream).
// Largest errors seen over the cases below: weights 1.2e-5, hidden 1.5e-5, rollout 7e-7 (with the scale
// folded into Q before the product; 1.3e-5, 1.2e-5, 7.3e-7 with it after).
constexpr double kWeightTol = 5e-5, kHiddenTol = 5e-5, kRolloutTol = 5e-6;
// The scene through CpuBackend vs the forward, both float32 with different summation orders: seen 9.5e-7.
constexpr double kSceneTol = 2e-6;

using attnscope::test::worse;

// Largest |got - want| against a NumPy matrix; shapes asserted, a non-finite value an infinite error.
double maxDiff(const Matrix& got, const json& want, const std::string& what) {
  return attnscope::test::maxError(got, attnscope::test::jsonMatrix(want), {}, what);
}

class ModelForward : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelForward, MatchesNumPyReference) {
  const std::string dir = model_test::tinyCheckpoint(GetParam());
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  const model::Model ck = model::loadModel(dir);
  const model::Architecture& c = ck.architecture();
  ASSERT_EQ(c.n_layer, static_cast<int>(expected["weights"].size()));
  ASSERT_EQ(c.n_head, static_cast<int>(expected["weights"][0].size()));
  const std::vector<int> ids = expected["ids"].get<std::vector<int>>();
  const model::ForwardResult f = model::modelForward(ck, ids);
  ASSERT_EQ(f.n, static_cast<int>(ids.size()));
  double worst_w = 0;
  for (int l = 0; l < c.n_layer; ++l)
    for (int h = 0; h < c.n_head; ++h) {
      const Matrix m = f.map(l, h);
      ASSERT_EQ(m.rows(), f.n);
      ASSERT_EQ(m.cols(), f.n);
      worst_w = worse(worst_w, maxDiff(m, expected["weights"][l][h], "weights"));
      for (int i = 0; i < f.n; ++i)
        for (int j = i + 1; j < f.n; ++j) ASSERT_EQ(m(i, j), 0.0f) << "causal: exactly 0 past the query";
    }
  // Shapes: the final hidden states (n, n_embd), the rollout (n, n); maxDiff also checks them against NumPy's.
  ASSERT_EQ(f.hidden.rows(), f.n);
  ASSERT_EQ(f.hidden.cols(), c.hidden);
  const Matrix rollout = model::attentionRollout(f, ck.layout());
  ASSERT_EQ(rollout.rows(), f.n);
  ASSERT_EQ(rollout.cols(), f.n);
  const double worst_h = maxDiff(f.hidden, expected["hidden"], "hidden");
  const double worst_r = maxDiff(rollout, expected["rollout"], "rollout");
  std::printf("[ %s ] max |error|: weights %.2g, hidden %.2g, rollout %.2g\n", GetParam(), worst_w, worst_h, worst_r);
  EXPECT_LT(worst_w, kWeightTol);
  EXPECT_LT(worst_h, kHiddenTol);
  EXPECT_LT(worst_r, kRolloutTol);

  // The same forward with each layer's attention computed by a backend, as the GPU engine does it (each layer
  // a scene): the same NumPy numbers.
  attnscope::CpuBackend attention_backend;
  const model::ForwardResult fb = model::modelForward(ck, ids, {.attention = &attention_backend});
  double worst_bw = 0;
  for (int l = 0; l < c.n_layer; ++l)
    for (int h = 0; h < c.n_head; ++h)
      worst_bw = worse(worst_bw, maxDiff(fb.map(l, h), expected["weights"][l][h], "backend weights"));
  EXPECT_LT(worst_bw, kWeightTol);
  EXPECT_LT(maxDiff(fb.hidden, expected["hidden"], "backend hidden"), kHiddenTol);

  // Each layer as a scene, through the ordinary engine.
  std::vector<std::string> labels;
  for (int id : ids) labels.push_back(ck.tokenizer.label(id));
  attnscope::CpuBackend cpu;
  double worst_s = 0;
  for (int l = 0; l < c.n_layer; ++l) {
    const attnscope::Scene s = model::modelLayerScene(ck, f, l, labels, "layer " + std::to_string(l));
    attnscope::validateScene(s);
    EXPECT_EQ(s.mask, attnscope::MaskKind::Causal);
    EXPECT_FLOAT_EQ(s.headScale(0), 1.0f / std::sqrt(static_cast<float>(c.hidden / c.n_head)));
    const attnscope::Result r = cpu.compute(s);
    ASSERT_EQ(r.heads.size(), static_cast<std::size_t>(c.n_head));
    for (int h = 0; h < c.n_head; ++h)
      worst_s = worse(worst_s, attnscope::test::maxError(r.heads[static_cast<std::size_t>(h)].weights,
                                                         f.map(l, h), {}, "layer scene weights"));
  }
  std::printf("[ %s ] layer scenes vs forward: %.2g\n", GetParam(), worst_s);
  EXPECT_LT(worst_s, kSceneTol);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ModelForward,
                         ::testing::Values("--dtype F32", "--dtype F16 --no-prefix", "--dtype BF16 --seed 7",
                                           "--dtype F32 --layers 2 --heads 2 --embd 16 --tokens 40 --positions 40",
                                           // past attendHead's 128-row blocks: three blocks, the last partial
                                           "--dtype F32 --layers 2 --heads 2 --embd 16 --tokens 300 --positions 300"));

TEST(ModelForward, RejectsTooManyTokensAndBadIds) {
  const std::string dir = model_test::tinyCheckpoint("--positions 8 --tokens 8");
  const model::Model ck = model::loadModel(dir);
  EXPECT_THROW(model::modelForward(ck, std::vector<int>(9, 1)), attnscope::InputError);
  EXPECT_THROW(model::modelForward(ck, {}), attnscope::InputError);
  EXPECT_THROW(model::modelForward(ck, {1, ck.architecture().vocab_size}), attnscope::InputError);
  EXPECT_NO_THROW(model::modelForward(ck, std::vector<int>(8, 1)));
  // The budget: 3 layers x 4 heads x 8 x 8 maps alone are 3 KiB.
  EXPECT_THROW(model::modelForward(ck, std::vector<int>(8, 1), {}, 1024), attnscope::InputError);
  EXPECT_THROW(model::loadModel(dir, 1024), attnscope::InputError);
}

// The window's progress bar and Cancel: the callback sees layers 1, 2, 3 in order; returning false after layer 2
// stops the forward there (layer 3 never runs) with ForwardCancelled.
TEST(ModelForward, ProgressPerLayerAndCancel) {
  const std::string dir = model_test::tinyCheckpoint("--positions 8 --tokens 8");
  const model::Model ck = model::loadModel(dir);
  ASSERT_EQ(ck.architecture().n_layer, 3);
  std::vector<int> seen;
  model::ForwardOptions options;
  options.progress = [&](int done) {
    seen.push_back(done);
    return true;
  };
  EXPECT_NO_THROW(model::modelForward(ck, std::vector<int>(8, 1), options));
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
  seen.clear();
  options.progress = [&](int done) {
    seen.push_back(done);
    return done < 2;
  };
  EXPECT_THROW(model::modelForward(ck, std::vector<int>(8, 1), options), model::ForwardCancelled);
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
}

TEST(ModelRollout, HandWorkedTwoTokens) {
  // One layer, one head, map [[1, 0], [0.2, 0.8]]: A = 0.5 W + 0.5 I = [[1, 0], [0.1, 0.9]]; two layers:
  // A^2 = [[1, 0], [0.1 + 0.09, 0.81]] = [[1, 0], [0.19, 0.81]].
  model::ForwardResult f;
  Matrix w(2, 2);
  w << 1, 0, 0.2f, 0.8f;
  f.resize(2, 2);
  f.mutableMap(0) = w;
  f.mutableMap(1) = w;
  const Matrix r = model::attentionRollout(f, model::HeadLayout(2, 1, 1));
  EXPECT_NEAR(r(0, 0), 1.0, 1e-7);
  EXPECT_NEAR(r(0, 1), 0.0, 1e-7);
  EXPECT_NEAR(r(1, 0), 0.19, 1e-6);
  EXPECT_NEAR(r(1, 1), 0.81, 1e-6);
}

TEST(ModelSafetensors, HalfAndBfloat16Exact) {
  EXPECT_EQ(model::halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(model::halfToFloat(0xC000), -2.0f);
  EXPECT_EQ(model::halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(model::halfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(model::halfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(model::halfToFloat(0x3555), 0.333251953125f);  // 1365/4096
  EXPECT_TRUE(std::isinf(model::halfToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(model::halfToFloat(0x7E00)));
  EXPECT_EQ(model::bfloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(model::bfloat16ToFloat(0xC040), -3.0f);
  EXPECT_EQ(model::bfloat16ToFloat(0x3EAB), 0.333984375f);  // 171/512
}

}  // namespace
