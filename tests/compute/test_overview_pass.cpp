// The one-pass overview (overviewRows: m, l and the max-pooled overview from q and k alone, no forward pass)
// against what the window drew before it, maxPooledRows over a forward pass's row statistics, and against a
// double reference (compute/reference_rows.h) on a 4096-token causal, padded scene.
#include "compare.h"  // first: it includes Eigen as types.h does

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/scene_rope.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/key_mask.h"
#include "compute/reference_rows.h"

namespace attnscope {
namespace {

using test::MatrixD;
using test::randomScene;
using test::referenceRows;

Scene maskedScene(int n, int heads, int variant) { return test::maskedScene(n, heads, variant, 60); }

Result forwardWithoutMaps(const Scene& s) {
  CpuBackend cpu(2);
  ComputeOptions drop;
  drop.maps = MapPolicy::Drop;
  drop.analysis = false;
  return cpu.compute(s, drop);
}

class OverviewPassAgainstForward : public ::testing::TestWithParam<int> {};

// n = 1100 (key blocks of 512 end mid-map), overviews of every shape the window may ask (rows and columns
// pooled unevenly, one texel per cell, a 1 x 1), computed in two bands as the window's worker does.
// Error seen: tiles 2.4e-7, m 1.4e-6 (q, k projected per head here, stacked there: the last bits of a score),
// l 1.3e-6 relative (an online sum over 3 key blocks against one sum over the row). Masked flags exactly equal;
// a fully masked row (variant 3, row 3) gives -inf and 0 exactly, as the backend's.
TEST_P(OverviewPassAgainstForward, SameTileAndRowStatistics) {
  const int n = 1100;
  const Scene s = maskedScene(n, 2, GetParam());
  const Result r = forwardWithoutMaps(s);
  const KeyMask mask(s);
  for (const auto& [out_rows, out_cols] : std::vector<std::pair<int, int>>{{97, 61}, {1100, 1100}, {1, 1}, {512, 1024}}) {
    const int head = out_rows % 2;
    const HeadResult& hr = r.heads[static_cast<std::size_t>(head)];
    Tile got;
    RowVector m, l;
    const Matrix q = headQuery(s, head), k = headKey(s, head);
    const int split = out_rows / 3;
    overviewRows(s, head, q, k, mask, out_rows, out_cols, 0, split, got, m, l);
    overviewRows(s, head, q, k, mask, out_rows, out_cols, split, out_rows, got, m, l);
    const Tile want = weightTile(s, r, {head, 0, -1, 0, -1, Pooling::Max, out_rows, out_cols});
    ASSERT_EQ(got.values.rows(), out_rows);
    ASSERT_EQ(got.values.cols(), out_cols);
    EXPECT_LT(test::maxError(got.values, want.values), 1e-6) << out_rows << " x " << out_cols;
    EXPECT_TRUE(got.masked == want.masked) << out_rows << " x " << out_cols;
    for (int i = 0; i < n; ++i) {
      if (hr.row_sum[i] == 0) {  // a fully masked row: as the backend says, -inf and 0
        EXPECT_EQ(l[i], 0.0f) << "row " << i;
        EXPECT_EQ(m[i], -std::numeric_limits<float>::infinity()) << "row " << i;
        continue;
      }
      EXPECT_NEAR(m[i], hr.row_max[i], 4e-6) << "row " << i;
      EXPECT_NEAR(l[i] / hr.row_sum[i], 1.0f, 4e-6) << "row " << i;
    }
  }
}
INSTANTIATE_TEST_SUITE_P(Masks, OverviewPassAgainstForward, ::testing::Values(0, 1, 2, 3));

// 4096 tokens, causal with every 7th key padded: the overview pooled to 300 x 170 against the max of the double
// reference's allowed cells (pooled ranges worked out by hand), and m, l against the reference's.
// Error seen: tile 1.3e-7, m 1.4e-6, l 1.3e-6 relative (float scores and an online float sum against double).
TEST(OverviewPass, LongCausalPaddedAgainstTheDoubleReference) {
  const int n = 4096, out_rows = 300, out_cols = 170;
  const Scene s = maskedScene(n, 1, 2);
  Tile got;
  RowVector m, l;
  overviewRows(s, 0, headQuery(s, 0), headKey(s, 0), KeyMask(s), out_rows, out_cols, 0, out_rows, got, m, l);
  std::vector<double> ref_max, ref_sum;
  const MatrixD ref = referenceRows(s, 0, 0, n, &ref_max, &ref_sum);
  MatrixD want;
  MaskMatrix want_masked;
  test::referencePooledMax(s, ref, out_rows, out_cols, want, want_masked);
  EXPECT_LT(test::maxError(got.values, want), 1e-6);
  EXPECT_TRUE(got.masked == want_masked);
  double m_err = 0, l_err = 0;
  for (int i = 0; i < n; ++i) {
    m_err = std::max(m_err, std::abs(m[i] - ref_max[static_cast<std::size_t>(i)]));
    l_err = std::max(l_err, std::abs(l[i] / ref_sum[static_cast<std::size_t>(i)] - 1));
  }
  EXPECT_LT(m_err, 5e-6);
  EXPECT_LT(l_err, 5e-6);
}

TEST(OverviewPass, BadSizesNameTheField) {
  const Scene s = maskedScene(50, 1, 0);
  const Matrix q = headQuery(s, 0), k = headKey(s, 0);
  Tile t;
  RowVector m, l;
  const auto field = [&](int out_rows, int y1, Matrix qq) -> std::string {
    try {
      overviewRows(s, 0, qq, k, KeyMask(s), out_rows, 10, 0, y1, t, m, l);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(field(51, 1, q).find("overview size"), std::string::npos);  // more rows than queries: cells would repeat
  EXPECT_NE(field(10, 11, q).find("pooled rows"), std::string::npos);
  EXPECT_NE(field(10, 10, q.topRows(49)).find("q, k"), std::string::npos);
}

}  // namespace
}  // namespace attnscope
