// Mixtral's routed MLP (transformers' MixtralSparseMoeBlock): router logits = gate(x) (n, n_experts); per row a
// softmax over the experts, the top experts_per_tok, their weights renormalised to sum 1; the row's output is the
// weighted sum of those experts' w2(silu(w1 x) * w3 x). Each expert runs once, on the rows routed to it gathered
// into one matrix (BLAS on (rows, hidden) x (hidden, 2 intermediate)).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "model/arch/model_view.h"

namespace attnscope::model {

std::size_t routedMlpBytes(const Architecture& a, int n) {
  const std::size_t rows = static_cast<std::size_t>(n) * static_cast<std::size_t>(a.experts_per_tok);
  const std::size_t hidden = static_cast<std::size_t>(a.hidden), inter = static_cast<std::size_t>(a.intermediate);
  // logits; per routed row its gathered input, gate|up, the activation and the expert's output
  return 4 * (static_cast<std::size_t>(n) * static_cast<std::size_t>(a.n_experts) + rows * (2 * hidden + 3 * inter));
}

ExpertRoutes routeTokens(const Architecture& a, const Matrix& logits) {
  const int experts = a.n_experts, k = a.experts_per_tok;
  ExpertRoutes routed(static_cast<std::size_t>(experts));
  std::vector<int> order(static_cast<std::size_t>(experts));
  for (long i = 0; i < logits.rows(); ++i) {
    const auto row = logits.row(i);
    std::iota(order.begin(), order.end(), 0);
    // Largest logit first (softmax keeps the order); ties to the lower index, as torch.topk keeps them.
    std::stable_sort(order.begin(), order.end(), [&](int p, int q) { return row[p] > row[q]; });
    // Renormalised top-k softmax: the full softmax's denominator cancels, leaving exp(l - max) over the chosen.
    const float top = row[order[0]];
    float sum = 0;
    for (int j = 0; j < k; ++j) sum += std::exp(row[order[static_cast<std::size_t>(j)]] - top);
    for (int j = 0; j < k; ++j) {
      const int e = order[static_cast<std::size_t>(j)];
      routed[static_cast<std::size_t>(e)].push_back({i, std::exp(row[e] - top) / sum});
    }
  }
  return routed;
}

void routedMlpAdd(const Architecture& a, const LayerView& L, const Matrix& x, Matrix& out) {
  const int experts = a.n_experts, inter = a.intermediate;
  const Matrix logits = x * L.router->transpose();  // (n, experts)
  const ExpertRoutes routed = routeTokens(a, logits);  // expert -> the rows routed to it and their weights
  Matrix in, up, act, down;
  for (int e = 0; e < experts; ++e) {
    const auto& rows = routed[static_cast<std::size_t>(e)];
    if (rows.empty()) continue;
    const long r = static_cast<long>(rows.size());
    in.resize(r, x.cols());
    for (long t = 0; t < r; ++t) in.row(t) = x.row(rows[static_cast<std::size_t>(t)].first);
    up.noalias() = in * (*L.expert_up)[static_cast<std::size_t>(e)].transpose();  // (r, 2 inter): w1 x | w3 x
    act = up.leftCols(inter);
    act.array() = act.array() / (1.0f + (-act.array()).exp()) * up.rightCols(inter).array();  // silu(w1 x) * w3 x
    down.noalias() = act * (*L.expert_down)[static_cast<std::size_t>(e)].transpose();  // (r, hidden)
    for (long t = 0; t < r; ++t) {
      const auto& [row, weight] = rows[static_cast<std::size_t>(t)];
      out.row(row) += weight * down.row(t);
    }
  }
}

}  // namespace attnscope::model
