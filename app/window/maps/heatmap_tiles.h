// Weights for heads whose maps the result does not keep (long scenes): each head's max-pooled overview and the
// visible part of a zoomed map, computed as engine tiles (compute/tiles.h) on one worker thread, never on the UI.
// The overviews come from the scene alone (q, k projected here; m, l from the same pass, overviewRows), so they
// need no forward pass: the window computes them first and the full result (outputs, P V) after them
// (waitOverviews), since on 2 cores both at once would halve each.
#pragma once

#include <algorithm>
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
// Head `head`'s whole-map overview of an (n_q, n_k) scene: every cell, Pooling::Max to kOverviewSide a side at most.
inline TileRequest overviewRequest(int head, int n_q, int n_k) {
  return TileRequest{head, 0, n_q, 0, n_k, Pooling::Max, std::min(n_q, kOverviewSide), std::min(n_k, kOverviewSide)};
}

class HeatmapTileSource {
 public:
  HeatmapTileSource();
  ~HeatmapTileSource();  // the step in progress finishes first; nothing is handed back after
  HeatmapTileSource(const HeatmapTileSource&) = delete;
  HeatmapTileSource& operator=(const HeatmapTileSource&) = delete;

  // A new scene to draw (`revision`: AppState::overviewRevision): every overview starts again from the scene, the
  // first head first; the work of an older revision stops at its next step and nothing of it is handed back.
  // What was drawn stays until replaced.
  // `scene` is shared with the window's compute request, not copied (64 MB at 32k tokens, d_model 512).
  void start(std::shared_ptr<const Scene> scene, unsigned revision);
  // The visible part of `head`: query rows [row0, row1), keys [col0, col1) at (out_rows, out_cols), max-pooled
  // when that is fewer than the cells. Replaces the previous view request; served before the overviews (a head
  // whose m, l are not known yet gets its overview next, then the view).
  void requestView(int head, int row0, int row1, int col0, int col1, int out_rows, int out_cols);
  // Value-norm weighting: every tile of `scene` (the one start() was given; another is ignored) has each weight
  // times its key's scale, (heads, n_k) rows of `key_scales` (null: plain weights). A change starts every overview
  // again (revision() moves on, so what was drawn shows stale until replaced); the same pointer changes nothing.
  // start() drops the scales (they belong to one scene).
  void setKeyScales(const std::shared_ptr<const Scene>& scene, std::shared_ptr<const Matrix> key_scales);
  std::shared_ptr<const Scene> scene() const;  // the scene being drawn, or null
  // Blocks the calling (worker) thread until every overview of `revision` has landed (true) or a newer revision or
  // stop() came first (false: that revision's work is stale). Never called on the UI thread.
  bool waitOverviews(unsigned revision) const;
  // No scene (the edited one is not long): the overviews stop and a compute waiting for them gives up; what was
  // drawn stays, marked stale.
  void clear();
  void stop();  // ends the worker's loop and every waitOverviews (before the owner's other workers join)

  struct Landed {
    int head = 0;
    bool overview = true;  // false: a view tile
    TileRequest request;   // rows, cols and (for a view) its out size; an overview covers every cell
    Tile tile;
    unsigned revision = 0;
    unsigned tiles_revision = 0;  // tilesRevision() when it was made: older ones are of other key scales
  };
  // Tiles finished since the last call (UI thread, once a frame).
  std::vector<Landed> take();
  // Overview progress of the current revision: heads done, the head in progress and its fraction done.
  int overviewsDone() const;
  int overviewHead() const;
  float overviewFraction() const;
  unsigned revision() const;  // the current scene's (start's), ~0u without one
  // The tiles' own revision (Landed::tiles_revision of the current tiles): start() and setKeyScales() move it on.
  unsigned tilesRevision() const;

 private:
  // What the worker reads and fills: the scene and, per head, q, k and (once its overview is done) m, l. Only the
  // worker touches `result`; a new start() makes a new snapshot.
  struct Snapshot {
    std::shared_ptr<const Scene> scene;
    Result result;                             // per head q, k, row_max, row_sum only
    std::vector<std::uint8_t> done;            // (heads) 1 once the head's overview (and m, l) is in
    unsigned revision = 0;                     // AppState's overview revision (waitOverviews)
    unsigned tiles_revision = 0;               // revision(): start() and setKeyScales() move it on
    std::shared_ptr<const Matrix> key_scales;  // (heads, n_k) or null: see setKeyScales
  };
  struct ViewRequest {
    TileRequest request;
  };
  void run();
  bool viewReady() const;  // view_'s head has its m, l (under mutex_)
  // A fresh snapshot of `scene` (every head's overview to do) in place of the current one, under the next tiles
  // revision, with no view and nothing landed (under mutex_).
  void replaceSnapshot(std::shared_ptr<const Scene> scene, unsigned revision, std::shared_ptr<const Matrix> key_scales);

  mutable std::mutex mutex_;
  std::condition_variable wake_;                  // the worker: a request, a new snapshot, stop
  mutable std::condition_variable overviews_cv_;  // waitOverviews: a head done, a new snapshot, stop
  std::shared_ptr<Snapshot> snapshot_;
  std::optional<ViewRequest> view_;
  std::vector<Landed> landed_;
  int overviews_done_ = 0;  // heads of snapshot_ whose overviews have landed
  unsigned tiles_revisions_ = 0;
  int overview_head_ = 0;  // the head in progress
  int overview_rows_done_ = 0, overview_rows_ = 1;
  bool stopping_ = false;
  std::thread thread_;  // last: started once every member above exists
};

}  // namespace attnscope::app
