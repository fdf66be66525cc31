// Head similarity (cosine of flattened maps, Jensen-Shannon over rows) and per-head statistics.
#include "attnscope/compute/similarity.h"

#include "attnscope/scene/key_mask.h"
#include "similarity_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace attnscope {

// JS(p, q) = 1/2 KL(p || m) + 1/2 KL(q || m), m = (p + q) / 2, in nats, each term p log(p / m) taken as
// p log(2 p / (p + q)): m of a normal p beside q = 0 can be subnormal, which GPUs flush to 0 (an H100 gave
// JS = inf). A term whose weight or ratio is subnormal adds under 1e-36 and is left out; the GPU backend
// (similarity_pair.comp) uses the same rule.
double jensenShannonRow(const Eigen::ArrayXf& p, const Eigen::ArrayXf& q) {
  constexpr float kMinNormal = std::numeric_limits<float>::min();
  const Eigen::ArrayXf sum = p + q;
  const Eigen::ArrayXf ratio_p = 2.0f * (p / sum), ratio_q = 2.0f * (q / sum);
  const Eigen::ArrayXf kl_p = (p >= kMinNormal && ratio_p >= kMinNormal).select(p * ratio_p.log(), 0.0f);
  const Eigen::ArrayXf kl_q = (q >= kMinNormal && ratio_q >= kMinNormal).select(q * ratio_q.log(), 0.0f);
  return 0.5 * static_cast<double>(kl_p.sum()) + 0.5 * static_cast<double>(kl_q.sum());
}

// A map flattened to one vector; dot products over it accumulate in double (a float sum over millions of
// weights drifts by ~1e-5).
static Eigen::Map<const Eigen::VectorXf> flat(const Matrix& m) { return {m.data(), m.size()}; }

namespace {

double flatNorm(const Matrix& m) { return flat(m).cast<double>().norm(); }

// Cosine and mean Jensen-Shannon of two maps; norms given (each map's is shared by h - 1 pairs).
void comparePair(const Matrix& wa, const Matrix& wb, double norm_a, double norm_b, float& cosine, float& js) {
  const double denom = norm_a * norm_b;
  cosine = denom > 0 ? static_cast<float>(flat(wa).cast<double>().dot(flat(wb).cast<double>()) / denom) : 0.0f;
  // Rows where either head attends nothing (fully masked) have no distribution to compare.
  double sum = 0;
  int rows = 0;
  for (Eigen::Index i = 0; i < wa.rows(); ++i) {
    if (wa.row(i).sum() <= 0 || wb.row(i).sum() <= 0) continue;
    sum += jensenShannonRow(wa.row(i).transpose().array(), wb.row(i).transpose().array());
    ++rows;
  }
  js = rows ? static_cast<float>(sum / rows) : 0.0f;
}

// Fills the given pairs (a, b), a != b, of `s` symmetrically; pairs spread over the OpenMP threads, since the
// O(h^2 n_q n_k) comparisons are the analysis' whole cost.
void comparePairs(const std::vector<const Matrix*>& weights, const std::vector<std::pair<int, int>>& pairs,
                  Similarity& s) {
  std::vector<double> norms(weights.size());
  for (std::size_t a = 0; a < weights.size(); ++a) norms[a] = flatNorm(*weights[a]);
  const int count = static_cast<int>(pairs.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int p = 0; p < count; ++p) {
    const auto [a, b] = pairs[static_cast<std::size_t>(p)];
    float cosine = 0, js = 0;
    comparePair(*weights[static_cast<std::size_t>(a)], *weights[static_cast<std::size_t>(b)],
                norms[static_cast<std::size_t>(a)], norms[static_cast<std::size_t>(b)], cosine, js);
    s.cosine(a, b) = s.cosine(b, a) = cosine;
    s.js(a, b) = s.js(b, a) = js;
  }
}

}  // namespace

Similarity headSimilarity(const std::vector<const Matrix*>& weights) {
  const int h = static_cast<int>(weights.size());
  Similarity s;
  s.cosine = Matrix::Identity(h, h);
  s.js = Matrix::Zero(h, h);
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < h; ++a)
    for (int b = a + 1; b < h; ++b) pairs.emplace_back(a, b);
  comparePairs(weights, pairs, s);
  return s;
}

void updateHeadSimilarity(const std::vector<const Matrix*>& weights, int head, Similarity& similarity) {
  std::vector<std::pair<int, int>> pairs;
  for (int b = 0; b < static_cast<int>(weights.size()); ++b)
    if (b != head) pairs.emplace_back(head, b);
  comparePairs(weights, pairs, similarity);
}

void analyseHeads(Result& result, const std::vector<std::uint8_t>& single_key_rows) {
  std::vector<const Matrix*> maps;
  for (const HeadResult& hr : result.heads) maps.push_back(&hr.weights);
  result.similarity = headSimilarity(maps);
  result.stats.clear();
  for (const HeadResult& hr : result.heads) result.stats.push_back(headStats(hr.weights, single_key_rows));
}

std::vector<std::uint8_t> singleKeyRows(const Scene& scene) {
  const KeyMask mask(scene);  // from indices: O(n) per scene for causal and padding masks, no (n, n) matrix
  std::vector<std::uint8_t> rows(static_cast<std::size_t>(scene.nQ()), 0);
  for (int i = 0; i < scene.nQ(); ++i) rows[static_cast<std::size_t>(i)] = mask.allowedCount(i) == 1;
  return rows;
}

void HeadStatsSum::addRow(const float* w, int n_k, int i) {
  double row_entropy = 0, row_distance = 0, row_sum = 0;
  float row_max = 0;
  for (int j = 0; j < n_k; ++j) {
    const double wj = w[j];
    row_sum += wj;
    if (wj > 0) row_entropy -= wj * std::log(wj);
    row_distance += wj * static_cast<double>(std::labs(static_cast<long>(i - j)));
    row_max = std::max(row_max, w[j]);
  }
  max_weight = std::max(max_weight, row_max);
  if (row_sum <= 0) return;  // a fully masked row attends nothing
  entropy += row_entropy;
  distance += row_distance;
  ++rows;
}

HeadStats HeadStatsSum::finish() const {
  HeadStats stats;
  stats.entropy = rows ? static_cast<float>(entropy / rows) : 0.0f;
  stats.mean_distance = rows ? static_cast<float>(distance / rows) : 0.0f;
  stats.max_weight = max_weight;
  return stats;
}

HeadStats headStats(const Matrix& weights, const std::vector<std::uint8_t>& single_key_rows) {
  HeadStatsSum sum;
  for (Eigen::Index i = 0; i < weights.rows(); ++i) {
    if (static_cast<std::size_t>(i) < single_key_rows.size() && single_key_rows[static_cast<std::size_t>(i)])
      continue;  // weight 1 on its one key by construction: nothing about the head
    sum.addRow(weights.row(i).data(), static_cast<int>(weights.cols()), static_cast<int>(i));
  }
  return sum.finish();
}

}  // namespace attnscope
