// The grid's pooled tiles, computed on a background thread and handed to the UI thread layer by layer.
#include "window/model/model_grid_tiles.h"

#include "attnscope/compute/tiles.h"

namespace attnscope::app {

void computeGridTiles(GridTilesJob& job) {
  const int blocks = job.blocks;
  const std::size_t width = static_cast<std::size_t>(job.heads * blocks);
  const std::size_t height = static_cast<std::size_t>(job.layers * blocks);
  job.values.assign(width * height, 0.0f);
  job.allowed.assign(width * height, 0);
  for (int l = 0; l < job.layers; ++l) {
    for (int h = 0; h < job.heads; ++h) {
      if (job.cancel.load(std::memory_order_relaxed)) return;
      // Each block the largest allowed weight it covers (masked: causal, sliding window).
      const Tile t =
          job.forward->tile(l, {.head = h, .pooling = Pooling::Max, .out_rows = blocks, .out_cols = blocks});
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
