// Tiles of weights: copied from a kept map, or recomputed from Q, K, the mask and the row statistics.
#include "attnscope/compute/tiles.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/settings.h"
#include "compute/soft_cap.h"

namespace attnscope {

std::size_t mapsLimitBytes() {
  if (const std::optional<std::size_t> set = byteCountSetting("ATTNSCOPE_MAPS_LIMIT")) return *set;
  return std::size_t{256} << 20;
}

std::size_t mapBytes(const Scene& scene, bool keep_scores) {
  const std::size_t cells = static_cast<std::size_t>(scene.nQ()) * static_cast<std::size_t>(scene.nK());
  return cells * static_cast<std::size_t>(scene.numHeads()) * (keep_scores ? 2 : 1) * sizeof(float);
}

bool keepsMaps(const Scene& scene, const ComputeOptions& options) {
  switch (options.maps) {
    case MapPolicy::Keep: return true;
    case MapPolicy::Drop: return false;
    case MapPolicy::Auto: break;
  }
  return mapBytes(scene, options.keep_scores) <= mapsLimitBytes();
}

std::pair<int, int> pooledRange(int p, int blocks, int n) {
  const long long lo = (static_cast<long long>(p) * n + blocks - 1) / blocks;
  const long long hi = (static_cast<long long>(p + 1) * n + blocks - 1) / blocks;
  if (lo >= hi) return {static_cast<int>(lo - 1), static_cast<int>(lo)};
  return {static_cast<int>(lo), static_cast<int>(hi)};
}

namespace {

// Rows [row0, row1) x keys [col0, col1) of head `head` into out, from Q, K and the row statistics (of the scores
// soft-capped by `cap` when > 0: Result::score_cap).
void recomputeBlock(const HeadResult& hr, const KeyMask& mask, float scale, float cap, int row0, int row1,
                    int col0, int col1, Matrix& out) {
  const int rows = row1 - row0, cols = col1 - col0;
  out.resize(rows, cols);
  out.noalias() = scale * hr.q.middleRows(row0, rows) * hr.k().middleRows(col0, cols).transpose();
  softCapScores(out, cap);
  std::vector<std::uint8_t> allowed(static_cast<std::size_t>(mask.any() ? cols : 0));
  for (int r = 0; r < rows; ++r) {
    const int i = row0 + r;
    const float m = hr.row_max[i], l = hr.row_sum[i];
    auto row = out.row(r);
    if (!(l > 0)) {  // every key of this row is masked
      row.setZero();
      continue;
    }
    row = ((row.array() - m).exp() / l).matrix();
    if (mask.any()) {
      mask.fillRow(i, col0, col1, allowed.data());
      for (int j = 0; j < cols; ++j)
        if (!allowed[static_cast<std::size_t>(j)]) row[j] = 0.0f;
    }
  }
}

void checkRange(const char* field, int lo, int hi, int n) {
  if (lo < 0 || hi > n || lo >= hi)
    throw InputError(field, "a range A:B with 0 <= A < B <= " + std::to_string(n),
                     std::to_string(lo) + ":" + std::to_string(hi));
}

// Query rows per streamed block: about 16 MiB of weights per block.
int streamRows(int n_k) { return std::clamp((4 << 20) / std::max(1, n_k), 1, 4096); }

}  // namespace

void weightRows(const Scene& scene, const Result& result, int head, int row0, int row1, Matrix& out) {
  weightRows(scene, result, KeyMask(scene), head, row0, row1, out);
}

void weightRows(const Scene& scene, const Result& result, const KeyMask& mask, int head, int row0, int row1,
                Matrix& out) {
  const HeadResult& hr = result.heads.at(static_cast<std::size_t>(head));
  if (hr.hasMap()) {
    out = hr.weights.middleRows(row0, row1 - row0);
    return;
  }
  if (hr.row_sum.size() != scene.nQ())
    throw InputError("result", "a result with weight maps or row statistics", "neither (computed elsewhere)");
  recomputeBlock(hr, mask, scene.headScale(head), result.score_cap, row0, row1, 0, scene.nK(), out);
}

TileRequest checkedTileRequest(const Scene& scene, const Result& result, const TileRequest& request) {
  if (request.head < 0 || request.head >= static_cast<int>(result.heads.size()))
    throw InputError("head", "0 to " + std::to_string(static_cast<int>(result.heads.size()) - 1),
                     std::to_string(request.head));
  TileRequest r = request;
  if (r.row1 < 0) r.row1 = scene.nQ();
  if (r.col1 < 0) r.col1 = scene.nK();
  checkRange("rows", r.row0, r.row1, scene.nQ());
  checkRange("cols", r.col0, r.col1, scene.nK());
  const HeadResult& hr = result.heads[static_cast<std::size_t>(r.head)];
  if (!hr.hasMap() && hr.row_sum.size() != scene.nQ())
    throw InputError("result", "a result with weight maps or row statistics", "neither (computed elsewhere)");
  checkKeyScale(r.key_scale, scene.nK());
  if (r.pooling != Pooling::None &&
      (r.out_rows < 1 || r.out_cols < 1 || r.out_rows > (1 << 16) || r.out_cols > (1 << 16)))
    throw InputError("pooled size", "1 to 65536 blocks a side",
                     std::to_string(r.out_rows) + " x " + std::to_string(r.out_cols));
  return r;
}

void checkKeyScale(const RowVector* key_scale, int n_k) {
  if (!key_scale) return;
  if (key_scale->size() != n_k)
    throw InputError("key_scale", std::to_string(n_k) + " values (one per key)", std::to_string(key_scale->size()));
  for (Eigen::Index j = 0; j < key_scale->size(); ++j)
    if (!std::isfinite((*key_scale)[j]) || (*key_scale)[j] < 0)
      throw InputError("key_scale", "finite values >= 0",
                       std::to_string((*key_scale)[j]) + " at key " + std::to_string(j));
}

Tile weightTile(const Scene& scene, const Result& result, const TileRequest& unchecked) {
  const TileRequest request = checkedTileRequest(scene, result, unchecked);
  const int row0 = request.row0, row1 = request.row1, col0 = request.col0, col1 = request.col1;
  const HeadResult& hr = result.heads[static_cast<std::size_t>(request.head)];
  const KeyMask mask(scene);
  const float scale = scene.headScale(request.head);
  const int rows = row1 - row0, cols = col1 - col0;

  // A block of rows of the tile's weights, from the map or recomputed, each times its key's scale when asked.
  const auto block = [&](int r0, int r1, Matrix& out) {
    if (hr.hasMap()) out = hr.weights.block(r0, col0, r1 - r0, cols);
    else recomputeBlock(hr, mask, scale, result.score_cap, r0, r1, col0, col1, out);
    if (request.key_scale) out.array().rowwise() *= request.key_scale->segment(col0, cols).array();
  };

  Tile tile;
  if (request.pooling == Pooling::None) {
    block(row0, row1, tile.values);
    tile.masked = MaskMatrix::Zero(rows, cols);
    if (mask.any())
      for (int r = 0; r < rows; ++r) {
        mask.fillRow(row0 + r, col0, col1, &tile.masked(r, 0));
        tile.masked.row(r) = (tile.masked.row(r).array() == 0).cast<std::uint8_t>();
      }
    return tile;
  }

  const int out_rows = request.out_rows, out_cols = request.out_cols;
  if (request.pooling == Pooling::Max && !hr.hasMap()) {  // blocked GEMMs, one exp per pooled cell (pooled_max.cpp)
    maxPooledRows(scene, result, mask, request, 0, out_rows, tile);
    return tile;
  }
  tile.values = Matrix::Zero(out_rows, out_cols);
  tile.masked = MaskMatrix::Ones(out_rows, out_cols);
  std::vector<std::pair<int, int>> col_ranges(static_cast<std::size_t>(out_cols));
  for (int x = 0; x < out_cols; ++x) col_ranges[static_cast<std::size_t>(x)] = pooledRange(x, out_cols, cols);
  const bool mean = request.pooling == Pooling::Mean;
  // Each output row y reduces its own query rows; rows spread over the OpenMP threads.
#pragma omp parallel
  {
    Matrix weights;
    std::vector<std::uint8_t> allowed(static_cast<std::size_t>(cols), 1);
    std::vector<double> sum(static_cast<std::size_t>(out_cols));
    std::vector<float> peak(static_cast<std::size_t>(out_cols));
    std::vector<int> count(static_cast<std::size_t>(out_cols));
#pragma omp for schedule(dynamic, 1)
    for (int y = 0; y < out_rows; ++y) {
      const auto [r0, r1] = pooledRange(y, out_rows, rows);
      std::fill(sum.begin(), sum.end(), 0.0);
      std::fill(peak.begin(), peak.end(), 0.0f);
      std::fill(count.begin(), count.end(), 0);
      for (int s0 = r0; s0 < r1; s0 += streamRows(cols)) {
        const int s1 = std::min(r1, s0 + streamRows(cols));
        block(row0 + s0, row0 + s1, weights);
        for (int r = 0; r < s1 - s0; ++r) {
          if (mask.any()) mask.fillRow(row0 + s0 + r, col0, col1, allowed.data());
          const float* w = &weights(r, 0);
          for (int x = 0; x < out_cols; ++x) {
            const auto [c0, c1] = col_ranges[static_cast<std::size_t>(x)];
            for (int j = c0; j < c1; ++j) {
              if (!allowed[static_cast<std::size_t>(j)]) continue;
              sum[static_cast<std::size_t>(x)] += w[j];
              peak[static_cast<std::size_t>(x)] = std::max(peak[static_cast<std::size_t>(x)], w[j]);
              ++count[static_cast<std::size_t>(x)];
            }
          }
        }
      }
      for (int x = 0; x < out_cols; ++x) {
        const int n = count[static_cast<std::size_t>(x)];
        if (n == 0) continue;
        tile.masked(y, x) = 0;
        tile.values(y, x) = mean ? static_cast<float>(sum[static_cast<std::size_t>(x)] / n)
                                 : peak[static_cast<std::size_t>(x)];
      }
    }
  }
  return tile;
}

}  // namespace attnscope
