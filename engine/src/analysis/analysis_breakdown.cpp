// The score breakdown of one cell: the d_k products that make q_i . k_j, the scale, the score, the row's
// softmax step by step, and (for small d_model) the input products that make q_i and k_j.
#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/analysis_common.h"
#include "attnscope/analysis/analysis.h"
#include "attnscope/compute/scene_rope.h"
#include "attnscope/compute/tiles.h"

namespace attnscope {

namespace {

// x: (d_model) one input row; w: (d_model, d_k) -> (d_model, d_k) of x[d] * w[d][t].
Matrix inputProducts(const Eigen::Ref<const RowVector>& x, const Matrix& w) {
  Matrix products(w.rows(), w.cols());
  for (Eigen::Index d = 0; d < w.rows(); ++d) products.row(d) = x[d] * w.row(d);
  return products;
}

RowVector biasOrZero(const std::optional<RowVector>& bias, Eigen::Index size) {
  return bias ? *bias : RowVector::Zero(size);
}

}  // namespace

CellBreakdown scoreBreakdown(const Scene& scene, const Result& result, int head, int query, int key) {
  detail::checkIndex("head", head, scene.numHeads());
  detail::checkIndex("query", query, scene.nQ());
  detail::checkIndex("key", key, scene.nK());
  detail::checkResultMatches(scene, result);
  const HeadResult& hr = result.heads[static_cast<std::size_t>(head)];
  const HeadParams& params = scene.heads[static_cast<std::size_t>(head)];
  const int d_k = params.dK();

  CellBreakdown b;
  b.head = head;
  b.query = query;
  b.key = key;
  b.q = hr.q.row(query);  // (d_k)
  b.k = hr.k().row(key);    // (d_k)
  for (int t = 0; t < d_k; ++t) {
    b.terms.push_back({t, static_cast<double>(b.q[t]) * static_cast<double>(b.k[t])});
    b.dot += b.terms.back().product;
  }
  std::stable_sort(b.terms.begin(), b.terms.end(),
                   [](const ScoreTerm& x, const ScoreTerm& y) { return std::abs(x.product) > std::abs(y.product); });
  b.scale = scene.headScale(head);
  b.score = b.dot * b.scale;
  if (hr.scores.rows() == scene.nQ() && hr.scores.cols() == scene.nK()) b.engine_score = hr.scores(query, key);
  if (hr.hasMap()) {
    b.engine_weight = hr.weights(query, key);
  } else {  // one cell through a tile, from the row statistics
    TileRequest cell{.head = head, .row0 = query, .row1 = query + 1, .col0 = key, .col1 = key + 1};
    b.engine_weight = weightTile(scene, result, cell).values(0, 0);
  }

  // The row's softmax: max over the unmasked keys, exp of each, their sum, each weight.
  const KeyMask allowed(scene);
  double row_max = -std::numeric_limits<double>::infinity();
  b.row.resize(static_cast<std::size_t>(scene.nK()));
  for (int j = 0; j < scene.nK(); ++j) {
    SoftmaxEntry& e = b.row[static_cast<std::size_t>(j)];
    e.key = j;
    e.masked = !allowed.allowed(query, j);
    e.score = hr.q.row(query).cast<double>().dot(hr.k().row(j).cast<double>()) * b.scale;
    if (!e.masked) row_max = std::max(row_max, e.score);
  }
  const bool row_empty = !std::isfinite(row_max);
  b.row_max = row_empty ? 0.0 : row_max;
  for (SoftmaxEntry& e : b.row)
    if (!e.masked) {
      e.exp = std::exp(e.score - b.row_max);
      b.exp_sum += e.exp;
    }
  for (SoftmaxEntry& e : b.row)
    if (!e.masked) e.weight = e.exp / b.exp_sum;
  const SoftmaxEntry& cell = b.row[static_cast<std::size_t>(key)];
  b.masked = cell.masked;
  b.weight = cell.weight;

  if (scene.rope) {  // the rotation turns q_i and k_j by their positions: show both sides of it
    b.q_before_rope = queryBeforeRope(scene, head).row(query);
    b.k_before_rope = keyBeforeRope(scene, head).row(key);
    b.query_position = scene.queryPositions()[static_cast<std::size_t>(query)];
    b.key_position = scene.keyPositions()[static_cast<std::size_t>(key)];
  }
  if (hasHeadNorm(scene)) {
    b.q_projected = queryProjection(scene, head).row(query);
    b.k_projected = keyProjection(scene, head).row(key);
  }
  if (scene.d_model <= kBreakdownMaxInputDims) {
    b.query_products = inputProducts(scene.query.row(query), params.w_q);
    b.key_products = inputProducts(scene.keyRows().row(key), scene.wK(head));
    b.query_bias = biasOrZero(params.b_q, d_k);
    b.key_bias = biasOrZero(scene.bK(head), d_k);
  }
  return b;
}

}  // namespace attnscope
