// Maps on demand: the key mask from indices, row statistics, weight tiles (plain and pooled) and the streamed
// analysis, each against references computed here in double from the scene's own inputs, or worked by hand.
#include "compare.h"  // first: it includes Eigen as types.h does

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/similarity.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/key_mask.h"
#include "attnscope/scene/presets.h"
#include "compute/reference_rows.h"

namespace attnscope {
namespace {

using test::MatrixD;
using test::randomScene;
using test::referenceRows;
using test::referenceWeightBound;

// Largest |a - b| (tests/compare.h: a non-finite value where the reference is finite is an infinite error, and
// the shapes must agree).
double worstError(const Matrix& a, const MatrixD& b) { return test::maxError(a, b); }

TEST(KeyMask, CausalWithPaddingByHand) {
  Scene s = randomScene(4, 1, 4, true, 1);
  s.key_padding = {0, 0, 1, 0};
  const KeyMask mask(s);
  // Allowed: j <= i and j != 2.
  const int expected[4][4] = {{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 1, 0, 0}, {1, 1, 0, 1}};
  const int counts[4] = {1, 2, 2, 3};
  for (int i = 0; i < 4; ++i) {
    std::uint8_t row[4];
    mask.fillRow(i, 0, 4, row);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(mask.allowed(i, j), expected[i][j] == 1) << i << "," << j;
      EXPECT_EQ(row[j], expected[i][j]) << i << "," << j;
    }
    EXPECT_EQ(mask.allowedCount(i), counts[i]) << i;
  }
  std::uint8_t tail[2];
  mask.fillRow(3, 2, 4, tail);  // keys 2 and 3 of row 3: padded, allowed
  EXPECT_EQ(tail[0], 0);
  EXPECT_EQ(tail[1], 1);
}

TEST(KeyMask, SlidingWindowByHand) {
  // Causal with a window of 2 and key 1 padded: query i sees keys i - 1 and i, never key 1.
  Scene s = randomScene(5, 1, 4, true, 1);
  s.sliding_window = 2;
  s.key_padding = {0, 1, 0, 0, 0};
  const KeyMask mask(s);
  const int expected[5][5] = {{1, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 1, 1, 0}, {0, 0, 0, 1, 1}};
  const int counts[5] = {1, 1, 1, 2, 2};
  for (int i = 0; i < 5; ++i) {
    std::uint8_t row[5];
    mask.fillRow(i, 0, 5, row);
    for (int j = 0; j < 5; ++j) {
      EXPECT_EQ(mask.allowed(i, j), expected[i][j] == 1) << i << "," << j;
      EXPECT_EQ(row[j], expected[i][j]) << i << "," << j;
    }
    EXPECT_EQ(mask.allowedCount(i), counts[i]) << i;
  }
  // Whole blocks: None, All and Some agree with the cells (every block of a 5 x 5 grid, padding off).
  s.key_padding.clear();
  const KeyMask plain(s);
  for (int q0 = 0; q0 < 5; ++q0)
    for (int q1 = q0 + 1; q1 <= 5; ++q1)
      for (int k0 = 0; k0 < 5; ++k0)
        for (int k1 = k0 + 1; k1 <= 5; ++k1) {
          int allowed = 0;
          for (int i = q0; i < q1; ++i)
            for (int j = k0; j < k1; ++j) allowed += plain.allowed(i, j) ? 1 : 0;
          const KeyMask::Block b = plain.block(q0, q1, k0, k1);
          if (allowed == 0) {
            EXPECT_NE(b, KeyMask::Block::All) << q0 << q1 << k0 << k1;
          }
          if (b == KeyMask::Block::None) {
            EXPECT_EQ(allowed, 0) << q0 << q1 << k0 << k1;
          }
          if (b == KeyMask::Block::All) {
            EXPECT_EQ(allowed, (q1 - q0) * (k1 - k0)) << q0 << q1 << k0 << k1;
          }
        }
  // A backend does not compute a scene with a window: the rule is the tile engine's alone.
  EXPECT_THROW(validateScene(s), InputError);
}

TEST(Tiles, PooledRangesByHand) {
  // 10 cells into 4 blocks: ceil(p * 10 / 4) .. ceil((p + 1) * 10 / 4).
  EXPECT_EQ(pooledRange(0, 4, 10), std::make_pair(0, 3));
  EXPECT_EQ(pooledRange(1, 4, 10), std::make_pair(3, 5));
  EXPECT_EQ(pooledRange(2, 4, 10), std::make_pair(5, 8));
  EXPECT_EQ(pooledRange(3, 4, 10), std::make_pair(8, 10));
  // More blocks than cells: each block shows one cell.
  EXPECT_EQ(pooledRange(0, 4, 2), std::make_pair(0, 1));
  EXPECT_EQ(pooledRange(1, 4, 2), std::make_pair(0, 1));
  EXPECT_EQ(pooledRange(3, 4, 2), std::make_pair(1, 2));
}

TEST(Tiles, MapsLimitFollowsTheEnvironment) {
  Scene s = randomScene(64, 2, 8, false, 3);
  EXPECT_EQ(mapBytes(s, false), 2u * 64 * 64 * 4);
  EXPECT_EQ(mapBytes(s, true), 2u * 2 * 64 * 64 * 4);
  ComputeOptions auto_maps;
  auto_maps.maps = MapPolicy::Auto;
  setenv("ATTNSCOPE_MAPS_LIMIT", "32K", 1);  // 32768 bytes: the 2 maps of 16 KiB fit, with scores they do not
  auto_maps.keep_scores = false;
  EXPECT_TRUE(keepsMaps(s, auto_maps));
  auto_maps.keep_scores = true;
  EXPECT_FALSE(keepsMaps(s, auto_maps));
  setenv("ATTNSCOPE_MAPS_LIMIT", "lots", 1);
  EXPECT_THROW(mapsLimitBytes(), InputError);
  unsetenv("ATTNSCOPE_MAPS_LIMIT");
  EXPECT_EQ(mapsLimitBytes(), std::size_t{256} << 20);
}

// A result without maps gives the same weights, outputs and analysis as one with them, and both agree with
// the double reference within the bound float32 arithmetic allows for these numbers (referenceWeightBound: 3e-5
// to 1.3e-4 here, a worst case over every summation order). Errors seen: weights 6e-8 against double on an AMD build machine, 3.4e-7 on an Intel AVX-512 one
// (past the 3e-7 counted from the first), 1.2e-7 between the two results.
class TilesAgainstMaps : public ::testing::TestWithParam<int> {};

TEST_P(TilesAgainstMaps, EveryTileAndTheOutputs) {
  const int variant = GetParam();
  Scene s = randomScene(97, 3, 16, variant != 1, 11 + static_cast<std::uint64_t>(variant));
  if (variant == 2) {  // causal and padded, with a row (0) whose only key is padded: all zero, no NaN
    s.key_padding.assign(97, 0);
    for (int j = 0; j < 97; j += 7) s.key_padding[static_cast<std::size_t>(j)] = 1;
  }
  CpuBackend cpu(2);
  ComputeOptions keep, drop;
  drop.maps = MapPolicy::Drop;
  const Result full = cpu.compute(s, keep);
  const Result lean = cpu.compute(s, drop);
  ASSERT_TRUE(full.heads[0].hasMap());
  ASSERT_FALSE(lean.heads[0].hasMap());
  EXPECT_EQ(lean.heads[0].scores.size(), 0);

  for (int h = 0; h < 3; ++h) {
    const MatrixD ref = referenceRows(s, h, 0, 97);
    const double bound = referenceWeightBound(s, h, 0, 97);
    const double seen = worstError(full.heads[static_cast<std::size_t>(h)].weights, ref);
    std::printf("variant %d head %d: weights off by %.3g, bound %.3g\n", variant, h, seen, bound);
    EXPECT_LT(seen, bound);
    const Tile whole = weightTile(s, lean, {h});
    EXPECT_LT(worstError(whole.values, ref), bound) << "head " << h;
    // A tile in the middle, from both results.
    TileRequest mid{h, 20, 61, 5, 90};
    const Tile a = weightTile(s, lean, mid), b = weightTile(s, full, mid);
    EXPECT_LT(worstError(a.values, ref.block(20, 5, 41, 85)), bound);
    EXPECT_LT(worstError(b.values, ref.block(20, 5, 41, 85)), bound);
    for (int r = 0; r < 41; ++r)
      for (int c = 0; c < 85; ++c) {
        const int i = 20 + r, j = 5 + c;
        const bool masked = (variant != 1 && j > i) || (variant == 2 && j % 7 == 0);
        ASSERT_EQ(a.masked(r, c), masked ? 1 : 0) << i << "," << j;
        if (masked) {
          ASSERT_EQ(a.values(r, c), 0.0f);
        }
      }
    // Row statistics: m_i and l_i as the double reference defines them (scaled scores).
    const HeadResult& hr = lean.heads[static_cast<std::size_t>(h)];
    ASSERT_EQ(hr.row_max.size(), 97);
    ASSERT_EQ(hr.row_sum.size(), 97);
    // Outputs: both results, the same up to the order of float sums.
    test::expectClose(lean.heads[static_cast<std::size_t>(h)].output, full.heads[static_cast<std::size_t>(h)].output,
                      1e-6, "head output without maps");
  }
  test::expectClose(lean.output, full.output, 1e-6, "output without maps");
  // The streamed analysis equals the full-map one (differences only in the order of double sums).
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      EXPECT_NEAR(lean.similarity.cosine(a, b), full.similarity.cosine(a, b), 1e-6f);
      EXPECT_NEAR(lean.similarity.js(a, b), full.similarity.js(a, b), 1e-6f);
    }
    EXPECT_NEAR(lean.stats[static_cast<std::size_t>(a)].entropy, full.stats[static_cast<std::size_t>(a)].entropy, 1e-5f);
    EXPECT_NEAR(lean.stats[static_cast<std::size_t>(a)].mean_distance,
                full.stats[static_cast<std::size_t>(a)].mean_distance, 1e-4f);
    EXPECT_NEAR(lean.stats[static_cast<std::size_t>(a)].max_weight, full.stats[static_cast<std::size_t>(a)].max_weight,
                1e-6f);
  }
  EXPECT_EQ(lean.warnings, full.warnings);
}

