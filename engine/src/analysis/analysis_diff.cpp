// A/B snapshot diff: B - A of every head's weights, with the largest change per head and where it is.
#include <cmath>
#include <string>

#include "attnscope/analysis/analysis.h"
#include "attnscope/error.h"

namespace attnscope {

std::vector<HeadDiff> diffResults(const Result& a, const Result& b) {
  if (a.heads.size() != b.heads.size())
    throw InputError("snapshot", std::to_string(a.heads.size()) + " heads (snapshot A's)",
                     std::to_string(b.heads.size()));
  std::vector<HeadDiff> diffs;
  for (std::size_t h = 0; h < a.heads.size(); ++h) {
    const Matrix& wa = a.heads[h].weights;  // (n_q, n_k)
    const Matrix& wb = b.heads[h].weights;
    if (wa.rows() != wb.rows() || wa.cols() != wb.cols())
      throw InputError(
          "snapshot",
          "head " + std::to_string(h + 1) + " weights " + shapeString(wa.rows(), wa.cols()) + " (snapshot A's)",
          shapeString(wb.rows(), wb.cols()));
    HeadDiff d;
    d.delta = wb - wa;
    for (Eigen::Index i = 0; i < d.delta.rows(); ++i)
      for (Eigen::Index j = 0; j < d.delta.cols(); ++j)
        if (std::abs(d.delta(i, j)) > d.max_abs) {
          d.max_abs = std::abs(d.delta(i, j));
          d.row = static_cast<int>(i);
          d.col = static_cast<int>(j);
        }
    diffs.push_back(std::move(d));
  }
  return diffs;
}

}  // namespace attnscope
