// A run's maps on screen (a checkpoint's forward, or a tensor's): the layers x heads grid, each tile its map's
// overview max-pooled to as many blocks a side as the tile's longer side has pixels (at most n), and one map
// full-size with zoom and pan. Both through the window's one renderer (heatmap_view.h) and tile worker
// (tile_worker.h) over a RunTiles source (map_sources.h): nothing is computed on the UI thread, and nothing here
// calls GL.
#pragma once

#include <imgui.h>

#include <memory>
#include <string>

#include "attnscope/export/contrast.h"
#include "attnscope/model/forward.h"
#include "attnscope/model/model.h"
#include "window/cell_view.h"
#include "window/maps/heatmap_view.h"
#include "window/maps/map_sources.h"
#include "window/maps/tile_worker.h"

namespace attnscope::app {

class RunMaps {
 public:
  RunMaps();  // needs the window's GL 4.3 context; throws on a shader error

  // Once a frame. A new `revision`, tile size or weighting starts every map (layer * heads + head) of `forward`
  // on the grid's worker, square blocks drawn into tiles of tile_w x tile_h pixels (the grid fills its pane, so
  // tiles need not be square); until a map lands its tile keeps what it showed, or a neutral grey. `weighting`
  // on: value-norm weighting (map_sources.h).
  // `on_gpu`: maps not kept are recomputed on the GPU (RunTiles); a change starts every map again.
  void syncGrid(const std::shared_ptr<const model::ForwardResult>& forward, int layers, int heads, unsigned revision,
                int tile_w, int tile_h, const MapWeighting& weighting = {}, bool on_gpu = false);
  // Layers of the last syncGrid's forward on show (from the top: every head of each in); pending while fewer than
  // all, or while the grid of `revision` is not synced yet.
  int gridLayersShown() const { return shown_layers_; }
  bool gridPending(unsigned revision) const { return revision != grid_revision_ || shown_layers_ < layers_; }
  // Adds tile (layer, head) of the last syncGrid at p0 (tile_w x tile_h pixels), coloured under `contrast`.
  void drawTile(ImDrawList* list, int layer, int head, ImVec2 p0, const MapContrast& contrast);
  // Adds map `index` over [p0, p1) (whole pixels) showing the cells `view`: its overview (exact up to 1024
  // tokens), and zoomed past that the visible cells at screen resolution; grey until it lands.
  void drawMap(ImDrawList* list, const std::shared_ptr<const model::ForwardResult>& forward, int index,
               unsigned revision, ImVec2 p0, ImVec2 p1, const CellView& view, const MapContrast& contrast,
               const MapWeighting& weighting = {}, bool on_gpu = false);
  // What went wrong drawing the grid's maps or the full-size map (a layer that could not be read, a GPU that
  // failed its check), as one line, or empty.
  std::string gridProblem() const { return grid_tiles_.problem(); }
  std::string mapProblem() const { return map_tiles_.problem(); }
  // Tiles the grid's and the map's current sources drew on the GPU (the tests' proof of the GPU path).
  int gridGpuTiles() const { return gpuTilesOf(grid_tiles_); }
  int mapGpuTiles() const { return gpuTilesOf(map_tiles_); }
  // The top the grid's colours are drawn against under `contrast` (the largest weight of the layers on show under
  // Shared, 1 under Fixed and RowMax; PerHead: each its own, 0 returned), and the full-size map's (its own largest
  // under Shared and PerHead).
  float gridTop(const MapContrast& contrast) const;
  float mapTop(const MapContrast& contrast) const;
  // Map `index` of forward `revision` is not on show yet: not asked for, or not landed.
  bool mapPending(int index, unsigned revision) const {
    return index != map_index_ || revision != map_revision_ || !map_.overviewLanded(0);
  }

 private:
  static int gpuTilesOf(const TileWorker& worker) {
    const std::shared_ptr<MapSource> source = worker.source();
    return source ? source->gpuTiles() : 0;
  }
  TileWorker grid_tiles_, map_tiles_;
  HeatmapRenderer grid_, map_;
  int layers_ = 0, heads_ = 0, n_ = 0, tile_w_ = 0, tile_h_ = 0, shown_layers_ = 0;
  float shown_max_ = 0;  // the largest allowed weight of the layers on show (syncGrid)
  unsigned grid_revision_ = ~0u, starts_ = 0;
  MapWeighting grid_weighting_;  // the grid's value-norm weighting
  bool grid_gpu_ = false, map_gpu_ = false;
  int map_index_ = -1;
  unsigned map_revision_ = ~0u;
  MapWeighting map_weighting_;  // the full-size map's
};

}  // namespace attnscope::app