INSTANTIATE_TEST_SUITE_P(Masks, TilesAgainstMaps, ::testing::Values(0, 1, 2));

TEST(Tiles, PooledMaxAndMeanAgainstTheMap) {
  Scene s = randomScene(50, 2, 8, true, 5);
  CpuBackend cpu(2);
  const Result full = cpu.compute(s);
  ComputeOptions drop;
  drop.maps = MapPolicy::Drop;
  const Result lean = cpu.compute(s, drop);
  const MatrixD ref = referenceRows(s, 1, 0, 50);
  // Rows 10..50 and keys 0..30 pooled into 4 x 3 blocks; block ranges by hand: rows 10 + {0-10, 10-20, 20-30,
  // 30-40}, keys {0-10, 10-20, 20-30}. Mean over allowed (causal: j <= i) cells, max over all.
  for (const Result* result : {&full, &lean}) {
    TileRequest req{1, 10, 50, 0, 30, Pooling::Mean, 4, 3};
    const Tile mean = weightTile(s, *result, req);
    req.pooling = Pooling::Max;
    const Tile max = weightTile(s, *result, req);
    ASSERT_EQ(mean.values.rows(), 4);
    ASSERT_EQ(mean.values.cols(), 3);
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 3; ++x) {
        double sum = 0, peak = 0;
        int n = 0;
        for (int i = 10 + 10 * y; i < 20 + 10 * y; ++i)
          for (int j = 10 * x; j < 10 * x + 10; ++j) {
            if (j > i) continue;
            sum += ref(i, j);
            peak = std::max(peak, ref(i, j));
            ++n;
          }
        if (n == 0) {  // rows 10..19 see no key of 20..29 under the causal mask
          EXPECT_EQ(mean.masked(y, x), 1);
          EXPECT_EQ(max.masked(y, x), 1);
          EXPECT_EQ(mean.values(y, x), 0.0f);
          continue;
        }
        EXPECT_EQ(mean.masked(y, x), 0);
        EXPECT_NEAR(mean.values(y, x), sum / n, 3e-7) << y << "," << x;
        EXPECT_NEAR(max.values(y, x), peak, 3e-7) << y << "," << x;
      }
  }
  // A block whose cells are all masked (rows 0..5, keys 40..50 under causal) is masked, value 0.
  const Tile empty = weightTile(s, lean, {1, 0, 5, 40, 50, Pooling::Mean, 1, 1});
  EXPECT_EQ(empty.masked(0, 0), 1);
  EXPECT_EQ(empty.values(0, 0), 0.0f);
}

