// RoPE: the rotation at a few positions against values derived by hand, the relative-position property of
// q.k (an independent identity), and Llama 3's scaled inverse frequencies against a table worked out from
// transformers' definition (_compute_llama3_parameters) in double.
#include "compare.h"  // first: it includes Eigen as types.h does

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attnscope/compute/rope.h"
#include "attnscope/error.h"

namespace attnscope {
namespace {

TEST(Rope, InverseFrequenciesArePowersOfTheta) {
  // theta 10000, dims 4: f_0 = 1, f_1 = 10000^(-1/2) = 0.01.
  const auto f = ropeInverseFrequencies(10000, 4);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_NEAR(f[1], 0.01, 1e-15);
}

TEST(Rope, RotatesPairsHalfApartByPositionTimesFrequency) {
  // Rows at positions 1 and 2; dims 4 pairs entry 0 with 2 and 1 with 3 (rotate_half), f = (1, 0.01).
  // Row 0 = e_0 at position 1: (cos 1, 0, sin 1, 0) = (0.5403023, 0, 0.8414710, 0).
  // Row 1 = e_1 at position 2: (0, cos 0.02, 0, sin 0.02) = (0, 0.9998000, 0, 0.0199987).
  // Column 4 lies outside dims and is left alone.
  Matrix x = Matrix::Zero(2, 5);
  x(0, 0) = 1;
  x(1, 1) = 1;
  x(0, 4) = 7;
  RopeTable({1, 2}, ropeInverseFrequencies(10000, 4)).rotate(x);
  const float want[2][5] = {{0.5403023f, 0, 0.8414710f, 0, 7}, {0, 0.9998000f, 0, 0.0199987f, 0}};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 5; ++c) EXPECT_NEAR(x(r, c), want[r][c], 2e-7f) << r << "," << c;  // seen: <= 6e-8
}

TEST(Rope, RotatesAColumnBlockOnly) {
  // A head's block at columns [2, 4) of a wider matrix: dims 2, f = 1, position 3 rotates (1, 0) to (cos 3, sin 3).
  Matrix x = Matrix::Zero(1, 6);
  x(0, 2) = 1;
  x(0, 0) = 5;
  RopeTable({3}, ropeInverseFrequencies(10000, 2)).rotate(x, 2);
  EXPECT_NEAR(x(0, 2), std::cos(3.0), 1e-7);
  EXPECT_NEAR(x(0, 3), std::sin(3.0), 1e-7);
  EXPECT_EQ(x(0, 0), 5.0f);
}

TEST(Rope, ScoresDependOnlyOnRelativePosition) {
  // (R_p q) . (R_s k) = q . R_(s-p) k: positions (5, 2) give the same score as (13, 10) and (3, 0).
  const auto f = ropeInverseFrequencies(10000, 8);
  Matrix q(1, 8), k(1, 8);
  q << 0.3f, -1.1f, 0.7f, 0.2f, -0.5f, 0.9f, 0.1f, -0.4f;
  k << -0.6f, 0.4f, 0.8f, -0.2f, 0.5f, 0.3f, -0.9f, 0.6f;
  auto score = [&](int pq, int pk) {
    Matrix a = q, b = k;
    RopeTable({pq}, f).rotate(a);
    RopeTable({pk}, f).rotate(b);
    return static_cast<double>(a.row(0).dot(b.row(0)));
  };
  EXPECT_NEAR(score(5, 2), score(3, 0), 1e-5);  // seen: ~1e-7
  EXPECT_NEAR(score(13, 10), score(3, 0), 1e-5);
  EXPECT_GT(std::abs(score(5, 2) - score(2, 2)), 1e-3);  // and it does depend on the offset
}

TEST(Rope, Llama3ScalingMatchesWorkedTable) {
  // Llama 3.1: theta 500000, head_dim 128, factor 8, low 1, high 4, original context 8192. Wavelength
  // 2 pi / f_t: below 2048 kept, above 8192 divided by 8, between blended with s = (8192 / wavelength - 1) / 3:
  // f' = (1 - s) f / 8 + s f. t = 30: f = 0.0021311195, wavelength 2948.30, s = 0.592851, f' = 0.0013718936.
  RopeScaling s;
  s.type = RopeScaling::Type::Llama3;
  s.factor = 8;
  s.low_freq_factor = 1;
  s.high_freq_factor = 4;
  s.original_max_position_embeddings = 8192;
  const auto f = ropeInverseFrequencies(500000, 128, s);
  ASSERT_EQ(f.size(), 64u);
  const struct { int t; double want; } table[] = {
      {0, 1.0},                      // wavelength 6.28: kept
      {20, 0.016560440080994446},    // 379.4: kept
      {29, 0.002166570763503359},    // 2401.7: blended
      {30, 0.0013718935677611381},   // 2948.3: blended
      {32, 0.0005248461609929547},   // 4442.9: blended
      {34, 0.0001785078127679964},   // 6695.1: blended
      {35, 9.556212353964683e-05},   // 8218.7: divided by 8
      {63, 3.068925988914511e-07},   // 2.56e6: divided by 8
  };
  for (const auto& row : table) EXPECT_NEAR(f[static_cast<std::size_t>(row.t)] / row.want, 1.0, 1e-12) << row.t;
}

TEST(Rope, LinearScalingDividesEveryFrequency) {
  RopeScaling s;
  s.type = RopeScaling::Type::Linear;
  s.factor = 4;
  const auto f = ropeInverseFrequencies(10000, 4, s);
  EXPECT_DOUBLE_EQ(f[0], 0.25);
  EXPECT_NEAR(f[1], 0.0025, 1e-15);
}

TEST(Rope, RefusesOddDimsAndBadTheta) {
  EXPECT_THROW(ropeInverseFrequencies(10000, 3), InputError);
  EXPECT_THROW(ropeInverseFrequencies(0, 4), InputError);
  EXPECT_THROW(ropeInverseFrequencies(NAN, 4), InputError);
  RopeScaling s;
  s.type = RopeScaling::Type::Llama3;
  s.factor = 8;
  s.low_freq_factor = 4;
  s.high_freq_factor = 1;  // not above low
  EXPECT_THROW(ropeInverseFrequencies(500000, 128, s), InputError);
  Matrix x = Matrix::Zero(2, 4);
  EXPECT_THROW(RopeTable({0}, ropeInverseFrequencies(10000, 4)).rotate(x), InputError);  // rows disagree
}

}  // namespace
}  // namespace attnscope
