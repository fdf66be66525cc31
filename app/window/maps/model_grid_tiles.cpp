// The grid's pooled tiles, computed on a background thread and handed to the UI thread layer by layer.
#include "window/maps/model_grid_tiles.h"

#include <algorithm>

#include "attnscope/compute/tiles.h"
#include "attnscope/model/head_finding.h"

namespace attnscope::app {

Matrix valueNormScales(const model::Model& checkpoint, const model::ForwardResult& forward, int layer) {
  // Over the double norms: norm / largest is finite in [0, 1] even where a norm is past float32's range.
  const Eigen::MatrixXd norms = model::valueNormsDouble(checkpoint, forward, layer);
  const double top = norms.size() > 0 ? norms.maxCoeff() : 0.0;
  return top > 0 ? Matrix((norms / top).cast<float>()) : Matrix(norms.cast<float>());
}

namespace {

// Map (l, h) weighted by value norms, max-pooled to the job's blocks as Pooling::Max pools the weights: each
// block the largest allowed weighted cell it covers, masked where it covers none. The whole map is read (kept)
// or recomputed (O(n^2 d)) once per head: slower than the weights' pooled recompute, only while the switch is on.
void weightedTile(const GridTilesJob& job, int l, int h, const Matrix& scales, Matrix& values, MaskMatrix& masked) {
  const model::ForwardResult& f = *job.forward;
  const int n = f.n, blocks = job.blocks;
  Matrix map = f.map(l, h);
  map.array().rowwise() *= scales.row(h).array();
  values.setZero(blocks, blocks);
  masked.setOnes(blocks, blocks);
  for (int p = 0; p < blocks; ++p) {
    const auto [i0, i1] = pooledRange(p, blocks, n);
    for (int q = 0; q < blocks; ++q) {
      const auto [j0, j1] = pooledRange(q, blocks, n);
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < j1; ++j)
          if (f.layout.keyAllowed(l, i, j)) {
            values(p, q) = masked(p, q) ? map(i, j) : std::max(values(p, q), map(i, j));
            masked(p, q) = 0;
          }
    }
  }
}

}  // namespace

void computeGridTiles(GridTilesJob& job) {
  const int blocks = job.blocks;
  const std::size_t width = static_cast<std::size_t>(job.heads * blocks);
  const std::size_t height = static_cast<std::size_t>(job.layers * blocks);
  job.values.assign(width * height, 0.0f);
  job.allowed.assign(width * height, 0);
  for (int l = 0; l < job.layers; ++l) {
    const Matrix scales = job.weighting ? valueNormScales(*job.weighting, *job.forward, l) : Matrix();
    for (int h = 0; h < job.heads; ++h) {
      if (job.cancel.load(std::memory_order_relaxed)) return;
      // Each block the largest allowed weight it covers (masked: causal, sliding window).
      Tile t;
      if (job.weighting)
        weightedTile(job, l, h, scales, t.values, t.masked);
      else
        t = job.forward->tile(l, {.head = h, .pooling = Pooling::Max, .out_rows = blocks, .out_cols = blocks});
      for (int p = 0; p < blocks; ++p)
        for (int q = 0; q < blocks; ++q) {
          const std::size_t at =
              static_cast<std::size_t>(l * blocks + p) * width + static_cast<std::size_t>(h * blocks + q);
          job.values[at] = t.values(p, q);
          job.allowed[at] = t.masked(p, q) ? 0 : 255;
        }
    }
    job.layers_done.store(l + 1, std::memory_order_release);  // layer l's rows are final
  }
}

GridTileWorker::GridTileWorker()
    : worker_([](const std::shared_ptr<GridTilesJob>& job) {
        computeGridTiles(*job);
        return true;
      }) {}

GridTileWorker::~GridTileWorker() {
  if (const auto running = current_.lock()) running->cancel = true;
}

void GridTileWorker::start(const std::shared_ptr<GridTilesJob>& job) {
  if (const auto running = current_.lock()) running->cancel = true;
  current_ = job;
  worker_.request(job);
  worker_.take();  // replies carry nothing: progress is the job's layers_done
}

}  // namespace attnscope::app
