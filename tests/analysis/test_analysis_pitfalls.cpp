// The seed pitfalls against an independent NumPy version of each mistaken computation
// (tests/analysis_pitfall_reference.py) and against hand formulas on the hand-built heads.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/analysis_test_scenes.h"
#include "attnscope/analysis/analysis.h"
#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/scene/presets.h"
#include "attnscope/scene/scene_json.h"
#include "command_support.h"
#include "compare.h"

namespace attnscope {
namespace {

nlohmann::json numpyReference(const Scene& scene, const std::string& pitfall) {
  // A folder of this call's own: ctest runs tests as parallel processes, which must not share a file.
  std::string pattern = ::testing::TempDir() + "attnscope_pitfall_XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot make a temporary folder from " + pattern);
  const std::string scene_path = pattern + "/scene.json", out_path = pattern + "/out.json";
  saveSceneFile(scene, scene_path);
  const std::string command = "/usr/bin/python3 '" ATTNSCOPE_SOURCE_DIR "/tests/analysis/analysis_pitfall_reference.py' '" +
                              scene_path + "' " + pitfall + " >'" + out_path + "'";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("the NumPy reference failed: " + command);
  std::ifstream in(out_path);
  const nlohmann::json reference = nlohmann::json::parse(in);
  std::filesystem::remove_all(pattern);
  return reference;
}

Scene pitfallScene() {
  RandomSceneSpec spec;
  spec.n = 6;
  spec.heads = 3;
  spec.d_model = 12;
  spec.d_k = 6;  // per-head 6, full width 18, d_model 12: three different scales
  spec.causal = true;
  spec.seed = 5;
  Scene scene = makeRandomScene(spec);
  for (Eigen::Index i = 0; i < scene.query.size(); ++i) scene.query.data()[i] *= 3.0f;  // sharp enough to matter
  scene.heads[0].b_q = RowVector::Constant(6, 0.5f);
  scene.b_o = RowVector::Constant(12, -0.25f);
  scene.key_padding = {0, 0, 0, 0, 0, 1};
  return scene;
}

TEST(Pitfalls, EachAgainstNumPy) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  Scene scene = pitfallScene();
  const Result correct = CpuBackend(1).compute(scene);
  double worst_weight = 0, worst_output = 0, worst_entropy = 0;
  for (const PitfallInfo& info : pitfallList()) {
    const PitfallResult r = applyPitfall(scene, correct, info.pitfall);
    const nlohmann::json want = numpyReference(scene, info.name);
    ASSERT_EQ(r.weights.size(), 3u);
    ASSERT_EQ(r.weight_diff.size(), 3u);
    ASSERT_EQ(r.entropy.size(), 3u);
    ASSERT_EQ(want["weights"].size(), 3u);
    for (int h = 0; h < 3; ++h) {
      const Eigen::MatrixXd w = test::jsonMatrix(want["weights"][h]);
      worst_weight = test::worse(worst_weight, test::maxError(r.weights[h], w, {}, info.name));
      const Eigen::MatrixXd diff = w - correct.heads[h].weights.cast<double>();
      test::expectClose(r.weight_diff[h], diff, 2e-6, std::string(info.name) + " weight_diff");
      worst_entropy = test::worse(worst_entropy, test::valueError(r.entropy[h], want["entropy"][h].get<double>()));
    }
    ASSERT_TRUE(r.output.has_value()) << info.name << ": " << r.note;
    worst_output = test::worse(worst_output, test::maxError(*r.output, test::jsonMatrix(want["output"]), {}, info.name));
    if (info.pitfall != Pitfall::ReshapeDkForDv) {
      EXPECT_GT(r.max_abs_weight_diff[0], 1e-3) << info.name;
    }
  }
  // Seen: weights 4.2e-7, outputs 2.1e-6, entropy 1.3e-7 (the engine's float32 Q, K, V against NumPy's float64
  // projections of the same float32 inputs).
  std::printf("pitfalls vs NumPy: weights %.2g, output %.2g, entropy %.2g\n", worst_weight, worst_output,
              worst_entropy);
  EXPECT_LT(worst_weight, 2e-6);
  EXPECT_LT(worst_output, 1e-5);
  EXPECT_LT(worst_entropy, 1e-6);
}

TEST(Pitfalls, ReshapeFailsWhenDvDiffersAndIsInvisibleOtherwise) {
  Scene scene = pitfallScene();
  const Result same = CpuBackend(1).compute(scene);
  const PitfallResult r = applyPitfall(scene, same, Pitfall::ReshapeDkForDv);
  EXPECT_EQ(r.max_abs_output_diff, 0.0);  // d_k = d_v: the same numbers
  EXPECT_NE(r.note.find("no effect"), std::string::npos);
  for (HeadParams& p : scene.heads) p.w_v = p.w_v.leftCols(4).eval();
  scene.w_o = scene.w_o->topRows(12).eval();
  const Result narrow = CpuBackend(1).compute(scene);
  const PitfallResult fails = applyPitfall(scene, narrow, Pitfall::ReshapeDkForDv);
  EXPECT_FALSE(fails.output.has_value());
  EXPECT_NE(fails.note.find("fails"), std::string::npos) << fails.note;
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  EXPECT_TRUE(numpyReference(scene, "reshape_dk_for_dv")["output"].is_null());
}

