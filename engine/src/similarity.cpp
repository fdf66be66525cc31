// Head similarity (cosine of flattened maps, Jensen-Shannon over rows) and per-head statistics.
#include "attnscope/similarity.h"

#include <cmath>
#include <cstdlib>

namespace attnscope {

// JS(p, q) = 1/2 KL(p || m) + 1/2 KL(q || m), m = (p + q) / 2, in nats; terms with p = 0 contribute 0.
static double jensenShannonRow(const Eigen::ArrayXf& p, const Eigen::ArrayXf& q) {
  const Eigen::ArrayXf m = 0.5f * (p + q);
  const Eigen::ArrayXf kl_p = (p > 0).select(p * (p / m).log(), 0.0f);
  const Eigen::ArrayXf kl_q = (q > 0).select(q * (q / m).log(), 0.0f);
  return 0.5 * static_cast<double>(kl_p.sum()) + 0.5 * static_cast<double>(kl_q.sum());
}

// A map flattened to one vector; dot products over it accumulate in double (a float sum over millions of
// weights drifts by ~1e-5).
static Eigen::Map<const Eigen::VectorXf> flat(const Matrix& m) { return {m.data(), m.size()}; }

Similarity headSimilarity(const std::vector<const Matrix*>& weights) {
  const Eigen::Index h = static_cast<Eigen::Index>(weights.size());
  Similarity s;
  s.cosine = Matrix::Identity(h, h);
  s.js = Matrix::Zero(h, h);
  std::vector<double> norms(static_cast<std::size_t>(h));
  for (Eigen::Index a = 0; a < h; ++a) norms[static_cast<std::size_t>(a)] = flat(*weights[static_cast<std::size_t>(a)]).cast<double>().norm();
  for (Eigen::Index a = 0; a < h; ++a) {
    const Matrix& wa = *weights[static_cast<std::size_t>(a)];
    for (Eigen::Index b = a + 1; b < h; ++b) {
      const Matrix& wb = *weights[static_cast<std::size_t>(b)];
      const double denom = norms[static_cast<std::size_t>(a)] * norms[static_cast<std::size_t>(b)];
      const double dot = flat(wa).cast<double>().dot(flat(wb).cast<double>());
      const float cosine = denom > 0 ? static_cast<float>(dot / denom) : 0.0f;
      // Rows where either head attends nothing (fully masked) have no distribution to compare.
      double js = 0;
      int rows = 0;
      for (Eigen::Index i = 0; i < wa.rows(); ++i) {
        if (wa.row(i).sum() <= 0 || wb.row(i).sum() <= 0) continue;
        js += jensenShannonRow(wa.row(i).transpose().array(), wb.row(i).transpose().array());
        ++rows;
      }
      s.cosine(a, b) = s.cosine(b, a) = cosine;
      s.js(a, b) = s.js(b, a) = rows ? static_cast<float>(js / rows) : 0.0f;
    }
  }
  return s;
}

HeadStats headStats(const Matrix& weights) {
  HeadStats stats;
  double entropy = 0, distance = 0;
  int rows = 0;
  for (Eigen::Index i = 0; i < weights.rows(); ++i) {
    double row_entropy = 0, row_distance = 0, row_sum = 0;
    for (Eigen::Index j = 0; j < weights.cols(); ++j) {
      const double w = weights(i, j);
      row_sum += w;
      if (w > 0) row_entropy -= w * std::log(w);
      row_distance += w * static_cast<double>(std::labs(static_cast<long>(i - j)));
    }
    if (row_sum <= 0) continue;  // a fully masked row attends nothing
    entropy += row_entropy;
    distance += row_distance;
    ++rows;
  }
  stats.entropy = rows ? static_cast<float>(entropy / rows) : 0.0f;
  stats.mean_distance = rows ? static_cast<float>(distance / rows) : 0.0f;
  stats.max_weight = weights.size() ? weights.maxCoeff() : 0.0f;
  return stats;
}

}  // namespace attnscope
