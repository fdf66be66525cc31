// The model grid's pooled tiles off the UI thread: every map (layer, head) max-pooled to (blocks, blocks), from
// the kept map or recomputed from Q, K and the row statistics (O(layers x heads x n^2 x d): seconds at 1024
// tokens of a 28 x 16-head model on two cores). Layer by layer, so the grid fills in while the rest computes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "attnscope/model/forward.h"
#include "attnscope/model/model.h"
#include "window/latest_worker.h"

namespace attnscope::app {

// One forward's atlas at one tile size. Lifetimes: the job holds the forward by shared_ptr (ModelSession's
// forward is const once it lands), so a newer forward replacing the session's only drops a reference; the old
// one is freed when the job ends. The renderer holds the job until every layer is uploaded, so the atlas
// outlives the worker's use of it.
struct GridTilesJob {
  std::shared_ptr<const model::ForwardResult> forward;
  int layers = 0, heads = 0, blocks = 0;
  // Atlas (layers * blocks, heads * blocks) row-major; rows are queries: map (l, h)'s block (p, q) at
  // texel (h * blocks + q, l * blocks + p). The worker sizes them before layer 1 lands and writes layer l's
  // rows before layers_done passes l, never after: the UI thread reads rows of layers < layers_done (acquire)
  // without a lock.
  // Non-null: value-norm weighting, each map's columns times valueNormScales of this checkpoint.
  std::shared_ptr<const model::Model> weighting;
  std::vector<float> values;
  std::vector<std::uint8_t> allowed;  // 255 where the block covers an allowed cell, else 0 (masked)
  std::atomic<int> layers_done{0};
  std::atomic<bool> cancel{false};  // set when a newer job replaces it: it stops at its next map
};

// Value-norm weighting (Kobayashi et al. 2020) for the window's maps of `layer`: (heads, n), head h's value norm
// for key j (head_finding.h's valueNorms: ||(x_j W_V + b_V) W_O^h||) over the layer's largest, so that a weighted
// map alpha_ij * scale(h, j) lies in 0..1 like the weights, and heads of one layer compare.
Matrix valueNormScales(const model::Model& checkpoint, const model::ForwardResult& forward, int layer);

// Fills `job` layer by layer on the calling thread; stops early (layers_done short) when job.cancel is set.
void computeGridTiles(GridTilesJob& job);

// The grid's background thread: the newest job runs, one replaced while it runs is cancelled.
class GridTileWorker {
 public:
  GridTileWorker();
  ~GridTileWorker();  // cancels the running job; joins
  GridTileWorker(const GridTileWorker&) = delete;
  GridTileWorker& operator=(const GridTileWorker&) = delete;
  // Starts computing `job` (its forward, layers, heads and blocks set), cancelling the previous one.
  void start(const std::shared_ptr<GridTilesJob>& job);

 private:
  // Weak: only to cancel it. A finished job (and its forward) is held by nobody but the renderer, which lets
  // go once every layer is on show.
  std::weak_ptr<GridTilesJob> current_;
  LatestWorker<std::shared_ptr<GridTilesJob>, bool> worker_;
};

}  // namespace attnscope::app