TEST(Tiles, BadRequestsNameTheField) {
  Scene s = randomScene(8, 2, 4, false, 2);
  CpuBackend cpu(1);
  const Result r = cpu.compute(s);
  const auto message = [&](TileRequest req) {
    try {
      weightTile(s, r, req);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({2}).find("head"), std::string::npos);
  EXPECT_NE(message({0, 5, 3}).find("rows"), std::string::npos);
  EXPECT_NE(message({0, 0, -1, 0, 9}).find("cols"), std::string::npos);
  EXPECT_NE(message({0, 0, -1, 0, -1, Pooling::Max, 0, 4}).find("pooled size"), std::string::npos);
}

// A long scene without maps: a few rows of each tile against the double reference, causal and padded.
// Memory: no (n, n) buffer exists (the result's weights are empty). Error seen: 2.3e-7 in row 0, whose one
// allowed key has weight 1 (2 ulps of float at 1), under 1e-9 in the long rows.
TEST(Tiles, LongCausalPaddedSceneWithoutMaps) {
  const int n = 16384;
  Scene s = randomScene(n, 2, 16, true, 21);
  s.key_padding.assign(static_cast<std::size_t>(n), 0);
  for (int j = 3; j < n; j += 5) s.key_padding[static_cast<std::size_t>(j)] = 1;
  CpuBackend cpu(2);
  ComputeOptions options;
  options.maps = MapPolicy::Auto;  // 2 x 16384^2 x 4 bytes x 2 = 4 GiB of maps: far past the 256 MiB limit
  options.analysis = false;
  const Result r = cpu.compute(s, options);
  ASSERT_FALSE(r.heads[0].hasMap());
  for (int h = 0; h < 2; ++h)
    for (int row0 : {0, 777, n - 3}) {
      const MatrixD ref = referenceRows(s, h, row0, row0 + 3);
      const Tile t = weightTile(s, r, {h, row0, row0 + 3});
      EXPECT_LT(worstError(t.values, ref), 5e-7) << "head " << h << " rows " << row0;
      EXPECT_NEAR(t.values.row(2).sum(), 1.0f, 1e-4f);
    }
}

}  // namespace
}  // namespace attnscope