TEST(Pitfalls, HandFormulas) {
  // The hand heads (analysis_test_scenes.h) with the scene's scale override removed, so the correct scale is
  // 1/sqrt(4) = 1/2 and head 1 (current-token, score s = 2 before scaling) puts e^1 / (e^1 + 3) on its diagonal.
  Scene scene = test::handHeadsScene();
  scene.scale.reset();
  const Result correct = CpuBackend(1).compute(scene);
  auto peak = [](double score) { return std::exp(score) / (std::exp(score) + 3); };
  EXPECT_NEAR(correct.heads[1].weights(2, 2), peak(1.0), 1e-6);
  // Full width: 1/sqrt(16) -> score 0.5.
  EXPECT_NEAR(applyPitfall(scene, correct, Pitfall::ScaleFullWidth).weights[1](2, 2), peak(0.5), 1e-6);
  // d_model = 4 = d_k: the same scale, no effect.
  const PitfallResult dmodel = applyPitfall(scene, correct, Pitfall::ScaleDModel);
  EXPECT_NE(dmodel.note.find("no effect"), std::string::npos);
  EXPECT_LT(dmodel.max_abs_weight_diff[1], 1e-6);
  // No scale -> score 2.
  const PitfallResult none = applyPitfall(scene, correct, Pitfall::NoScale);
  EXPECT_NEAR(none.weights[1](2, 2), peak(2.0), 1e-6);
  // Entropy of head 1's rows (one at p, three at (1 - p)/3): -p ln p - (1 - p) ln((1 - p)/3); sharper with no scale.
  auto entropy = [](double p) { return -p * std::log(p) - (1 - p) * std::log((1 - p) / 3); };
  EXPECT_NEAR(none.entropy[1], entropy(peak(2.0)), 1e-6);
  EXPECT_NEAR(none.correct_entropy[1], entropy(peak(1.0)), 1e-6);
  // Softmax over queries: head 2 (first-token) scores s/2 = 1 in column 0 for every query, 0 elsewhere: every
  // column is uniform over the 4 queries.
  const PitfallResult axis = applyPitfall(scene, correct, Pitfall::SoftmaxQueryAxis);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(axis.weights[2](i, j), 0.25, 1e-7);
  EXPECT_NEAR(axis.entropy[2], std::log(4.0), 1e-7);
  // Mask ignored: with a causal mask, query 0 of the uniform head attends 4 keys instead of 1.
  scene.mask = MaskKind::Causal;
  const Result causal = CpuBackend(1).compute(scene);
  EXPECT_FLOAT_EQ(causal.heads[3].weights(0, 0), 1.0f);
  const PitfallResult ignored = applyPitfall(scene, causal, Pitfall::MaskIgnored);
  EXPECT_NEAR(ignored.weights[3](0, 0), 0.25, 1e-7);
  EXPECT_NEAR(ignored.weight_diff[3](0, 0), -0.75, 1e-7);
  EXPECT_NEAR(ignored.weights[3](0, 3), 0.25, 1e-7);
}

// One entropy per head everywhere: the worked example under a causal mask, head 1. Row x1 has one allowed key
// (weight 1 by construction) and is left out, as in the heads' statistics. By hand (NumPy float64 agrees):
// row x2 = softmax([1, 0] / sqrt 2) = [0.66976, 0.33024], entropy 0.6343474; row x3 = [0.248255, 0.248255,
// 0.503490], entropy 1.0372774; mean 0.8358124 (0.5572083 if x1's 0 were counted). Head 2's x3 row is uniform
// (ln 3): mean 0.8664798. Mask ignored, head 1's rows weigh 3 keys each: 1.0533630 twice and 1.0372774, mean
// 1.0480011.
TEST(Pitfalls, EntropyIsTheStatisticsEntropy) {
  Scene scene = workedExampleScene();
  scene.mask = MaskKind::Causal;
  const Result causal = CpuBackend(1).compute(scene);
  const PitfallResult r = applyPitfall(scene, causal, Pitfall::ScaleFullWidth);
  // float32 weights (relative error ~6e-8) through w ln w: under 1e-7 per row; the hand values are rounded to 5e-8.
  EXPECT_NEAR(r.correct_entropy[0], 0.8358124, 1e-6);
  EXPECT_NEAR(causal.stats[0].entropy, 0.8358124, 1e-6);
  EXPECT_NEAR(r.correct_entropy[1], 0.8664798, 1e-6);
  EXPECT_NEAR(applyPitfall(scene, causal, Pitfall::MaskIgnored).entropy[0], 1.0480011, 1e-6);
}

TEST(Pitfalls, NamesAndErrors) {
  EXPECT_EQ(pitfallList().size(), 6u);
  for (const PitfallInfo& p : pitfallList()) {
    EXPECT_EQ(parsePitfall(p.name), p.pitfall);
    EXPECT_STRNE(p.source, "");
  }
  try {
    parsePitfall("scale_wrong");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "pitfall");
  }
}

}  // namespace
}  // namespace attnscope
