// The comparison helper itself (tests/compare.h): a NaN or an inf where the reference is finite must fail,
// however many good values surround it and in whatever order; shapes must agree; non-finite references are
// accepted only where the caller says so, and only when met by the same value.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "attnscope/types.h"
#include "compare.h"

using attnscope::Matrix;
using namespace attnscope::test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Compare, NonFiniteValueAgainstFiniteReferenceIsAnInfiniteError) {
  Matrix want(2, 3);
  want << 1, 2, 3, 4, 5, 6;
  for (const float bad : {kNaN, kInf, -kInf})
    for (Eigen::Index at = 0; at < want.size(); ++at) {  // first, middle and last: std::max skips a NaN anywhere
      Matrix got = want;
      got.data()[at] = bad;
      EXPECT_EQ(maxError(got, want), kInfiniteError) << "value " << bad << " at " << at;
      EXPECT_EQ(maxError(got, want, kMixed), kInfiniteError);
      EXPECT_EQ(maxError(got, want, kMixedWithMasks), kInfiniteError) << "the reference is finite there";
      EXPECT_NONFATAL_FAILURE(expectClose(got, want, 1e9, "bad"), "largest error inf");
    }
  const Matrix all_nan = Matrix::Constant(2, 3, kNaN);
  EXPECT_EQ(maxError(all_nan, want), kInfiniteError);
}

TEST(Compare, ErrorsAreAbsoluteOrMixed) {
  Matrix want(1, 3), got(1, 3);
  want << 0, 10, -100;
  got << 0.5f, 11, -100;
  EXPECT_DOUBLE_EQ(maxError(got, want), 1.0);           // |11 - 10|
  EXPECT_DOUBLE_EQ(maxError(got, want, kMixed), 0.5);   // |0.5 - 0| / (1 + 0) beats 1 / 11
  EXPECT_EQ(maxError(want, want), 0.0);
  EXPECT_EQ(maxError(Matrix(0, 4), Matrix(0, 4)), 0.0);
}

TEST(Compare, ShapesMustAgree) {
  const Matrix a = Matrix::Zero(2, 3), b = Matrix::Zero(3, 2);
  double error = 0;
  EXPECT_NONFATAL_FAILURE(error = maxError(a, b, {}, "weights"), "weights: shape: expected 3 x 2, got 2 x 3");
  EXPECT_EQ(error, kInfiniteError);
  EXPECT_NONFATAL_FAILURE(maxError(Matrix(0, 0), b), "expected 3 x 2, got 0 x 0");
}

TEST(Compare, NonFiniteReferenceFailsUnlessTheCallerAcceptsTheSameValue) {
  Matrix want(1, 3);
  want << -kInf, 1, kNaN;
  Matrix same = want;
  same(0, 1) = 1.0f;
  EXPECT_EQ(maxError(same, want), kInfiniteError) << "by default a reference must be finite";
  EXPECT_EQ(maxError(same, want, kMixedWithMasks), 0.0) << "stated: -inf meets -inf, NaN meets NaN";
  for (const float other : {kInf, 0.0f, kNaN}) {  // -inf must be met by -inf, not +inf, a number or NaN
    Matrix got = same;
    got(0, 0) = other;
    EXPECT_EQ(maxError(got, want, kMixedWithMasks), kInfiniteError) << other;
  }
  Matrix got = same;
  got(0, 2) = 0.0f;  // NaN in the reference met by a number
  EXPECT_EQ(maxError(got, want, kMixedWithMasks), kInfiniteError);
}

TEST(Compare, WorseTreatsNaNAsInfinite) {
  EXPECT_EQ(worse(0.0, std::nan("")), kInfiniteError);
  EXPECT_EQ(worse(std::nan(""), 0.0), kInfiniteError);
  EXPECT_EQ(worse(1e-3, 2e-3), 2e-3);
}

TEST(Compare, JsonReferencesAreRectangular) {
  const Eigen::MatrixXd m = jsonMatrix(nlohmann::json::parse("[[1, 2], [3, null]]"));
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 2);
  EXPECT_EQ(m(1, 0), 3.0);
  EXPECT_TRUE(std::isnan(m(1, 1)));
  EXPECT_EQ(jsonMatrix(nlohmann::json::parse("[1, 2, 3]")).cols(), 3);
  EXPECT_NONFATAL_FAILURE(jsonMatrix(nlohmann::json::parse("[[1, 2], [3]]")), "row 1 has 1 values, expected 2");
}

}  // namespace
