// Tiles with a per-key scale (TileRequest::key_scale, value-norm weighting): plain, mean- and max-pooled, from a
// kept map, recomputed, and the one-pass overview, against the double reference map (compute/reference_rows.h)
// times the scales and pooled here, with and without a causal mask, some scales exactly 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/scene_rope.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/key_mask.h"
#include "compare.h"  // first: it includes Eigen as types.h does
#include "compute/reference_rows.h"

namespace attnscope {
namespace {

using test::MatrixD;
using test::referenceAllowed;
using test::referenceRows;

// Scales in [0, 1) from a fixed linear congruence, every 5th key exactly 0 (a key whose value the head never writes).
RowVector keyScales(int n) {
  RowVector c(n);
  unsigned state = 12345;
  for (int j = 0; j < n; ++j) {
    state = state * 1103515245u + 12345u;
    c[j] = j % 5 == 0 ? 0.0f : static_cast<float>((state >> 8) & 0xffff) / 65536.0f;
  }
  return c;
}

// Blocks (out_rows, out_cols) of the cells [row0, row1) x [col0, col1) of `scaled` (the double reference times the
// scales, whole map), pooled over allowed cells by hand: block y covers ceil(y n / out) <= i < ceil((y + 1) n / out).
void pooledReference(const Scene& s, const MatrixD& scaled, int row0, int row1, int col0, int col1, int out_rows,
                     int out_cols, MatrixD& mean, MatrixD& max, MaskMatrix& masked) {
  const int rows = row1 - row0, cols = col1 - col0;
  mean = MatrixD::Zero(out_rows, out_cols);
  max = MatrixD::Zero(out_rows, out_cols);
  masked = MaskMatrix::Ones(out_rows, out_cols);
  for (int y = 0; y < out_rows; ++y) {
    const int r0 = (y * rows + out_rows - 1) / out_rows, r1 = ((y + 1) * rows + out_rows - 1) / out_rows;
    for (int x = 0; x < out_cols; ++x) {
      const int c0 = (x * cols + out_cols - 1) / out_cols, c1 = ((x + 1) * cols + out_cols - 1) / out_cols;
      double sum = 0;
      int n = 0;
      for (int i = row0 + r0; i < row0 + r1; ++i)
        for (int j = col0 + c0; j < col0 + c1; ++j) {
          if (!referenceAllowed(s, i, j)) continue;
          sum += scaled(i, j);
          max(y, x) = std::max(max(y, x), scaled(i, j));
          ++n;
        }
      if (n > 0) masked(y, x) = 0, mean(y, x) = sum / n;
    }
  }
}

// Tolerance: the plain weights are within 3e-7 of double (tests/compute/test_tiles.cpp: GEMM and exp in float);
// times c <= 1 that stays, plus the product's rounding (half an ulp at 1, 6e-8); the recomputed max adds ln c to
// the score before its exp, a relative error of |x| 2^-24 on exp(x) / l, at most max|x e^x| 2^-24 = 2.2e-8.
constexpr double kTolerance = 4e-7;

class ScaledTiles : public ::testing::TestWithParam<bool> {};

// 600 keys: the recompute's second key block (512..600) and several 256-row bands are crossed.
// Worst errors seen, over every path: 1.1e-7 without a mask, 1.6e-7 causal.
TEST_P(ScaledTiles, AgainstTheScaledDoubleMap) {
  const bool causal = GetParam();
  const int n = 600;
  const Scene s = test::randomScene(n, 2, 16, causal, 31);
  const RowVector c = keyScales(n);
  CpuBackend cpu(2);
  ComputeOptions keep, drop;
  keep.maps = MapPolicy::Keep;
  drop.maps = MapPolicy::Drop;
  const Result full = cpu.compute(s, keep), lean = cpu.compute(s, drop);
  ASSERT_TRUE(full.heads[0].hasMap());
  ASSERT_FALSE(lean.heads[0].hasMap());
  double worst = 0;
  const auto error = [&worst](double e) {
    worst = std::max(worst, e);
    return e;
  };
  for (int h = 0; h < 2; ++h) {
    MatrixD scaled = referenceRows(s, h, 0, n);
    for (int j = 0; j < n; ++j) scaled.col(j) *= static_cast<double>(c[j]);
    for (const Result* result : {&full, &lean}) {
      const std::string what = std::string(result == &full ? "kept map" : "recomputed") + ", head " + std::to_string(h);
      // Plain: every cell, and a window off the origin (the scale is indexed by key, not by tile column).
      TileRequest plain{h};
      plain.key_scale = &c;
      const Tile whole = weightTile(s, *result, plain);
      EXPECT_LT(error(test::maxError(whole.values, scaled)), kTolerance) << what;
      TileRequest mid{h, 100, 400, 37, 590};
      mid.key_scale = &c;
      EXPECT_LT(error(test::maxError(weightTile(s, *result, mid).values, scaled.block(100, 37, 300, 553))), kTolerance)
          << what;
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; j += 5) {  // scale 0: value exactly 0, masked only where the mask says
          ASSERT_EQ(whole.values(i, j), 0.0f) << i << "," << j;
          ASSERT_EQ(whole.masked(i, j), referenceAllowed(s, i, j) ? 0 : 1) << i << "," << j;
        }
      // Pooled: uneven blocks over a window, and the whole map.
      for (const TileRequest shape :
           {TileRequest{h, 3, 597, 11, 600, Pooling::Max, 7, 13}, TileRequest{h, 0, n, 0, n, Pooling::Max, 64, 40}}) {
        MatrixD want_mean, want_max;
        MaskMatrix want_masked;
        pooledReference(s, scaled, shape.row0, shape.row1, shape.col0, shape.col1, shape.out_rows, shape.out_cols,
                        want_mean, want_max, want_masked);
        TileRequest req = shape;
        req.key_scale = &c;
        const Tile max = weightTile(s, *result, req);
        req.pooling = Pooling::Mean;
        const Tile mean = weightTile(s, *result, req);
        EXPECT_LT(error(test::maxError(max.values, want_max)), kTolerance) << what << " max";
        EXPECT_LT(error(test::maxError(mean.values, want_mean)), kTolerance) << what << " mean";
        EXPECT_EQ(max.masked, want_masked) << what;
        EXPECT_EQ(mean.masked, want_masked) << what;
      }
    }
    // The one-pass overview from q and k alone, in two bands of output rows.
    MatrixD want_mean, want_max;
    MaskMatrix want_masked;
    pooledReference(s, scaled, 0, n, 0, n, 50, 90, want_mean, want_max, want_masked);
    Tile overview;
    RowVector m, l;
    const Matrix q = headQuery(s, h), k = headKey(s, h);
    overviewRows(s, h, q, k, KeyMask(s), 50, 90, 0, 21, overview, m, l, &c);
    overviewRows(s, h, q, k, KeyMask(s), 50, 90, 21, 50, overview, m, l, &c);
    EXPECT_LT(error(test::maxError(overview.values, want_max)), kTolerance) << "overview, head " << h;
    EXPECT_EQ(overview.masked, want_masked) << "overview, head " << h;
    // m and l stay the plain scores' (the softmax's own): the plain tile from them is the plain map.
    std::vector<double> ref_m, ref_l;
    referenceRows(s, h, 0, n, &ref_m, &ref_l);
    for (int i = 0; i < n; i += 37) {
      EXPECT_NEAR(m[i], ref_m[static_cast<std::size_t>(i)],
                  1e-5 * std::max(1.0, std::abs(ref_m[static_cast<std::size_t>(i)])));
      EXPECT_NEAR(l[i], ref_l[static_cast<std::size_t>(i)], 1e-5 * ref_l[static_cast<std::size_t>(i)]);
    }
  }
  std::printf("scaled tiles (%s): worst error %.2g against double\n", causal ? "causal" : "no mask", worst);
}

INSTANTIATE_TEST_SUITE_P(CausalOrNot, ScaledTiles, ::testing::Values(false, true));

// All scales 0: every allowed cell (and block) is 0 and not masked; the max path's ln 0 is finite, never NaN.
TEST(ScaledTiles, ZeroScalesAreZeroNotMasked) {
  const Scene s = test::randomScene(40, 1, 8, true, 7);
  CpuBackend cpu(1);
  ComputeOptions drop;
  drop.maps = MapPolicy::Drop;
  const Result lean = cpu.compute(s, drop);
  const RowVector zero = RowVector::Zero(40);
  TileRequest req{0, 0, 40, 0, 40, Pooling::Max, 4, 4};
  req.key_scale = &zero;
  const Tile max = weightTile(s, lean, req);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) {
      EXPECT_EQ(max.values(y, x), 0.0f);
      EXPECT_EQ(max.masked(y, x), x > y ? 1 : 0) << y << "," << x;  // 10-cell blocks: causal empties x > y
    }
}

TEST(ScaledTiles, BadScalesNameTheField) {
  const Scene s = test::randomScene(8, 1, 4, false, 2);
  CpuBackend cpu(1);
  const Result r = cpu.compute(s);
  const auto message = [&](const RowVector& c) {
    TileRequest req{0};
    req.key_scale = &c;
    try {
      weightTile(s, r, req);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  RowVector short_one = RowVector::Ones(7), negative = RowVector::Ones(8), nan = RowVector::Ones(8);
  negative[3] = -0.5f;
  nan[2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(message(short_one).find("key_scale"), std::string::npos) << message(short_one);
  EXPECT_NE(message(short_one).find("8 values"), std::string::npos) << message(short_one);
  EXPECT_NE(message(negative).find("key_scale"), std::string::npos) << message(negative);
  EXPECT_NE(message(nan).find("key_scale"), std::string::npos) << message(nan);
  Tile t;
  RowVector m, l;
  EXPECT_THROW(overviewRows(s, 0, headQuery(s, 0), headKey(s, 0), KeyMask(s), 2, 2, 0, 2, t, m, l, &negative),
               InputError);
}

}  // namespace
}  // namespace attnscope
