// The analysis of a result without maps (MapPolicy::Drop: weights recomputed through tiles) against double
// references written out here from the scene's inputs: head-type scores, importance and a cell's weight, on a
// causal, padded scene of repeated tokens (so induction and duplicate-token rows exist). The kept-map result
// is held to the same references, so both paths give today's numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/presets.h"
#include "compare.h"  // first: it includes Eigen as types.h does
#include "compute/reference_rows.h"

namespace attnscope {
namespace {

using test::MatrixD;
using test::referenceRows;

// 300 tokens (150 repeated), causal, keys 7 and 200 padded, 3 heads.
Scene streamedScene() {
  RepeatedTokensSpec spec;
  spec.length = 150;
  spec.vocab = 400;
  spec.heads = 3;
  spec.d_model = 24;
  spec.seed = 5;
  Scene s = makeRepeatedTokensScene(spec);
  s.mask = MaskKind::Causal;
  s.key_padding.assign(static_cast<std::size_t>(s.nK()), 0);
  s.key_padding[7] = s.key_padding[200] = 1;
  return s;
}

bool allowed(const Scene& s, int i, int j) { return j <= i && !s.key_padding[static_cast<std::size_t>(j)]; }

// The six scores by their definitions (docs/cli.md, "Head-type scores") from double weights w (n, n): every row with
// more than one allowed key; tokens compared as strings; the local window 2.
std::vector<std::optional<double>> referenceScores(const Scene& s, const MatrixD& w) {
  const int n = static_cast<int>(w.rows());
  double sums[6] = {};
  int counts[6] = {};
  auto add = [&](int k, double x) {
    sums[k] += x;
    ++counts[k];
  };
  for (int i = 0; i < n; ++i) {
    int keys = 0;
    for (int j = 0; j < n; ++j) keys += allowed(s, i, j);
    if (keys <= 1) continue;
    if (i >= 1) add(0, w(i, i - 1));
    add(1, w(i, i));
    add(2, w(i, 0));
    double near = 0;
    for (int j = 0; j < n; ++j)
      if (std::abs(i - j) <= 2) near += w(i, j);
    add(3, near);
    int latest = -1;
    double dup = 0;
    for (int j = 0; j < i; ++j)
      if (s.query_tokens[static_cast<std::size_t>(j)] == s.query_tokens[static_cast<std::size_t>(i)]) {
        dup += w(i, j);
        latest = j;
      }
    if (latest < 0) continue;
    add(5, dup);
    if (latest + 1 < n) add(4, w(i, latest + 1));
  }
  std::vector<std::optional<double>> scores;
  for (int k = 0; k < 6; ++k) scores.push_back(counts[k] ? std::optional<double>(sums[k] / counts[k]) : std::nullopt);
  return scores;
}

// Zero-ablation importance of head h: || O_h W_O[rows of head h] ||_F with O_h = w V_h in double.
double referenceImportance(const Scene& s, int head, const MatrixD& w) {
  const HeadParams& p = s.heads[static_cast<std::size_t>(head)];
  const MatrixD v = s.valueRows().cast<double>() * p.w_v.cast<double>();
  int offset = 0;
  for (int h = 0; h < head; ++h) offset += s.dV(h);
  const MatrixD w_o = s.w_o->cast<double>().middleRows(offset, s.dV(head));
  return (w * v * w_o).norm();
}

struct Computed {
  std::string name;
  Result result;
};

TEST(StreamedAnalysis, ScoresImportanceAndCellsWithoutMapsMatchDoubleReferences) {
  const Scene s = streamedScene();
  const int n = s.nQ();
  std::vector<Computed> results;
  ComputeOptions keep, drop;
  drop.maps = MapPolicy::Drop;
  results.push_back({"kept maps", CpuBackend(2).compute(s, keep)});
  results.push_back({"no maps", CpuBackend(2).compute(s, drop)});
  ASSERT_TRUE(results[0].result.heads[0].hasMap());
  ASSERT_FALSE(results[1].result.heads[0].hasMap());  // the streamed path ran

  std::vector<MatrixD> reference;
  for (int h = 0; h < s.numHeads(); ++h) reference.push_back(referenceRows(s, h, 0, n));

  for (const Computed& c : results) {
    SCOPED_TRACE(c.name);
    // float32 weights summed in double against double weights: largest error seen 3.2e-9 (scores), 1.5e-6
    // (importance, float32 outputs times W_O), 1.8e-9 (one weight); the same with and without maps.
    const std::vector<HeadTypeScores> scores = allHeadTypeScores(s, c.result);
    const std::vector<double> importance = headImportance(s, c.result, AblationMode::Zero);
    double worst_score = 0, worst_importance = 0, worst_cell = 0;
    for (int h = 0; h < s.numHeads(); ++h) {
      const std::vector<std::optional<double>> want = referenceScores(s, reference[static_cast<std::size_t>(h)]);
      for (int k = 0; k < 6; ++k) {
        const std::optional<double> got = headTypeScore(scores[static_cast<std::size_t>(h)], headTypeScoreNames()[k]);
        ASSERT_EQ(got.has_value(), want[static_cast<std::size_t>(k)].has_value()) << h << " " << k;
        ASSERT_TRUE(got.has_value());  // this scene has rows for every score
        worst_score = test::worse(worst_score, test::valueError(*got, *want[static_cast<std::size_t>(k)]));
      }
      worst_importance = test::worse(
          worst_importance, test::valueError(importance[static_cast<std::size_t>(h)],
                                             referenceImportance(s, h, reference[static_cast<std::size_t>(h)])));
      // An allowed cell, a padded key and a key after the query (causal): the breakdown's engine weight.
      for (const auto& [i, j] : {std::pair{250, 100}, std::pair{250, 7}, std::pair{250, 251}, std::pair{299, 200}}) {
        const CellBreakdown b = scoreBreakdown(s, c.result, h, i, j);
        EXPECT_EQ(b.masked, !allowed(s, i, j)) << i << "," << j;
        worst_cell =
            test::worse(worst_cell, test::valueError(b.engine_weight, reference[static_cast<std::size_t>(h)](i, j)));
        worst_cell = test::worse(worst_cell, test::valueError(b.weight, reference[static_cast<std::size_t>(h)](i, j)));
      }
    }
    EXPECT_LT(worst_score, 3e-8) << worst_score;
    EXPECT_LT(worst_importance, 1e-5) << worst_importance;
    EXPECT_LT(worst_cell, 2e-8) << worst_cell;
    std::printf("%s: scores %.2g, importance %.2g, cells %.2g\n", c.name.c_str(), worst_score, worst_importance,
                worst_cell);
  }
}

TEST(StreamedAnalysis, PitfallsNeedTheMaps) {
  const Scene s = streamedScene();
  ComputeOptions drop;
  drop.maps = MapPolicy::Drop;
  const Result r = CpuBackend(1).compute(s, drop);
  EXPECT_THROW(applyPitfall(s, r, Pitfall::NoScale), InputError);
}

}  // namespace
}  // namespace attnscope
