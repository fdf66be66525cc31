// Max-pooled tiles of a head without its map, recomputed in large blocks: one GEMM of a band of query rows
// (up to 256) against a block of keys (512), the largest allowed raw score of each (row, pooled column) kept,
// and exp(s - m_i) / l_i taken once per (row, pooled column) at the end: exp is monotone, so the block's
// largest weight is the weight of its largest score. Blocks the mask excludes entirely are skipped.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"

namespace attnscope {

namespace {

constexpr int kBandRows = 256;   // query rows per GEMM: K is read once per 256 queries, not per pooled row
constexpr int kKeyBlock = 512;   // keys per GEMM: a (256, 512) block of scores is 512 KiB, inside L2
constexpr float kNoScore = -std::numeric_limits<float>::infinity();  // no allowed cell in this column yet

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

}  // namespace

void maxPooledRows(const Scene& scene, const Result& result, const KeyMask& mask, const TileRequest& request, int y0,
                   int y1, Tile& tile) {
  const TileRequest r = checkedTileRequest(scene, result, request);
  const HeadResult& hr = result.heads[static_cast<std::size_t>(r.head)];
  if (hr.row_sum.size() != scene.nQ())
    throw InputError("result", "row statistics for every query row", std::to_string(hr.row_sum.size()) + " rows");
  const int rows = r.row1 - r.row0, cols = r.col1 - r.col0, out_rows = r.out_rows, out_cols = r.out_cols;
  if (y0 < 0 || y1 > out_rows || y0 > y1)
    throw InputError("pooled rows", "a range within 0:" + std::to_string(out_rows),
                     std::to_string(y0) + ":" + std::to_string(y1));
  if (tile.values.rows() != out_rows || tile.values.cols() != out_cols) tile.values.resize(out_rows, out_cols);
  if (tile.masked.rows() != out_rows || tile.masked.cols() != out_cols) tile.masked.resize(out_rows, out_cols);
  std::vector<std::pair<int, int>> col_ranges(static_cast<std::size_t>(out_cols));
  for (int x = 0; x < out_cols; ++x) col_ranges[static_cast<std::size_t>(x)] = pooledRange(x, out_cols, cols);
  const float scale = scene.headScale(r.head);
  const std::vector<Band> bands = bandsOf(y0, y1, out_rows, rows);
  const int band_count = static_cast<int>(bands.size());

#pragma omp parallel
  {
    Matrix scores;  // (band rows, key block) scaled scores
    Matrix peak;    // (band rows, out_cols) the largest allowed scaled score under each pooled column
    std::vector<std::uint8_t> allowed(static_cast<std::size_t>(kKeyBlock));
#pragma omp for schedule(dynamic, 1)
    for (int b = 0; b < band_count; ++b) {
      const Band& band = bands[static_cast<std::size_t>(b)];
      const int n = band.r1 - band.r0, q0 = r.row0 + band.r0;
      peak.setConstant(n, out_cols, kNoScore);
      int first_x = 0;  // the first pooled column that reaches past k0 (columns are in order)
      for (int k0 = 0; k0 < cols; k0 += kKeyBlock) {
        const int k1 = std::min(cols, k0 + kKeyBlock), kn = k1 - k0;
        while (col_ranges[static_cast<std::size_t>(first_x)].second <= k0) ++first_x;
        const KeyMask::Block state = mask.any() ? mask.block(q0, q0 + n, r.col0 + k0, r.col0 + k1) : KeyMask::Block::All;
        if (state == KeyMask::Block::None) continue;
        scores.resize(n, kn);
        scores.noalias() = scale * hr.q.middleRows(q0, n) * hr.k().middleRows(r.col0 + k0, kn).transpose();
        if (state == KeyMask::Block::Some)
          for (int i = 0; i < n; ++i) {
            mask.fillRow(q0 + i, r.col0 + k0, r.col0 + k1, allowed.data());
            for (int j = 0; j < kn; ++j)
              if (!allowed[static_cast<std::size_t>(j)]) scores(i, j) = kNoScore;
          }
        for (int x = first_x; x < out_cols && col_ranges[static_cast<std::size_t>(x)].first < k1; ++x) {
          const int lo = std::max(col_ranges[static_cast<std::size_t>(x)].first, k0) - k0;
          const int hi = std::min(col_ranges[static_cast<std::size_t>(x)].second, k1) - k0;
          peak.col(x) = peak.col(x).cwiseMax(scores.middleCols(lo, hi - lo).rowwise().maxCoeff());
        }
      }
      // Texel (y, x) = the largest exp(peak - m_i) / l_i over y's rows; masked when no row had an allowed cell.
      Eigen::Array<float, 1, Eigen::Dynamic> best(out_cols);
      Eigen::Array<bool, 1, Eigen::Dynamic> any(out_cols);
      for (int y = band.y0; y < band.y1; ++y) {
        const auto [lo, hi] = pooledRange(y, out_rows, rows);
        best.setZero();
        any.setConstant(false);
        for (int i = lo; i < hi; ++i) {
          const float m = hr.row_max[r.row0 + i], l = hr.row_sum[r.row0 + i];
          if (!(l > 0)) continue;  // every key of this row masked: its cells are masked
          const auto p = peak.row(i - band.r0).array();
          const auto has = p > kNoScore;
          best = has.select(best.max((p - m).exp() / l), best);
          any = any || has;
        }
        tile.values.row(y) = any.select(best, 0.0f).matrix();
        tile.masked.row(y) = (!any).cast<std::uint8_t>().matrix();
      }
    }
  }
}

}  // namespace attnscope
