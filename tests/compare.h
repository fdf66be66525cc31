// The one comparison every test uses: the largest error of values against their reference, where a non-finite
// value against a finite reference is an infinite error (std::max(worst, NaN) keeps `worst`, so a plain
// maximum would pass an all-NaN result) and the shapes must agree. Used by the unit tests and the GPU tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "attnscope/types.h"  // Eigen, through attnscope/eigen.h

namespace attnscope::test {

inline constexpr double kInfiniteError = std::numeric_limits<double>::infinity();

// |got - want|, or |got - want| / (1 + |want|): absolute near 0, relative for large values.
enum class Metric { Absolute, Mixed };

// A non-finite reference value. By default it is itself an infinite error: the references we compute are
// finite, and a NaN in one means the reference is broken. MustMatch is a caller's stated choice where the
// reference is non-finite on purpose (a masked score's -inf): the value must be the identical non-finite
// value there (-inf for -inf, +inf for +inf, NaN for NaN); a finite value there is an infinite error.
enum class NonFiniteReference { Fail, MustMatch };

struct CompareOptions {
  Metric metric = Metric::Absolute;
  NonFiniteReference non_finite_reference = NonFiniteReference::Fail;
};
inline constexpr CompareOptions kMixed{Metric::Mixed, NonFiniteReference::Fail};
// Scores and similarities with masked (-inf) entries, on the mixed scale.
inline constexpr CompareOptions kMixedWithMasks{Metric::Mixed, NonFiniteReference::MustMatch};

// The error of one value; never NaN.
inline double valueError(double got, double want, CompareOptions options = {}) {
  if (!std::isfinite(want)) {
    if (options.non_finite_reference == NonFiniteReference::Fail) return kInfiniteError;
    const bool same = std::isnan(want) ? std::isnan(got) : got == want;
    return same ? 0.0 : kInfiniteError;
  }
  if (!std::isfinite(got)) return kInfiniteError;
  const double difference = std::abs(got - want);
  return options.metric == Metric::Mixed ? difference / (1.0 + std::abs(want)) : difference;
}

// The larger of two errors, a NaN (from a caller's own arithmetic) counting as infinite.
inline double worse(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kInfiniteError;
  return a < b ? b : a;
}

// The largest error over two matrices of any Eigen type. A shape mismatch is a test failure naming `what`
// and both shapes, and an infinite error. Empty matrices of the same shape have error 0.
template <class Got, class Want>
double maxError(const Eigen::DenseBase<Got>& got, const Eigen::DenseBase<Want>& want, CompareOptions options = {},
                const std::string& what = "") {
  if (got.rows() != want.rows() || got.cols() != want.cols()) {
    ADD_FAILURE() << what << (what.empty() ? "" : ": ") << "shape: expected " << want.rows() << " x "
                  << want.cols() << ", got " << got.rows() << " x " << got.cols();
    return kInfiniteError;
  }
  double worst = 0;
  for (Eigen::Index i = 0; i < want.rows(); ++i)
    for (Eigen::Index j = 0; j < want.cols(); ++j)
      worst = worse(worst, valueError(static_cast<double>(got(i, j)), static_cast<double>(want(i, j)), options));
  return worst;
}

// maxError, asserted within `tolerance`; returns the error for the caller to print or accumulate.
template <class Got, class Want>
double expectClose(const Eigen::DenseBase<Got>& got, const Eigen::DenseBase<Want>& want, double tolerance,
                   const std::string& what, CompareOptions options = {}) {
  const double error = maxError(got, want, options, what);
  EXPECT_LE(error, tolerance) << what << ": largest error " << error << " over " << want.rows() << " x "
                              << want.cols();
  return error;
}

// A reference matrix from JSON rows ([[...], ...], or [...] as one row); ragged rows are a test failure
// (and an empty matrix). JSON has no NaN, so NumPy references write non-finite values as null: read as NaN.
inline Eigen::MatrixXd jsonMatrix(const nlohmann::json& rows) {
  if (!rows.is_array()) {
    ADD_FAILURE() << "reference: expected a JSON array, got " << rows.type_name();
    return {};
  }
  const bool one_row = rows.empty() || !rows[0].is_array();
  const Eigen::Index n = one_row ? 1 : static_cast<Eigen::Index>(rows.size());
  const Eigen::Index m = one_row ? static_cast<Eigen::Index>(rows.size()) : static_cast<Eigen::Index>(rows[0].size());
  Eigen::MatrixXd out(n, m);
  for (Eigen::Index i = 0; i < n; ++i) {
    const nlohmann::json& row = one_row ? rows : rows[static_cast<std::size_t>(i)];
    if (!row.is_array() || static_cast<Eigen::Index>(row.size()) != m) {
      ADD_FAILURE() << "reference: row " << i << " has " << row.size() << " values, expected " << m;
      return {};
    }
    for (Eigen::Index j = 0; j < m; ++j) {
      const nlohmann::json& v = row[static_cast<std::size_t>(j)];
      out(i, j) = v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
    }
  }
  return out;
}

}  // namespace attnscope::test
