// The window's one tile worker: every map view (a long scene's heads, a run's grid and its full-size map) asks it
// for each map's max-pooled overview and the visible part of a zoomed map, computed as engine tiles
// (compute/tiles.h) on one background thread, never on the UI. What it reads is a MapSource (map_sources.h): a
// scene's heads, computed from the scene alone (q, k projected, m and l found on the way, so they need no
// forward pass: the window computes them first and the scene's full result after them, waitOverviews, since on
// 2 cores both at once would halve each), or a run's maps (layer * heads + head) from its forward.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "attnscope/compute/tiles.h"

namespace attnscope::app {

// A subject's maps as the worker reads them: maps() of them, numbered from 0, each (rows(), cols()). The worker
// calls the non-const members from its own thread only, one at a time, so a source keeps what one overview
// finds (a scene's q, k, m, l) without a lock; the UI thread reads only the const shape.
class MapSource {
 public:
  virtual ~MapSource() = default;
  virtual int maps() const = 0;
  virtual int rows() const = 0;  // n_q
  virtual int cols() const = 0;  // n_k
  // Each map's overview: (out_rows, out_cols) blocks, every cell, max-pooled.
  virtual std::pair<int, int> overviewSize() const = 0;
  // Pooled rows of an overview computed per step: what a view request or a newer source waits for at most.
  // The default: about 2048 query rows (1/16 of a 32k-token head, ~0.3 s on 2 cores).
  virtual int overviewStep() const;
  // True when a view tile of a map needs its overview first (a scene: the overview finds the rows' m, l).
  virtual bool viewsNeedOverview() const { return false; }
  // Map `map`'s overview, rows [y0, y1) of it into `overview` (already (out_rows, out_cols)), called for
  // y0 = 0, then in order; finishOverview once every row is in. `key_scale` (n_k) or null: value-norm weighting.
  virtual void overviewRows(int map, int y0, int y1, Tile& overview, const RowVector* key_scale) = 0;
  virtual void finishOverview(int /*map*/) {}
  // A view tile (request.head: the map; request.key_scale set when weighted). Throws on a request outside the map.
  virtual Tile viewTile(const TileRequest& request) = 0;
  // A line the window shows about how the maps are drawn (a GPU that failed its check), or empty. Any thread.
  virtual std::string notice() const { return {}; }
  // Tiles drawn on a GPU so far (a run's RunTiles with on_gpu); any thread.
  virtual int gpuTiles() const { return 0; }
};

// The largest overview a scene's head (and a run's full-size map) gets, per side: a (min(n_q, 1024),
// min(n_k, 1024)) max-pooled tile.
constexpr int kOverviewSide = 1024;
// Map `map`'s whole-map overview of (n_q, n_k) cells: every cell, Pooling::Max to (out_rows, out_cols).
inline TileRequest overviewRequest(int map, int n_q, int n_k, int out_rows, int out_cols) {
  return TileRequest{map, 0, n_q, 0, n_k, Pooling::Max, out_rows, out_cols};
}
// The same at kOverviewSide a side at most.
inline TileRequest overviewRequest(int map, int n_q, int n_k) {
  return overviewRequest(map, n_q, n_k, std::min(n_q, kOverviewSide), std::min(n_k, kOverviewSide));
}

class TileWorker {
 public:
  TileWorker();
  ~TileWorker();  // the step in progress finishes first; nothing is handed back after
  TileWorker(const TileWorker&) = delete;
  TileWorker& operator=(const TileWorker&) = delete;

  // A new source to draw (`revision`: the owner's, e.g. AppState::overviewRevision): every overview starts again,
  // the first map first; the work of an older revision stops at its next step and nothing of it is handed back.
  // What was drawn stays until replaced.
  void start(std::shared_ptr<MapSource> source, unsigned revision);
  // The visible part of map `map`: query rows [row0, row1), keys [col0, col1) at (out_rows, out_cols),
  // max-pooled when that is fewer than the cells. Replaces the previous view request; served before the overviews
  // (when the source's views need the overview, the map's comes next, then the view).
  void requestView(int map, int row0, int row1, int col0, int col1, int out_rows, int out_cols);
  // Value-norm weighting: every tile of `source` (the one start() was given; another is ignored) has each weight
  // times its key's scale, (maps, n_k) rows of `key_scales` (null: plain weights). A change starts every overview
  // again (tilesRevision() moves on, so what was drawn shows stale until replaced); the same pointer changes
  // nothing. start() drops the scales (they belong to one source).
  void setKeyScales(const MapSource* source, std::shared_ptr<const Matrix> key_scales);
  std::shared_ptr<MapSource> source() const;  // the source being drawn, or null
  // Blocks the calling (worker) thread until every overview of `revision` has landed (true) or a newer revision or
  // stop() came first (false: that revision's work is stale). Never called on the UI thread.
  bool waitOverviews(unsigned revision) const;
  // No source: the overviews stop and a compute waiting for them gives up; what was drawn stays, marked stale.
  void clear();
  void stop();  // ends the worker's loop and every waitOverviews (before the owner's other workers join)

  struct Landed {
    int map = 0;
    bool overview = true;  // false: a view tile
    TileRequest request;   // rows, cols and (for a view) its out size; an overview covers every cell
    Tile tile;
    unsigned revision = 0;
    unsigned tiles_revision = 0;  // tilesRevision() when it was made: older ones are of other key scales
  };
  // Tiles finished since the last call (UI thread, once a frame).
  std::vector<Landed> take();
  // Overview progress of the current revision: maps done, the map in progress and its fraction done.
  int overviewsDone() const;
  int overviewMap() const;
  float overviewFraction() const;
  unsigned revision() const;  // the current source's (start's), ~0u without one
  // The tiles' own revision (Landed::tiles_revision of the current tiles): start() and setKeyScales() move it on.
  unsigned tilesRevision() const;
  // The current source's first failed overview's message (that map drawn masked grey), else its notice(), else
  // empty: the line the window shows over a map view.
  std::string problem() const;

 private:
  struct Snapshot {
    std::shared_ptr<MapSource> source;
    std::vector<std::uint8_t> done;            // (maps) 1 once the map's overview is in
    unsigned revision = 0;                     // the owner's revision (waitOverviews)
    unsigned tiles_revision = 0;               // tilesRevision(): start() and setKeyScales() move it on
    std::shared_ptr<const Matrix> key_scales;  // (maps, n_k) or null: see setKeyScales
  };
  void run();
  bool viewReady() const;  // view_'s map may be computed now (under mutex_)
  // A fresh snapshot of `source` (every overview to do) in place of the current one, under the next tiles
  // revision, with no view and nothing landed (under mutex_).
  void replaceSnapshot(std::shared_ptr<MapSource> source, unsigned revision, std::shared_ptr<const Matrix> key_scales);

  mutable std::mutex mutex_;
  std::condition_variable wake_;                  // the worker: a request, a new snapshot, stop
  mutable std::condition_variable overviews_cv_;  // waitOverviews: a map done, a new snapshot, stop
  std::shared_ptr<Snapshot> snapshot_;
  std::optional<TileRequest> view_;
  std::vector<Landed> landed_;
  int overviews_done_ = 0;  // maps of snapshot_ whose overviews have landed
  unsigned tiles_revisions_ = 0;
  int overview_map_ = 0;  // the map in progress
  int overview_rows_done_ = 0, overview_rows_ = 1;
  std::string failed_;  // the current source's first failed overview (problem())
  bool stopping_ = false;
  std::thread thread_;  // last: started once every member above exists
};

}  // namespace attnscope::app
