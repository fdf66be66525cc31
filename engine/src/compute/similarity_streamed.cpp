// Head similarity and statistics without the maps: every head's weights streamed through weightRows, a block
// of query rows at a time, into the same per-row sums the full-map path takes. O(h x block x n_k) memory.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "attnscope/compute/similarity.h"
#include "attnscope/compute/tiles.h"
#include "similarity_rows.h"

namespace attnscope {

void analyseHeadsStreamed(const Scene& scene, Result& result) {
  const int h = static_cast<int>(result.heads.size()), n_q = scene.nQ(), n_k = scene.nK();
  if (h == 0 || n_q == 0 || n_k == 0) {
    result.similarity = {};
    result.stats.clear();
    return;
  }
  // Query rows per block: the h blocks of weights together stay near 64 MiB.
  const int block = std::clamp(static_cast<int>((std::size_t{16} << 20) / (static_cast<std::size_t>(h) * n_k)), 1,
                               std::max(1, n_q));
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < h; ++a)
    for (int b = a + 1; b < h; ++b) pairs.emplace_back(a, b);
  std::vector<double> norm2(static_cast<std::size_t>(h)), dot(pairs.size()), js(pairs.size());
  std::vector<int> js_rows(pairs.size());
  std::vector<HeadStatsSum> stats(static_cast<std::size_t>(h));
  std::vector<Matrix> weights(static_cast<std::size_t>(h));
  const std::vector<std::uint8_t> single_key_rows = singleKeyRows(scene);  // left out of the statistics
  const KeyMask mask(scene);

  for (int row0 = 0; row0 < n_q; row0 += block) {
    const int row1 = std::min(n_q, row0 + block), rows = row1 - row0;
#pragma omp parallel for schedule(dynamic, 1)
    for (int a = 0; a < h; ++a) {
      Matrix& w = weights[static_cast<std::size_t>(a)];
      weightRows(scene, result, mask, a, row0, row1, w);
      norm2[static_cast<std::size_t>(a)] += Eigen::Map<const Eigen::VectorXf>(w.data(), w.size()).cast<double>().squaredNorm();
      for (int r = 0; r < rows; ++r)
        if (!single_key_rows[static_cast<std::size_t>(row0 + r)])
          stats[static_cast<std::size_t>(a)].addRow(w.row(r).data(), n_k, row0 + r);
    }
    const int count = static_cast<int>(pairs.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int p = 0; p < count; ++p) {
      const auto [a, b] = pairs[static_cast<std::size_t>(p)];
      const Matrix& wa = weights[static_cast<std::size_t>(a)];
      const Matrix& wb = weights[static_cast<std::size_t>(b)];
      dot[static_cast<std::size_t>(p)] += Eigen::Map<const Eigen::VectorXf>(wa.data(), wa.size())
                                              .cast<double>()
                                              .dot(Eigen::Map<const Eigen::VectorXf>(wb.data(), wb.size()).cast<double>());
      for (int r = 0; r < rows; ++r) {
        if (wa.row(r).sum() <= 0 || wb.row(r).sum() <= 0) continue;  // a row that attends nothing
        js[static_cast<std::size_t>(p)] += jensenShannonRow(wa.row(r).transpose().array(), wb.row(r).transpose().array());
        ++js_rows[static_cast<std::size_t>(p)];
      }
    }
  }

  result.similarity.cosine = Matrix::Identity(h, h);
  result.similarity.js = Matrix::Zero(h, h);
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const auto [a, b] = pairs[p];
    const double denom = std::sqrt(norm2[static_cast<std::size_t>(a)]) * std::sqrt(norm2[static_cast<std::size_t>(b)]);
    const float cosine = denom > 0 ? static_cast<float>(dot[p] / denom) : 0.0f;
    const float divergence = js_rows[p] ? static_cast<float>(js[p] / js_rows[p]) : 0.0f;
    result.similarity.cosine(a, b) = result.similarity.cosine(b, a) = cosine;
    result.similarity.js(a, b) = result.similarity.js(b, a) = divergence;
  }
  result.stats.clear();
  for (const HeadStatsSum& s : stats) result.stats.push_back(s.finish());
}

}  // namespace attnscope
