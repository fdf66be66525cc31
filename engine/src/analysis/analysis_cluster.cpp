// Head clustering: UPGMA (average linkage) on 1 - cosine or on the Jensen-Shannon divergence between heads,
// giving the dendrogram's merges and the leaf order the heads grid and the similarity matrix can follow.
#include <functional>
#include <limits>
#include <string>

#include "attnscope/analysis/analysis.h"
#include "attnscope/error.h"

namespace attnscope {

ClusterMetric parseClusterMetric(const std::string& name) {
  if (name == "cosine") return ClusterMetric::Cosine;
  if (name == "js") return ClusterMetric::JensenShannon;
  throw InputError("metric", "cosine or js", "'" + name + "'");
}

Eigen::MatrixXd clusterDistance(const Similarity& similarity, ClusterMetric metric) {
  // (h, h), zero diagonal
  Eigen::MatrixXd d;
  if (metric == ClusterMetric::Cosine)
    d = (1.0 - similarity.cosine.cast<double>().array()).matrix();
  else
    d = similarity.js.cast<double>();
  d.diagonal().setZero();
  return d;
}

// UPGMA, the textbook agglomerative algorithm (Sokal & Michener 1958; SciPy's linkage(method='average')):
//   start with every head its own cluster; repeat h - 1 times: merge the two active clusters a, b at the least
//   distance; the new cluster's distance to every other active cluster c is the size-weighted mean
//   (|a| d(a, c) + |b| d(b, c)) / (|a| + |b|), which equals the mean distance over all pairs of heads across
//   the two clusters.
// O(h^3) with h <= 64 heads. Ties: the first pair (a, b), a < b, in order of cluster id (a, then b).
Clustering clusterUpgma(const Eigen::MatrixXd& distance) {
  const int h = static_cast<int>(distance.rows());
  if (h < 1 || distance.cols() != h)
    throw InputError("distance", "a square matrix of at least 1 x 1", shapeString(distance.rows(), distance.cols()));
  const int ids = 2 * h - 1;
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(ids, ids);  // distances between cluster ids
  d.topLeftCorner(h, h) = distance;
  std::vector<int> size(static_cast<std::size_t>(ids), 1);
  std::vector<bool> active(static_cast<std::size_t>(ids), false);
  std::vector<std::pair<int, int>> children(static_cast<std::size_t>(ids), {-1, -1});
  for (int i = 0; i < h; ++i) active[static_cast<std::size_t>(i)] = true;

  Clustering c;
  for (int k = 0; k < h - 1; ++k) {
    int best_a = -1, best_b = -1;
    double best = std::numeric_limits<double>::infinity();
    for (int a = 0; a < h + k; ++a) {
      if (!active[static_cast<std::size_t>(a)]) continue;
      for (int b = a + 1; b < h + k; ++b)
        if (active[static_cast<std::size_t>(b)] && (best_a < 0 || d(a, b) < best)) {
          best = d(a, b);
          best_a = a;
          best_b = b;
        }
    }
    const int merged = h + k;
    const int sa = size[static_cast<std::size_t>(best_a)], sb = size[static_cast<std::size_t>(best_b)];
    size[static_cast<std::size_t>(merged)] = sa + sb;
    children[static_cast<std::size_t>(merged)] = {best_a, best_b};
    active[static_cast<std::size_t>(best_a)] = active[static_cast<std::size_t>(best_b)] = false;
    for (int other = 0; other < merged; ++other) {
      if (!active[static_cast<std::size_t>(other)]) continue;
      d(merged, other) = d(other, merged) = (sa * d(best_a, other) + sb * d(best_b, other)) / (sa + sb);
    }
    active[static_cast<std::size_t>(merged)] = true;
    c.merges.push_back({best_a, best_b, best, sa + sb});
  }
  // Leaves left to right: the root's first child (a) before its second (b), recursively.
  const std::function<void(int)> visit = [&](int id) {
    if (id < h) {
      c.order.push_back(id);
      return;
    }
    visit(children[static_cast<std::size_t>(id)].first);
    visit(children[static_cast<std::size_t>(id)].second);
  };
  visit(ids - 1);
  return c;
}

Clustering clusterHeads(const Similarity& similarity, ClusterMetric metric) {
  return clusterUpgma(clusterDistance(similarity, metric));
}

}  // namespace attnscope
