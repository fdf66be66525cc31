// The blocked max-pooled tiles (compute/pooled_max.cpp) of heads without maps: against the pooling of the kept
// map (weightTile's cell loop over the backend's own softmax) on mid-size scenes, and against a max pooled here
// from the double reference (compute/reference_rows.h) on a 4096-token causal, padded scene.
#include "compare.h"  // first: it includes Eigen as types.h does

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/key_mask.h"
#include "compute/reference_rows.h"

namespace attnscope {
namespace {

using test::MatrixD;
using test::randomScene;
using test::referenceRows;

Scene maskedScene(int n, int heads, int variant) { return test::maskedScene(n, heads, variant, 40); }

// What KeyMask::block says of a block of cells, worked by hand: the blocked loop skips None and masks nothing in All.
TEST(KeyMask, BlocksByHand) {
  Scene s = randomScene(6, 1, 4, true, 1);
  s.key_padding = {0, 0, 1, 0, 0, 0};  // causal (j <= i) and key 2 padded
  const KeyMask causal(s);
  EXPECT_EQ(causal.block(0, 2, 3, 6), KeyMask::Block::None);  // keys 3..5 after queries 0..1
  EXPECT_EQ(causal.block(3, 6, 0, 2), KeyMask::Block::All);   // keys 0..1 before query 3, none padded
  EXPECT_EQ(causal.block(3, 6, 0, 3), KeyMask::Block::Some);  // key 2 padded
  EXPECT_EQ(causal.block(0, 3, 0, 2), KeyMask::Block::Some);  // query 0 may not see key 1
  EXPECT_EQ(causal.block(0, 6, 2, 3), KeyMask::Block::None);  // key 2 alone: padded
  s.mask = MaskKind::None;
  const KeyMask padded(s);
  EXPECT_EQ(padded.block(0, 6, 0, 2), KeyMask::Block::All);
  EXPECT_EQ(padded.block(0, 6, 2, 3), KeyMask::Block::None);
  EXPECT_EQ(padded.block(0, 6, 1, 4), KeyMask::Block::Some);
}

class PooledMaxAgainstMaps : public ::testing::TestWithParam<int> {};

// Tiles whose band and key blocks fall in every way: whole map pooled, a sub-window, more blocks than cells
// (cells repeat), single-column blocks. Error seen: 8.9e-8 (the two computes' GEMMs run different block shapes,
// so a score may differ in its last bit); masked flags exactly equal.
TEST_P(PooledMaxAgainstMaps, EqualsThePoolingOfTheKeptMap) {
  const int n = 700;
  const Scene s = maskedScene(n, 2, GetParam());
  CpuBackend cpu(2);
  ComputeOptions keep, drop;
  keep.maps = MapPolicy::Keep;
  drop.maps = MapPolicy::Drop;
  keep.analysis = drop.analysis = false;
  const Result full = cpu.compute(s, keep), lean = cpu.compute(s, drop);
  ASSERT_TRUE(full.heads[1].hasMap());
  ASSERT_FALSE(lean.heads[1].hasMap());
  const std::vector<TileRequest> requests = {
      {1, 0, -1, 0, -1, Pooling::Max, 97, 61},  {0, 0, -1, 0, -1, Pooling::Max, 700, 700},
      {1, 300, 700, 13, 600, Pooling::Max, 33, 587},  {0, 10, 20, 0, -1, Pooling::Max, 40, 900},
      {1, 0, 650, 0, 650, Pooling::Max, 1, 1}};
  for (const TileRequest& request : requests) {
    const Tile want = weightTile(s, full, request);
    const Tile got = weightTile(s, lean, request);
    ASSERT_EQ(got.values.rows(), request.out_rows);
    ASSERT_EQ(got.values.cols(), request.out_cols);
    EXPECT_LT(test::maxError(got.values, want.values), 3e-7) << "out " << request.out_rows << " x " << request.out_cols;
    EXPECT_TRUE(got.masked == want.masked) << "out " << request.out_rows << " x " << request.out_cols;
  }
  // In bands (as the window asks): rows [0, 40) then [40, 97) fill the same tile, to the last bit or two (the
  // bands' GEMMs take other row blocks, and the BLAS may sum a row's products in another order). Seen: 5.6e-9.
  Tile banded;
  const TileRequest whole{1, 0, -1, 0, -1, Pooling::Max, 97, 61};
  const KeyMask mask(s);
  maxPooledRows(s, lean, mask, whole, 0, 40, banded);
  maxPooledRows(s, lean, mask, whole, 40, 97, banded);
  const Tile at_once = weightTile(s, lean, whole);
  EXPECT_LT(test::maxError(banded.values, at_once.values), 5e-8);
  EXPECT_TRUE(banded.masked == at_once.masked);
}
INSTANTIATE_TEST_SUITE_P(Masks, PooledMaxAgainstMaps, ::testing::Values(0, 1, 2, 3));

// 4096 tokens, causal with padding, no maps: the whole map pooled to 300 x 170 (blocks of 13-14 by 24-25 cells)
// against the max of the double reference's cells, allowed ones only. Error seen: 1.5e-7 (float m_i, l_i and
// scores against double; the largest weights are near 1 where one ulp is 6e-8).
TEST(PooledMax, LongCausalPaddedAgainstTheDoubleReference) {
  const int n = 4096, out_rows = 300, out_cols = 170;
  const Scene s = maskedScene(n, 1, 2);
  CpuBackend cpu(2);
  ComputeOptions drop;
  drop.maps = MapPolicy::Drop;
  drop.analysis = false;
  const Result r = cpu.compute(s, drop);
  const Tile got = weightTile(s, r, {0, 0, -1, 0, -1, Pooling::Max, out_rows, out_cols});
  const MatrixD ref = referenceRows(s, 0, 0, n);
  MatrixD want;
  MaskMatrix want_masked;
  test::referencePooledMax(s, ref, out_rows, out_cols, want, want_masked);
  ASSERT_EQ(got.values.rows(), out_rows);
  ASSERT_EQ(got.values.cols(), out_cols);
  EXPECT_LT(test::maxError(got.values, want), 1e-6);
  EXPECT_TRUE(got.masked == want_masked);
}

TEST(PooledMax, BadBandNamesTheField) {
  const Scene s = maskedScene(50, 1, 0);
  CpuBackend cpu(1);
  ComputeOptions drop;
  drop.maps = MapPolicy::Drop;
  const Result r = cpu.compute(s, drop);
  Tile t;
  try {
    maxPooledRows(s, r, KeyMask(s), {0, 0, -1, 0, -1, Pooling::Max, 10, 10}, 5, 11, t);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("pooled rows"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnscope
