// The GPU forward's run-time check on sampled rows (forward_check.h).
#include "forward/forward_check.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace attnscope::gpu {

std::optional<CheckMismatch> checkLayerRows(const model::ForwardResult& forward, int layer, const Matrix& q,
                                            const Matrix& k, int head_dim, float cap, const std::vector<int>& rows) {
  const model::HeadLayout& layout = forward.layout;
  const int n = forward.n;
  constexpr double kEps32 = FLT_EPSILON;
  std::vector<double> s(static_cast<std::size_t>(n));
  for (int h = 0; h < layout.n_head; ++h)
    for (int i : rows) {
      // The row's scores over its allowed keys, capped as the stages cap them, in double.
      double top = -INFINITY, a = 0;
      int allowed = 0;
      for (int j = 0; j < n; ++j) {
        if (!layout.keyAllowed(layer, i, j)) continue;
        double dot = 0, magnitude = 0;
        for (int c = h * head_dim; c < (h + 1) * head_dim; ++c) {
          dot += static_cast<double>(q(i, c)) * k(j, c);
          magnitude += std::fabs(static_cast<double>(q(i, c)) * k(j, c));
        }
        s[static_cast<std::size_t>(j)] = cap > 0 ? cap * std::tanh(dot / cap) : dot;
        top = std::max(top, s[static_cast<std::size_t>(j)]);
        a = std::max(a, magnitude);
        ++allowed;
      }
      double sum = 0;
      for (int j = 0; j < n; ++j)
        if (layout.keyAllowed(layer, i, j)) sum += std::exp(s[static_cast<std::size_t>(j)] - top);
      const double tolerance = 1e-4 + 32 * kEps32 * (a + std::sqrt(static_cast<double>(allowed)));
      const auto off = [&](const char* what, int column, double got, double cpu) -> std::optional<CheckMismatch> {
        const double error = std::isfinite(got) ? std::fabs(got - cpu) / (1 + std::fabs(cpu)) : INFINITY;
        if (error <= tolerance) return std::nullopt;
        return CheckMismatch{.head = h,
                             .row = i,
                             .what = what,
                             .column = column,
                             .got = got,
                             .cpu = cpu,
                             .error = error,
                             .tolerance = tolerance};
      };
      std::optional<CheckMismatch> found;
      if (forward.keepsMaps()) {
        const auto map = forward.keptMap(layer * layout.n_head + h);
        for (int j = 0; j < n && !found; ++j) {
          const double want =
              layout.keyAllowed(layer, i, j) ? std::exp(s[static_cast<std::size_t>(j)] - top) / sum : 0.0;
          found = off("weights", j, map(i, j), want);
        }
      } else {
        const HeadResult& stats =
            forward.stats.at(static_cast<std::size_t>(layer)).heads.at(static_cast<std::size_t>(h));
        found = off("m", -1, stats.row_max[i], top);
        if (!found) found = off("l", -1, stats.row_sum[i], sum);
      }
      if (found) return found;
    }
  return std::nullopt;
}

std::optional<std::string> checkProductRows(const Matrix& w, bool in_out, const RowVector* bias,
                                            const std::vector<int>& rows, const std::vector<int>& cols,
                                            const Matrix& a_rows, const Matrix& c_rows, const Matrix* before_rows) {
  constexpr double kEps32 = FLT_EPSILON;
  const Eigen::Index k = in_out ? w.rows() : w.cols();
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const Eigen::Index j = cols[c];
      double sum = 0, magnitude = 0;
      for (Eigen::Index t = 0; t < k; ++t) {
        const double term = static_cast<double>(a_rows(static_cast<Eigen::Index>(r), t)) * (in_out ? w(t, j) : w(j, t));
        sum += term;
        magnitude += std::fabs(term);
      }
      const double b = bias && bias->size() > 0 ? (*bias)[j] : 0.0;
      const double before = before_rows ? (*before_rows)(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) : 0.0;
      const double want = before + sum + b;
      const double got = c_rows(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c));
      const double tolerance = static_cast<double>(k + 2) * kEps32 * (magnitude + std::fabs(b)) +
                               kEps32 * (std::fabs(before) + std::fabs(want)) + 1e-30;
      const double error = std::isfinite(got) ? std::fabs(got - want) : INFINITY;
      if (error > tolerance) {
        char text[200];
        std::snprintf(text, sizeof text, "row %d, column %d is %.6g where the CPU's is %.6g (error %.3g, tolerance %.3g)",
                      rows[r], cols[c], got, want, error, tolerance);
        return std::string(text);
      }
    }
  return std::nullopt;
}

}  // namespace attnscope::gpu
