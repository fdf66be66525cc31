// The run-time check of a (GPU) result against the CPU on sampled query rows (compute/sampled_check.h), on CPU
// results: the rows it samples, no mismatch on a right result, and a wrong number named by head, row and column
// with its error worked out here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/sampled_check.h"
#include "attnscope/scene/presets.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/scene/scene_edit.h"

using namespace attnscope;

namespace {

Scene causalScene(int n) {
  return makeRandomScene({.n = n, .heads = 3, .d_model = 12, .d_k = 4, .d_v = 5, .causal = true, .seed = 3});
}

}  // namespace

TEST(SampledCheck, RowsAreFirstLastAndOnePerStratum) {
  const std::vector<int> rows = sampledQueryRows(100, 7);
  ASSERT_EQ(rows.size(), 34u);
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), 99);
  // Rows 1..98 (98 of them) in 32 strata: stratum s covers [1 + floor(98 s / 32), 1 + floor(98 (s + 1) / 32)).
  for (int s = 0; s < 32; ++s) {
    const int lo = 1 + 98 * s / 32, hi = 1 + 98 * (s + 1) / 32;
    EXPECT_GE(rows[static_cast<std::size_t>(s + 1)], lo) << "stratum " << s;
    EXPECT_LT(rows[static_cast<std::size_t>(s + 1)], hi) << "stratum " << s;
  }
  EXPECT_EQ(sampledQueryRows(34, 1).size(), 34u);  // up to 34 rows: every row
  EXPECT_EQ(sampledQueryRows(1, 1), std::vector<int>{0});
  EXPECT_NE(sampledQueryRows(1000, 1), sampledQueryRows(1000, 2));  // another seed, other rows
}

TEST(SampledCheck, ARightResultPasses) {
  // The CPU's full result against the CPU's rows: the same arithmetic but for the thread split and GEMM blocking
  // of a 34-row scene: float32 differences of ~1e-7 against a tolerance of at least 1e-4, so a ratio under 0.05.
  for (const Scene& scene : {causalScene(20), causalScene(300), workedExampleScene()}) {
    const Result result = CpuBackend(2).compute(scene);
    double ratio = -1;
    EXPECT_FALSE(checkSampledRows(scene, result, 5, &ratio).has_value());
    EXPECT_LT(ratio, 0.05);
  }
  // The flash kind of result (no maps: outputs, m and l only) and grouped heads with rope and positions.
  Scene grouped = causalScene(90);
  setKvHeadCount(grouped, 1);
  grouped.rope = SceneRope{10000.0, 4};
  for (int i = 0; i < 90; ++i) grouped.query_positions.push_back(3 + 2 * i), grouped.key_positions.push_back(1 + 2 * i);
  const Result flash = CpuBackend(2).compute(grouped, {.keep_scores = false, .analysis = false, .maps = MapPolicy::Drop});
  ASSERT_FALSE(flash.heads[0].hasMap());
  double ratio = -1;
  EXPECT_FALSE(checkSampledRows(grouped, flash, 9, &ratio).has_value());
  EXPECT_LT(ratio, 0.05);
}

TEST(SampledCheck, AWrongWeightIsNamedWithItsError) {
  const Scene scene = causalScene(20);  // 20 rows: every row is sampled
  Result result = CpuBackend(2).compute(scene);
  const float right = result.heads[2].weights(13, 4);
  result.heads[2].weights(13, 4) = right + 0.01f;
  const auto mismatch = checkSampledRows(scene, result, 1);
  ASSERT_TRUE(mismatch.has_value());
  EXPECT_EQ(mismatch->head, 2);
  EXPECT_EQ(mismatch->row, 13);
  EXPECT_EQ(mismatch->what, "weights");
  EXPECT_EQ(mismatch->column, 4);
  // 0.01 / (1 + w) on the mixed scale, w the right weight (float addition: within 1e-8 of 0.01).
  EXPECT_NEAR(mismatch->error, 0.01 / (1 + right), 1e-6);
  EXPECT_NE(mismatch->text().find("head 2, query row 13: weights at key 4"), std::string::npos) << mismatch->text();
}

TEST(SampledCheck, NonFiniteAndRowStatisticsAreCaught) {
  const Scene scene = causalScene(300);
  const std::vector<int> rows = sampledQueryRows(300, 4);
  const int row = rows[10];
  {
    Result result = CpuBackend(2).compute(scene);
    result.output(row, 2) = std::numeric_limits<float>::quiet_NaN();
    const auto mismatch = checkSampledRows(scene, result, 4);
    ASSERT_TRUE(mismatch.has_value());
    EXPECT_EQ(mismatch->head, -1);
    EXPECT_EQ(mismatch->row, row);
    EXPECT_EQ(mismatch->what, "output");
    EXPECT_TRUE(std::isinf(mismatch->error));
  }
  {  // l doubled on a result without maps: every weight of the row, as tiles give them, would halve
    Result result = CpuBackend(2).compute(scene, {.keep_scores = false, .analysis = false, .maps = MapPolicy::Drop});
    const double l = result.heads[1].row_sum[row];
    result.heads[1].row_sum[row] *= 2;
    const auto mismatch = checkSampledRows(scene, result, 4);
    ASSERT_TRUE(mismatch.has_value());
    EXPECT_EQ(mismatch->head, 1);
    EXPECT_EQ(mismatch->what, "l");
    EXPECT_NEAR(mismatch->error, l / (1 + l), 1e-6 * l);  // |2l - l| / (1 + l)
  }
  {  // an unsampled row is not looked at: the cost is the sample's
    Result result = CpuBackend(2).compute(scene);
    int unsampled = 1;
    while (std::find(rows.begin(), rows.end(), unsampled) != rows.end()) ++unsampled;
    result.heads[0].weights(unsampled, 0) += 0.5f;
    EXPECT_FALSE(checkSampledRows(scene, result, 4).has_value());
  }
}
