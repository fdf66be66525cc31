// Weights for heads whose maps the result does not keep (long scenes): each head's max-pooled overview and the
// visible part of a zoomed map, computed as engine tiles (compute/tiles.h) on one worker thread, never on the UI.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "attnscope/compute/tiles.h"

namespace attnscope::app {

// The largest overview a head gets, per side: a (min(n_q, 1024), min(n_k, 1024)) max-pooled tile.
constexpr int kOverviewSide = 1024;

class HeatmapTileSource {
 public:
  HeatmapTileSource();
  ~HeatmapTileSource();  // the tile in progress finishes first; nothing is handed back after
  HeatmapTileSource(const HeatmapTileSource&) = delete;
  HeatmapTileSource& operator=(const HeatmapTileSource&) = delete;

  // A new result to draw from (`revision`: AppState::fullRevision). Copies what tiles need (the scene, per head
  // Q, K and the row statistics: O(n d)); every overview starts again. What was drawn stays until replaced.
  void reset(const Scene& scene, const Result& result, unsigned revision);
  // The visible part of `head`: query rows [row0, row1), keys [col0, col1) at (out_rows, out_cols), max-pooled
  // when that is fewer than the cells. Replaces the previous view request; served before the overviews.
  void requestView(int head, int row0, int row1, int col0, int col1, int out_rows, int out_cols);

  struct Landed {
    int head = 0;
    bool overview = true;  // false: a view tile
    TileRequest request;   // rows, cols and (for a view) its out size; an overview covers every cell
    Tile tile;
    unsigned revision = 0;
  };
  // Tiles finished since the last call (UI thread, once a frame).
  std::vector<Landed> take();
  // Overview progress of the current revision: heads done, and the fraction of the head in progress.
  int overviewsDone() const;
  float overviewFraction() const;
  unsigned revision() const;

 private:
  struct Snapshot {
    Scene scene;
    Result result;  // per head q, k, row_max, row_sum only
    unsigned revision = 0;
  };
  struct ViewRequest {
    TileRequest request;
    std::uint64_t number = 0;
  };
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::optional<ViewRequest> view_;
  std::vector<Landed> landed_;
  int overviews_done_ = 0;  // heads [0, overviews_done_) have landed for snapshot_
  int overview_rows_done_ = 0, overview_rows_ = 1;
  bool stopping_ = false;
  std::thread thread_;  // last: started once every member above exists
};

}  // namespace attnscope::app
