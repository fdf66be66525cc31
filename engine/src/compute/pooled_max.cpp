// Max-pooled tiles of a head without its map, recomputed in large blocks: one GEMM of a band of query rows
// (up to 256) against a block of keys (512), the largest allowed raw score of each (row, pooled column) kept,
// and exp(s - m_i) / l_i taken once per (row, pooled column) at the end: exp is monotone, so the block's
// largest weight is the weight of its largest score. Blocks the mask excludes entirely are skipped.
// overviewRows runs the same loop from Q and K alone, keeping each row's online max and sum as flash does, so
// that a head's overview needs no forward pass (no V, no P V) before it.
// A per-key scale c_j (value-norm weighting) rides on the score kept per pooled column: c exp(s - m) / l =
// exp(s + ln c - m) / l, so the largest s + ln c gives the block's largest scaled weight; m and l (the softmax's
// own statistics) are of the plain scores.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "compute/soft_cap.h"

namespace attnscope {

namespace {

constexpr int kBandRows = 256;   // query rows per GEMM: K is read once per 256 queries, not per pooled row
constexpr int kKeyBlock = 512;   // keys per GEMM: a (256, 512) block of scores is 512 KiB, inside L2
constexpr float kNoScore = -std::numeric_limits<float>::infinity();  // no allowed cell in this column yet
// The online max before any allowed key: finite, so exp(kNoScore - m) is 0 and m - m' is never inf - inf (NaN).
constexpr float kStartMax = -std::numeric_limits<float>::max() / 2;
// ln 0 for a key of scale 0: finite, so its allowed cells stay "allowed" (above kNoScore) and exp gives 0.
constexpr float kLogZero = -1e30f;

// ln c_j per key (n_k), kLogZero for c_j = 0; empty for no scale.
RowVector logScales(const RowVector* key_scale) {
  if (!key_scale) return {};
  RowVector out(key_scale->size());
  for (Eigen::Index j = 0; j < out.size(); ++j) out[j] = (*key_scale)[j] > 0 ? std::log((*key_scale)[j]) : kLogZero;
  return out;
}

// Output rows [y0, y1) that pool tile rows [r0, r1) (relative to the tile's row0).
struct Band {
  int y0, y1, r0, r1;
};

// Consecutive output rows grouped until their query rows would pass kBandRows (a band holds at least one).
std::vector<Band> bandsOf(int y0, int y1, int out_rows, int rows) {
  std::vector<Band> bands;
  for (int y = y0; y < y1;) {
    const auto [lo, hi] = pooledRange(y, out_rows, rows);
    Band band{y, y + 1, lo, hi};
    for (++y; y < y1; ++y) {
      const int next_hi = pooledRange(y, out_rows, rows).second;
      if (next_hi - band.r0 > kBandRows) break;
      band.r1 = std::max(band.r1, next_hi);
      band.y1 = y + 1;
    }
    bands.push_back(band);
  }
  return bands;
}

// What one pooled pass reads: q (n_q, d_k) and k (n_k, d_k) of the head, the cells [row0, row0 + rows) x
// [col0, col0 + cols) pooled to (out_rows, out_cols). Row statistics: read from `m_in`, `l_in` (n_q), or, when
// `m_out`, `l_out` are given, computed on the way (every key of a band's rows is then seen: cols = n_k).
struct PoolPass {
  const Scene& scene;
  const KeyMask& mask;
  const Matrix& q;
  const Matrix& k;
  float scale;
  float cap;  // > 0: scores soft-capped, s -> cap tanh(s / cap) (Result::score_cap)
  int row0, rows, col0, cols, out_rows, out_cols;
  const float* m_in;
  const float* l_in;
  float* m_out;  // null: statistics read, not computed
  float* l_out;
  const float* log_scale;  // (n_k) ln c_j added to the kept scores, or null
};

// Output rows [y0, y1) of the pass into `tile` (already (out_rows, out_cols)).
void poolRows(const PoolPass& p, int y0, int y1, Tile& tile) {
  std::vector<std::pair<int, int>> col_ranges(static_cast<std::size_t>(p.out_cols));
  for (int x = 0; x < p.out_cols; ++x) col_ranges[static_cast<std::size_t>(x)] = pooledRange(x, p.out_cols, p.cols);
  const std::vector<Band> bands = bandsOf(y0, y1, p.out_rows, p.rows);
  const int band_count = static_cast<int>(bands.size()), out_cols = p.out_cols;
  const bool online = p.m_out != nullptr;

#pragma omp parallel
  {
    Matrix scores;  // (band rows, key block) scaled scores
    Matrix peak;    // (band rows, out_cols) the largest allowed scaled score under each pooled column
    Eigen::Array<float, Eigen::Dynamic, 1> m, l;  // (band rows) online row max and sum
    std::vector<std::uint8_t> allowed(static_cast<std::size_t>(kKeyBlock));
#pragma omp for schedule(dynamic, 1)
    for (int b = 0; b < band_count; ++b) {
      const Band& band = bands[static_cast<std::size_t>(b)];
      const int n = band.r1 - band.r0, q0 = p.row0 + band.r0;
      peak.setConstant(n, out_cols, kNoScore);
      if (online) m.setConstant(n, kStartMax), l.setZero(n);
      int first_x = 0;  // the first pooled column that reaches past k0 (columns are in order)
      for (int k0 = 0; k0 < p.cols; k0 += kKeyBlock) {
        const int k1 = std::min(p.cols, k0 + kKeyBlock), kn = k1 - k0;
        while (col_ranges[static_cast<std::size_t>(first_x)].second <= k0) ++first_x;
        const KeyMask::Block state =
            p.mask.any() ? p.mask.block(q0, q0 + n, p.col0 + k0, p.col0 + k1) : KeyMask::Block::All;
        if (state == KeyMask::Block::None) continue;
        scores.resize(n, kn);
        scores.noalias() = p.scale * p.q.middleRows(q0, n) * p.k.middleRows(p.col0 + k0, kn).transpose();
        softCapScores(scores, p.cap);
        if (state == KeyMask::Block::Some)
          for (int i = 0; i < n; ++i) {
            p.mask.fillRow(q0 + i, p.col0 + k0, p.col0 + k1, allowed.data());
            for (int j = 0; j < kn; ++j)
              if (!allowed[static_cast<std::size_t>(j)]) scores(i, j) = kNoScore;
          }
        if (online)  // flash's online softmax: m' = max(m, block max), l' = l exp(m - m') + sum exp(s - m')
          for (int i = 0; i < n; ++i) {  // row by row: a contiguous row vectorises its exp (a broadcast did not)
            const float block_max = scores.row(i).maxCoeff();
            if (block_max == kNoScore) continue;  // no allowed key here; a vectorised exp(-inf) may be a denormal
            const float mi = std::max(m[i], block_max);
            l[i] = l[i] * std::exp(m[i] - mi) + (scores.row(i).array() - mi).exp().sum();
            m[i] = mi;
          }
        if (p.log_scale)  // after the statistics, which are the plain scores'; -inf (masked) + finite stays -inf
          scores.array().rowwise() += Eigen::Map<const RowVector>(p.log_scale + p.col0 + k0, kn).array();
        for (int x = first_x; x < out_cols && col_ranges[static_cast<std::size_t>(x)].first < k1; ++x) {
          const int lo = std::max(col_ranges[static_cast<std::size_t>(x)].first, k0) - k0;
          const int hi = std::min(col_ranges[static_cast<std::size_t>(x)].second, k1) - k0;
          peak.col(x) = peak.col(x).cwiseMax(scores.middleCols(lo, hi - lo).rowwise().maxCoeff());
        }
      }
      if (online)  // every key seen: the rows' statistics are final; no allowed key: -inf and 0, as the backends
        for (int i = 0; i < n; ++i) {
          p.m_out[q0 + i] = l[i] > 0 ? m[i] : kNoScore;
          p.l_out[q0 + i] = l[i];
        }
      const float* row_max = online ? p.m_out : p.m_in;
      const float* row_sum = online ? p.l_out : p.l_in;
      // Texel (y, x) = the largest exp(peak - m_i) / l_i over y's rows; masked when no row had an allowed cell.
      Eigen::Array<float, 1, Eigen::Dynamic> best(out_cols);
      Eigen::Array<bool, 1, Eigen::Dynamic> any(out_cols);
      for (int y = band.y0; y < band.y1; ++y) {
        const auto [lo, hi] = pooledRange(y, p.out_rows, p.rows);
        best.setZero();
        any.setConstant(false);
        for (int i = lo; i < hi; ++i) {
          const float mi = row_max[p.row0 + i], li = row_sum[p.row0 + i];
          if (!(li > 0)) continue;  // every key of this row masked: its cells are masked
          const auto pk = peak.row(i - band.r0).array();
          const auto has = pk > kNoScore;
          best = has.select(best.max((pk - mi).exp() / li), best);
          any = any || has;
        }
        tile.values.row(y) = any.select(best, 0.0f).matrix();
        tile.masked.row(y) = (!any).cast<std::uint8_t>().matrix();
      }
    }
  }
}

void checkPooledRows(int y0, int y1, int out_rows) {
  if (y0 < 0 || y1 > out_rows || y0 > y1)
    throw InputError("pooled rows", "a range within 0:" + std::to_string(out_rows),
                     std::to_string(y0) + ":" + std::to_string(y1));
}

void shapeTile(Tile& tile, int out_rows, int out_cols) {
  if (tile.values.rows() != out_rows || tile.values.cols() != out_cols) tile.values.resize(out_rows, out_cols);
  if (tile.masked.rows() != out_rows || tile.masked.cols() != out_cols) tile.masked.resize(out_rows, out_cols);
}

}  // namespace

void maxPooledRows(const Scene& scene, const Result& result, const KeyMask& mask, const TileRequest& request, int y0,
                   int y1, Tile& tile) {
  const TileRequest r = checkedTileRequest(scene, result, request);
  const HeadResult& hr = result.heads[static_cast<std::size_t>(r.head)];
  if (hr.row_sum.size() != scene.nQ())
    throw InputError("result", "row statistics for every query row", std::to_string(hr.row_sum.size()) + " rows");
  checkPooledRows(y0, y1, r.out_rows);
  shapeTile(tile, r.out_rows, r.out_cols);
  const RowVector log_scale = logScales(r.key_scale);
  const PoolPass pass{scene,           mask,          hr.q,       hr.k(),           scene.headScale(r.head),
                      result.score_cap, r.row0,        r.row1 - r.row0, r.col0,     r.col1 - r.col0,
                      r.out_rows,      r.out_cols,    hr.row_max.data(), hr.row_sum.data(), nullptr,
                      nullptr,         r.key_scale ? log_scale.data() : nullptr};
  poolRows(pass, y0, y1, tile);
}

void overviewRows(const Scene& scene, int head, const Matrix& q, const Matrix& k, const KeyMask& mask, int out_rows,
                  int out_cols, int y0, int y1, Tile& tile, RowVector& row_max, RowVector& row_sum,
                  const RowVector* key_scale) {
  if (head < 0 || head >= scene.numHeads())
    throw InputError("head", "0.." + std::to_string(scene.numHeads() - 1), std::to_string(head));
  if (q.rows() != scene.nQ() || k.rows() != scene.nK() || q.cols() != k.cols())
    throw InputError("q, k", "(n_q, d_k) and (n_k, d_k) of the scene",
                     std::to_string(q.rows()) + " x " + std::to_string(q.cols()) + " and " + std::to_string(k.rows()) +
                         " x " + std::to_string(k.cols()));
  if (out_rows < 1 || out_rows > scene.nQ() || out_cols < 1)
    throw InputError("overview size", "1.." + std::to_string(scene.nQ()) + " rows and at least 1 column",
                     std::to_string(out_rows) + " x " + std::to_string(out_cols));
  checkPooledRows(y0, y1, out_rows);
  checkKeyScale(key_scale, scene.nK());
  shapeTile(tile, out_rows, out_cols);
  if (row_max.size() != scene.nQ()) row_max.resize(scene.nQ());
  if (row_sum.size() != scene.nQ()) row_sum.resize(scene.nQ());
  const RowVector log_scale = logScales(key_scale);
  const PoolPass pass{scene,     mask,     q,       k,       scene.headScale(head), 0.0f, 0, scene.nQ(), 0, scene.nK(),
                      out_rows,  out_cols, nullptr, nullptr, row_max.data(),        row_sum.data(),
                      key_scale ? log_scale.data() : nullptr};
  poolRows(pass, y0, y1, tile);
}

}  // namespace attnscope
