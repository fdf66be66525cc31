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

// Mask variants of a random scene (d_model 16, seeds seed + variant): 0 none, 1 causal, 2 causal with every 7th
// key padded, 3 an explicit mask ((31 i + 17 j) % 5 == 0 masked) with that padding and row 3 fully masked.
inline Scene maskedScene(int n, int heads, int variant, std::uint64_t seed) {
  Scene s = randomScene(n, heads, 16, variant == 1 || variant == 2, seed + static_cast<std::uint64_t>(variant));
  if (variant >= 2) {
    s.key_padding.assign(static_cast<std::size_t>(n), 0);
    for (int j = 5; j < n; j += 7) s.key_padding[static_cast<std::size_t>(j)] = 1;
  }
  if (variant == 3) {
    s.mask = MaskKind::Explicit;
    s.explicit_mask = MaskMatrix::Ones(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if ((i * 31 + j * 17) % 5 == 0) s.explicit_mask(i, j) = 0;
    for (int j = 0; j < n; ++j) s.explicit_mask(3, j) = 0;  // a fully masked row: its cells masked, weights 0
  }
  return s;
}

// Whether query i may attend key j, from the scene's fields.
inline bool referenceAllowed(const Scene& s, int i, int j) {
  bool allowed = s.mask != MaskKind::Causal || j <= i;
  if (s.mask == MaskKind::Explicit) allowed = s.explicit_mask(i, j) != 0;
  if (!s.key_padding.empty() && s.key_padding[static_cast<std::size_t>(j)]) allowed = false;
  return allowed;
}

// An independent reference for rows [row0, row1) of head `head`: projections, scores, mask and softmax in
// double, straight from the scene's inputs (no code under test but the scene's fields). When given, `max` and
// `sum` get each row's largest allowed scaled score (-inf when none) and sum of exp(score - max) (row1 - row0).
inline MatrixD referenceRows(const Scene& s, int head, int row0, int row1, std::vector<double>* max_out = nullptr,
                             std::vector<double>* sum_out = nullptr) {
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
      const bool allowed = referenceAllowed(s, i, j);
      ok[static_cast<std::size_t>(j)] = allowed;
      if (allowed) max = std::max(max, w(r, j));
    }
    double sum = 0;
    for (int j = 0; j < w.cols(); ++j) {
      w(r, j) = ok[static_cast<std::size_t>(j)] ? std::exp(w(r, j) - max) : 0.0;
      sum += w(r, j);
    }
    if (sum > 0) w.row(r) /= sum;
    if (max_out) max_out->push_back(max);
    if (sum_out) sum_out->push_back(sum);
  }
  return w;
}

// How far float32 arithmetic may move head `head`'s weights in rows [row0, row1), from the scene's own numbers:
// Higham's bound, which holds for any summation order, FMA or not, any SIMD width (u = 2^-24, gamma_k =
// k u / (1 - k u)). q and k are dots of d_model products plus a bias: |dq_ic| <= gamma_{dm+1} (|x_i| |W_q| + |b_q|)_c,
// likewise dk. A score is a scaled dot of d_k products: |ds_ij| <= scale (gamma_{dk+1} sum_c |q_ic| |k_jc| +
// sum_c (|dq_ic| |k_jc| + |q_ic| |dk_jc|)). The softmax moves w_ij by w_ij (ds_ij - sum_j' w_ij' ds_ij') to first
// order, and its own exp(s - m) (argument and result), row sum (n terms) and division add w_ij (|s_ij - m_i| u +
// (n + 4) u). So |dw_ij| <= w_ij (2 max_j' |ds_ij'| + |s_ij - m_i| u + (n + 4) u), taken here as its largest over
// the rows, doubled for the second-order terms.
inline double referenceWeightBound(const Scene& s, int head, int row0, int row1) {
  constexpr double u = 0x1p-24;
  const auto gamma = [](int k) { return k * u / (1 - k * u); };
  const HeadParams& p = s.heads[static_cast<std::size_t>(head)];
  const MatrixD x = s.query.cast<double>().middleRows(row0, row1 - row0), keys = s.keyRows().cast<double>();
  const MatrixD wq = p.w_q.cast<double>(), wk = p.w_k.cast<double>();
  MatrixD q = x * wq, k = keys * wk;
  MatrixD dq = x.cwiseAbs() * wq.cwiseAbs(), dk = keys.cwiseAbs() * wk.cwiseAbs();
  if (p.b_q) q.rowwise() += p.b_q->cast<double>(), dq.rowwise() += p.b_q->cast<double>().cwiseAbs();
  if (p.b_k) k.rowwise() += p.b_k->cast<double>(), dk.rowwise() += p.b_k->cast<double>().cwiseAbs();
  const int d_model = static_cast<int>(wq.rows()), d_k = static_cast<int>(wq.cols());
  dq *= gamma(d_model + 1), dk *= gamma(d_model + 1);
  const double scale = s.scale ? *s.scale : 1.0 / std::sqrt(static_cast<double>(p.dK()));
  const MatrixD ds = scale * (gamma(d_k + 1) * q.cwiseAbs() * k.cwiseAbs().transpose() +
                              dq * k.cwiseAbs().transpose() + q.cwiseAbs() * dk.transpose());
  const MatrixD scores = scale * q * k.transpose();
  const MatrixD w = referenceRows(s, head, row0, row1);
  double bound = 0;
  for (int r = 0; r < w.rows(); ++r) {
    double top = -std::numeric_limits<double>::infinity(), worst_ds = 0;
    for (int j = 0; j < w.cols(); ++j)
      if (referenceAllowed(s, row0 + r, j)) top = std::max(top, scores(r, j)), worst_ds = std::max(worst_ds, ds(r, j));
    for (int j = 0; j < w.cols(); ++j)
      if (referenceAllowed(s, row0 + r, j))
        bound = std::max(bound, w(r, j) * (2 * worst_ds + std::abs(scores(r, j) - top) * u + (w.cols() + 4) * u));
  }
  return 2 * bound;
}

// The whole reference map `ref` (n_q, n_k) max-pooled to (out_rows, out_cols) over allowed cells only, block
// edges worked out by hand (block y covers the rows i with ceil(y n / out) <= i < ceil((y + 1) n / out));
// `masked` 1 where a block has no allowed cell.
inline void referencePooledMax(const Scene& s, const MatrixD& ref, int out_rows, int out_cols, MatrixD& want,
                               MaskMatrix& masked) {
  const int n_q = static_cast<int>(ref.rows()), n_k = static_cast<int>(ref.cols());
  want = MatrixD::Zero(out_rows, out_cols);
  masked = MaskMatrix::Ones(out_rows, out_cols);
  for (int y = 0; y < out_rows; ++y) {
    const int r0 = (y * n_q + out_rows - 1) / out_rows, r1 = ((y + 1) * n_q + out_rows - 1) / out_rows;
    for (int x = 0; x < out_cols; ++x) {
      const int c0 = (x * n_k + out_cols - 1) / out_cols, c1 = ((x + 1) * n_k + out_cols - 1) / out_cols;
      for (int i = r0; i < r1; ++i)
        for (int j = c0; j < c1; ++j) {
          if (!referenceAllowed(s, i, j)) continue;
          masked(y, x) = 0;
          want(y, x) = std::max(want(y, x), ref(i, j));
        }
    }
  }
}

}  // namespace attnscope::test
