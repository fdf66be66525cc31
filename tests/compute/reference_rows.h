// A double-precision reference for a head's weights, straight from a scene's inputs (projections, scale,
// mask and softmax written out here, no engine code), shared by the tiles and the streamed analysis tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "attnscope/scene/presets.h"
#include "attnscope/scene/scene.h"

namespace attnscope::test {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline Scene randomScene(int n, int heads, int d_model, bool causal, std::uint64_t seed) {
  RandomSceneSpec spec;
  spec.n = n;
  spec.heads = heads;
  spec.d_model = d_model;
  spec.causal = causal;
  spec.seed = seed;
  return makeRandomScene(spec);
}

// An independent reference for rows [row0, row1) of head `head`: projections, scores, mask and softmax in
// double, straight from the scene's inputs (no code under test but the scene's fields).
inline MatrixD referenceRows(const Scene& s, int head, int row0, int row1) {
  const HeadParams& p = s.heads[static_cast<std::size_t>(head)];
  const MatrixD x = s.query.cast<double>(), keys = s.keyRows().cast<double>();
  MatrixD q = x.middleRows(row0, row1 - row0) * p.w_q.cast<double>();
  MatrixD k = keys * p.w_k.cast<double>();
  if (p.b_q) q.rowwise() += p.b_q->cast<double>();
  if (p.b_k) k.rowwise() += p.b_k->cast<double>();
  const double scale = s.scale ? *s.scale : 1.0 / std::sqrt(static_cast<double>(p.dK()));
  MatrixD w = scale * q * k.transpose();
  for (int r = 0; r < w.rows(); ++r) {
    const int i = row0 + r;
    double max = -std::numeric_limits<double>::infinity();
    std::vector<bool> ok(static_cast<std::size_t>(w.cols()));
    for (int j = 0; j < w.cols(); ++j) {
      bool allowed = s.mask != MaskKind::Causal || j <= i;
      if (s.mask == MaskKind::Explicit) allowed = s.explicit_mask(i, j) != 0;
      if (!s.key_padding.empty() && s.key_padding[static_cast<std::size_t>(j)]) allowed = false;
      ok[static_cast<std::size_t>(j)] = allowed;
      if (allowed) max = std::max(max, w(r, j));
    }
    double sum = 0;
    for (int j = 0; j < w.cols(); ++j) {
      w(r, j) = ok[static_cast<std::size_t>(j)] ? std::exp(w(r, j) - max) : 0.0;
      sum += w(r, j);
    }
    if (sum > 0) w.row(r) /= sum;
  }
  return w;
}

}  // namespace attnscope::test
