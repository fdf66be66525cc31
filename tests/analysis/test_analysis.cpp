// The analysis engine against hand-worked numbers: head-type scores, ablation, the score breakdown, the A/B
// diff, the repeated-tokens preset and every bad index. Hand scenes in analysis_test_scenes.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "analysis/analysis_test_scenes.h"
#include "compare.h"
#include "attnscope/analysis/analysis.h"
#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/scene/presets.h"
#include "attnscope/scene/scene_json.h"

namespace attnscope {
namespace {

using test::handHeadsScene;
using test::handWeight;
using test::peakE;
using test::peakF;

// float32 weights from the engine against double formulas: largest error seen 8.4e-8
// (HeadTypes.HandHeadsScoreAsWorkedOut prints it).
constexpr double kTol = 1e-6;

Result cpuResult(const Scene& scene) { return CpuBackend(1).compute(scene); }

template <typename F>
void expectInputError(F&& f, const std::string& field) {
  try {
    f();
    ADD_FAILURE() << "no InputError for " << field;
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

// [SECTION] head-type scores

TEST(HeadTypes, HandHeadsScoreAsWorkedOut) {
  const Scene scene = handHeadsScene();
  const Result result = cpuResult(scene);
  double worst = 0;
  for (int h = 0; h < 4; ++h)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        ASSERT_NEAR(result.heads[h].weights(i, j), handWeight(h, i, j), kTol);
        worst = test::worse(worst, test::valueError(result.heads[h].weights(i, j), handWeight(h, i, j)));
      }
  std::printf("hand heads: largest weight error %.2g\n", worst);
  const double e = peakE(), f = peakF();
  const std::vector<HeadTypeScores> s = allHeadTypeScores(scene, result, 1);
  // head 0, previous-token: rows 1..3 put E on key i - 1.
  EXPECT_NEAR(*s[0].previous_token, e, kTol);
  EXPECT_NEAR(*s[0].current_token, (0.25 + 3 * f) / 4, kTol);
  EXPECT_NEAR(*s[0].first_token, (0.25 + e + 2 * f) / 4, kTol);
  EXPECT_NEAR(*s[0].local, (0.5 + 3 * e + 5 * f) / 4, kTol);
  // head 1, current-token.
  EXPECT_NEAR(*s[1].current_token, e, kTol);
  EXPECT_NEAR(*s[1].previous_token, f, kTol);
  EXPECT_NEAR(*s[1].first_token, (e + 3 * f) / 4, kTol);
  EXPECT_NEAR(*s[1].local, (4 * e + 6 * f) / 4, kTol);
  // head 2, first-token (sink).
  EXPECT_NEAR(*s[2].first_token, e, kTol);
  EXPECT_NEAR(*s[2].previous_token, (e + 2 * f) / 3, kTol);
  EXPECT_NEAR(*s[2].current_token, (e + 3 * f) / 4, kTol);
  // head 3, uniform over n = 4: 1/n on each key; local with w = 1 covers 2, 3, 3, 2 keys: 10/16.
  EXPECT_NEAR(*s[3].previous_token, 0.25, kTol);
  EXPECT_NEAR(*s[3].current_token, 0.25, kTol);
  EXPECT_NEAR(*s[3].first_token, 0.25, kTol);
  EXPECT_NEAR(*s[3].local, 10.0 / 16, kTol);
  // No token repeats: induction and duplicate-token have no rows to average.
  for (const HeadTypeScores& x : s) {
    EXPECT_FALSE(x.induction.has_value());
    EXPECT_FALSE(x.duplicate_token.has_value());
  }
  EXPECT_EQ(headTypeLabel(s[0]), "previous_token");
  EXPECT_EQ(headTypeLabel(s[1]), "current_token");
  EXPECT_EQ(headTypeLabel(s[2]), "first_token");
  EXPECT_EQ(headTypeLabel(s[3]), "");
}

TEST(HeadTypes, PeakedHeadsScoreOne) {
  // s = 40: E = 1 / (1 + 3 e^-40) = 1 - 1.3e-17, 1 in float.
  Scene scene = handHeadsScene();
  for (int h = 0; h < 3; ++h) scene.heads[h].w_q *= 20.0f;  // s = 2 -> 40
  const std::vector<HeadTypeScores> s = allHeadTypeScores(scene, cpuResult(scene));
  EXPECT_NEAR(*s[0].previous_token, 1.0, 1e-7);
  EXPECT_NEAR(*s[1].current_token, 1.0, 1e-7);
  EXPECT_NEAR(*s[2].first_token, 1.0, 1e-7);
}

Scene tokensOnly(const std::vector<std::string>& tokens) {
  Scene scene;
  scene.d_model = 1;
  scene.query_tokens = tokens;
  scene.query = Matrix::Zero(static_cast<int>(tokens.size()), 1);
  return scene;
}

TEST(HeadTypes, InductionAndDuplicateOnRepeatedTokens) {
  const Scene scene = tokensOnly({"a", "b", "c", "a", "b", "c"});
  // Rows 0..2 put all weight on key 0; rows 3..5 as given. Row i >= 3 repeats token i - 3, whose successor is
  // key i - 2.
  auto weights = [](const std::vector<std::vector<std::pair<int, float>>>& later) {
    Matrix w = Matrix::Zero(6, 6);
    for (int i = 0; i < 3; ++i) w(i, 0) = 1;
    for (int i = 0; i < 3; ++i)
      for (auto [j, x] : later[i]) w(3 + i, j) = x;
    return w;
  };
  const HeadTypeScores induction = headTypeScores(scene, weights({{{1, 1}}, {{2, 1}}, {{3, 1}}}));
  EXPECT_DOUBLE_EQ(*induction.induction, 1.0);
  EXPECT_DOUBLE_EQ(*induction.duplicate_token, 0.0);
  const HeadTypeScores duplicate = headTypeScores(scene, weights({{{0, 1}}, {{1, 1}}, {{2, 1}}}));
  EXPECT_DOUBLE_EQ(*duplicate.induction, 0.0);
  EXPECT_DOUBLE_EQ(*duplicate.duplicate_token, 1.0);
  // Row 3: 0.5 on key 1 (induction), 0.5 on key 0 (duplicate); row 4: 1 on key 2 (induction); row 5: 0.25 on key
  // 3 (induction), 0.75 on key 2 (duplicate): induction (0.5 + 1 + 0.25) / 3, duplicate (0.5 + 0 + 0.75) / 3.
  const HeadTypeScores mixed = headTypeScores(scene, weights({{{0, .5f}, {1, .5f}}, {{2, 1}}, {{3, .25f}, {2, .75f}}}));
  EXPECT_NEAR(*mixed.induction, 1.75 / 3, 1e-7);
  EXPECT_NEAR(*mixed.duplicate_token, 1.25 / 3, 1e-7);
}

TEST(HeadTypes, InductionUsesTheLatestEarlierOccurrence) {
  // "a a a": row 1's latest earlier a is key 0 (successor key 1); row 2's is key 1 (successor key 2, itself).
  // Duplicate-token sums every earlier a: row 1 w[1][0], row 2 w[2][0] + w[2][1].
  Matrix w(3, 3);
  w << 1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f;
  const HeadTypeScores s = headTypeScores(tokensOnly({"a", "a", "a"}), w);
  EXPECT_NEAR(*s.induction, (0.5 + 0.5) / 2, 1e-7);
  EXPECT_NEAR(*s.duplicate_token, (0.5 + 0.5) / 2, 1e-7);
}

TEST(HeadTypes, FullyMaskedRowsAndEmptySetsAreLeftOut) {
  Matrix w(2, 2);
  w << 0, 0, 0.25f, 0.75f;  // row 0 attends nothing
  const HeadTypeScores s = headTypeScores(tokensOnly({"a", "b"}), w, 0);
  EXPECT_DOUBLE_EQ(*s.first_token, 0.25);
  EXPECT_DOUBLE_EQ(*s.previous_token, 0.25);
  EXPECT_DOUBLE_EQ(*s.current_token, 0.75);
  EXPECT_DOUBLE_EQ(*s.local, 0.75);
  Matrix one(1, 1);
  one << 1;
  // One token: its row has a single key, weight 1 by construction, so it says nothing about the head and no
  // score has a row to average (test_single_key_rows.cpp).
  const HeadTypeScores single = headTypeScores(tokensOnly({"a"}), one);
  EXPECT_FALSE(single.previous_token.has_value());
  EXPECT_FALSE(single.current_token.has_value());
  EXPECT_FALSE(single.first_token.has_value());
}

TEST(HeadTypes, ScoreNamesAndErrors) {
  HeadTypeScores s;
  s.local = 0.5;
  EXPECT_EQ(headTypeScore(s, "local"), 0.5);
  EXPECT_EQ(headTypeScoreNames().size(), 6u);
  expectInputError([&] { headTypeScore(s, "sink"); }, "score");
  expectInputError([&] { headTypeScores(tokensOnly({"a"}), Matrix::Ones(1, 1), -1); }, "window");
}

// [SECTION] ablation

TEST(Ablation, AllHeadsButTheUniformOneByHand) {
  const Scene scene = handHeadsScene();
  const Result result = cpuResult(scene);
  const AblationResult ab = ablateHeads(scene, result, {2, 0, 1, 1}, AblationMode::Zero);
  EXPECT_EQ(ab.heads, (std::vector<int>{0, 1, 2}));
  // Left: head 3's 1/4 everywhere through W_O's identity block, plus b_O = 0.1.
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(ab.output(i, c), 0.35, kTol);
  // The change is minus the ablated heads' weights summed: row i, column j: -(w0 + w1 + w2)(i, j).
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    double norm2 = 0;
    for (int j = 0; j < 4; ++j) {
      const double c = -(handWeight(0, i, j) + handWeight(1, i, j) + handWeight(2, i, j));
      EXPECT_NEAR(ab.change(i, j), c, kTol);
      norm2 += c * c;
    }
    EXPECT_NEAR(ab.query_change[i], std::sqrt(norm2), kTol);
    total += norm2;
  }
  EXPECT_NEAR(ab.total_change, std::sqrt(total), kTol);
}

TEST(Ablation, ImportanceByHand) {
  const Scene scene = handHeadsScene();
  const Result result = cpuResult(scene);
  const double e = peakE(), f = peakF();
  const std::vector<double> zero = headImportance(scene, result, AblationMode::Zero);
  // Head 1's rows are a permutation of (E, F, F, F): each row's norm sqrt(E^2 + 3F^2), 4 rows.
  EXPECT_NEAR(zero[1], 2 * std::sqrt(e * e + 3 * f * f), kTol);
  // Head 3: rows of four 1/4, norm 1/2, 4 rows: sqrt(4 / 4) = 1.
  EXPECT_NEAR(zero[3], 1.0, kTol);
  const std::vector<double> mean = headImportance(scene, result, AblationMode::Mean);
  // Head 1's column means are (E + 3F) / 4 = 1/4 (E + 3F = 1): row change (1/4 - E, 1/4 - F x 3).
  EXPECT_NEAR(mean[1], 2 * std::sqrt((0.25 - e) * (0.25 - e) + 3 * (0.25 - f) * (0.25 - f)), kTol);
  // The uniform head equals its own mean: no change at all.
  EXPECT_NEAR(mean[3], 0.0, kTol);
}

TEST(Ablation, WithoutWOTheOutputIsTheConcat) {
  Scene scene = handHeadsScene();
  scene.w_o.reset();
  scene.b_o.reset();
  const Result result = cpuResult(scene);
  const AblationResult ab = ablateHeads(scene, result, {3}, AblationMode::Zero);
  ASSERT_EQ(ab.output.cols(), 16);
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 16; ++c)
      EXPECT_NEAR(ab.output(i, c), c >= 12 ? 0.0 : handWeight(c / 4, i, c % 4), kTol) << i << "," << c;
}

TEST(Ablation, BadSets) {
  const Scene scene = handHeadsScene();
  const Result result = cpuResult(scene);
  expectInputError([&] { ablateHeads(scene, result, {}, AblationMode::Zero); }, "ablate");
  expectInputError([&] { ablateHeads(scene, result, {4}, AblationMode::Zero); }, "ablate");
  expectInputError([&] { ablateHeads(scene, result, {-1}, AblationMode::Mean); }, "ablate");
  expectInputError([&] { parseAblationMode("half"); }, "ablation");
}

// [SECTION] score breakdown

TEST(Breakdown, HandCellStepByStep) {
  const Scene scene = handHeadsScene();
  const Result result = cpuResult(scene);
  // Head 0, query 2, key 1: q_2 = s e_2, k_1 = e_2, so the only non-zero term is t = 2, s * 1 = 2.
  const CellBreakdown b = scoreBreakdown(scene, result, 0, 2, 1);
  ASSERT_EQ(b.terms.size(), 4u);
  EXPECT_EQ(b.terms[0].t, 2);
  EXPECT_DOUBLE_EQ(b.terms[0].product, 2.0);
  for (int t = 1; t < 4; ++t) EXPECT_DOUBLE_EQ(b.terms[t].product, 0.0);
  EXPECT_EQ(b.terms[1].t, 0);  // zeros keep t order
  EXPECT_DOUBLE_EQ(b.dot, 2.0);
  EXPECT_DOUBLE_EQ(b.scale, 1.0);
  EXPECT_DOUBLE_EQ(b.score, 2.0);
  EXPECT_DOUBLE_EQ(b.row_max, 2.0);
  // exp(0) for key 1, exp(-2) for the other three.
  EXPECT_NEAR(b.exp_sum, 1 + 3 * std::exp(-2.0), 1e-15);
  EXPECT_NEAR(b.weight, peakE(), 1e-15);
  EXPECT_NEAR(b.engine_weight, peakE(), kTol);
  EXPECT_NEAR(b.row[0].exp, std::exp(-2.0), 1e-15);
  // Input side: q_2[t] = sum_d x_2[d] W_Q[d][t]: only d = 2, t = 2 is non-zero (1 * s).
  ASSERT_EQ(b.query_products.rows(), 4);
  EXPECT_FLOAT_EQ(b.query_products(2, 2), 2.0f);
  EXPECT_FLOAT_EQ(b.query_products.sum(), 2.0f);
  EXPECT_FLOAT_EQ(b.key_products(1, 2), 1.0f);  // x_1 = e_1 through W_K's shift: k_1 = e_2
}

// q and k worked out in double straight from the scene (X W + b), independent of both backends.
Eigen::RowVectorXd project(const Matrix& rows, int r, const Matrix& w, const std::optional<RowVector>& b) {
  Eigen::RowVectorXd x = rows.row(r).cast<double>() * w.cast<double>();
  if (b) x += b->cast<double>();
  return x;
}

// headImportance reads only each head's own output and W_O rows; ablateHeads recomputes the whole layer twice.
// Both must give the same number (seen: 4.4e-16 relative on this scene; double sums in another order).
TEST(Ablation, ImportanceEqualsAblatingEachHeadAlone) {
  for (const bool with_w_o : {true, false}) {
    RandomSceneSpec spec;
    spec.n = 9;
    spec.heads = 3;
    spec.d_model = 12;
    spec.d_v = 5;
    spec.with_w_o = with_w_o;
    spec.seed = 5;
    const Scene scene = makeRandomScene(spec);
    const Result result = cpuResult(scene);
    for (const AblationMode mode : {AblationMode::Zero, AblationMode::Mean}) {
      const std::vector<double> importance = headImportance(scene, result, mode);
      ASSERT_EQ(importance.size(), 3u);
      for (int h = 0; h < 3; ++h) {
        const double whole = ablateHeads(scene, result, {h}, mode).total_change;
        EXPECT_GT(whole, 0.01);
        EXPECT_NEAR(importance[static_cast<std::size_t>(h)], whole, 1e-12 * whole) << "head " << h;
      }
    }
  }
}

TEST(Breakdown, SumsToTheEngineScoreOnRandomScenes) {
  RandomSceneSpec spec;
  spec.n = 7;
  spec.heads = 3;
  spec.d_model = 12;
  spec.d_k = 5;
  spec.causal = true;
  spec.seed = 11;
  Scene scene = makeRandomScene(spec);
  scene.heads[1].b_q = RowVector::Constant(5, 0.3f);
  scene.heads[1].b_k = RowVector::Constant(5, -0.2f);
  const Result result = cpuResult(scene);
  double worst_score = 0, worst_weight = 0, worst_input = 0;
  for (int h = 0; h < 3; ++h)
    for (int i = 0; i < 7; ++i)
      for (int j = 0; j < 7; ++j) {
        const CellBreakdown b = scoreBreakdown(scene, result, h, i, j);
        const Eigen::RowVectorXd q = project(scene.query, i, scene.heads[h].w_q, scene.heads[h].b_q);
        const Eigen::RowVectorXd k = project(scene.query, j, scene.heads[h].w_k, scene.heads[h].b_k);
        std::set<int> seen;
        double sum = 0;
        for (std::size_t n = 0; n < b.terms.size(); ++n) {
          if (n > 0) {
            EXPECT_GE(std::abs(b.terms[n - 1].product), std::abs(b.terms[n].product));
          }
          seen.insert(b.terms[n].t);
          EXPECT_NEAR(b.terms[n].product, q[b.terms[n].t] * k[b.terms[n].t], 1e-5);
          sum += b.terms[n].product;
        }
        EXPECT_EQ(seen.size(), 5u);
        EXPECT_NEAR(sum, b.dot, 1e-12);
        EXPECT_NEAR(b.score, b.dot / std::sqrt(5.0), 1e-7);
        EXPECT_EQ(b.masked, j > i);
        if (j > i) {
          EXPECT_EQ(b.weight, 0.0);
          EXPECT_EQ(*b.engine_score, -std::numeric_limits<float>::infinity());
          continue;
        }
        worst_score = test::worse(worst_score, test::valueError(*b.engine_score, b.score));
        worst_weight = test::worse(worst_weight, test::valueError(b.engine_weight, b.weight));
        // q_i[t] = sum_d x_i[d] W_Q[d][t] + b_Q[t]
        const Eigen::RowVectorXd from_inputs =
            b.query_products.cast<double>().colwise().sum() + b.query_bias.cast<double>();
        worst_input = test::worse(worst_input, test::maxError(b.q, from_inputs, {}, "q from its inputs"));
      }
  // Seen: score 1.1e-7 (float GEMM against the double sum of the same float q, k), weight 4.5e-8, input 2.9e-7.
  EXPECT_LT(worst_score, 1e-6);
  EXPECT_LT(worst_weight, 1e-6);
  EXPECT_LT(worst_input, 1e-6);
  std::printf("breakdown vs engine: score %.2g, weight %.2g, input side %.2g\n", worst_score, worst_weight,
              worst_input);
}

TEST(Breakdown, RowWithMaskedKeys) {
  Scene scene = handHeadsScene();
  scene.mask = MaskKind::Causal;
  const Result result = cpuResult(scene);
  // Head 1, query 1: keys 0 and 1 open, score s on key 1, 0 on key 0: weight e^s / (e^s + 1).
  const CellBreakdown b = scoreBreakdown(scene, result, 1, 1, 1);
  EXPECT_TRUE(b.row[2].masked);
  EXPECT_TRUE(b.row[3].masked);
  EXPECT_EQ(b.row[3].exp, 0.0);
  EXPECT_NEAR(b.exp_sum, 1 + std::exp(-2.0), 1e-15);
  EXPECT_NEAR(b.weight, std::exp(2.0) / (std::exp(2.0) + 1), 1e-15);
  const CellBreakdown masked = scoreBreakdown(scene, result, 1, 1, 3);
  EXPECT_TRUE(masked.masked);
  EXPECT_EQ(masked.weight, 0.0);
}

TEST(Breakdown, BadIndices) {
  const Scene scene = handHeadsScene();
  const Result result = cpuResult(scene);
  expectInputError([&] { scoreBreakdown(scene, result, 4, 0, 0); }, "head");
  expectInputError([&] { scoreBreakdown(scene, result, -1, 0, 0); }, "head");
  expectInputError([&] { scoreBreakdown(scene, result, 0, 4, 0); }, "query");
  expectInputError([&] { scoreBreakdown(scene, result, 0, 0, -1); }, "key");
}

// [SECTION] A/B diff

TEST(Diff, HandWeights) {
  Result a, b;
  a.heads.resize(2);
  b.heads.resize(2);
  a.heads[0].weights.resize(2, 2);
  a.heads[0].weights << 1, 0, 0.5f, 0.5f;
  b.heads[0].weights.resize(2, 2);
  b.heads[0].weights << 0.25f, 0.75f, 0.5f, 0.5f;
  a.heads[1].weights = b.heads[1].weights = Matrix::Constant(2, 2, 0.5f);
  const std::vector<HeadDiff> d = diffResults(a, b);
  EXPECT_FLOAT_EQ(d[0].delta(0, 0), -0.75f);
  EXPECT_FLOAT_EQ(d[0].delta(0, 1), 0.75f);
  EXPECT_FLOAT_EQ(d[0].delta(1, 0), 0.0f);
  EXPECT_FLOAT_EQ(d[0].max_abs, 0.75f);
  EXPECT_EQ(d[0].row, 0);  // (0, 0) and (0, 1) tie: the first in row-major order
  EXPECT_EQ(d[0].col, 0);
  EXPECT_EQ(d[1].max_abs, 0.0f);
  Result c = b;
  c.heads.pop_back();
  expectInputError([&] { diffResults(a, c); }, "snapshot");
  c = b;
  c.heads[1].weights = Matrix::Zero(3, 2);
  expectInputError([&] { diffResults(a, c); }, "snapshot");
}

// [SECTION] the repeated random tokens preset

TEST(RepeatedTokens, SecondHalfRepeatsTheFirst) {
  RepeatedTokensSpec spec;
  spec.length = 5;
  spec.vocab = 20;
  spec.positions = false;
  spec.seed = 3;
  const Scene scene = makeRepeatedTokensScene(spec);
  ASSERT_EQ(scene.nQ(), 10);
  validateScene(scene);
  std::set<std::string> first_half;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(scene.query_tokens[i], scene.query_tokens[i + 5]);
    EXPECT_EQ(scene.query.row(i), scene.query.row(i + 5));
    first_half.insert(scene.query_tokens[i]);
  }
  EXPECT_EQ(first_half.size(), 5u);
  // With every token repeated once, induction and duplicate-token are defined on rows 5..9 only.
  const HeadTypeScores s = headTypeScores(scene, Matrix::Constant(10, 10, 0.1f));
  EXPECT_NEAR(*s.induction, 0.1, 1e-7);
  EXPECT_NEAR(*s.duplicate_token, 0.1, 1e-7);
  spec.vocab = 4;
  expectInputError([&] { makeRepeatedTokensScene(spec); }, "vocab");
}

}  // namespace
}  // namespace attnscope
