// A checkpoint's attention maps on screen through the heatmap shader (shaders/heatmap.*, as the heads panel):
// the layers x heads grid from each map's pooled overview (max over the cells of a block, blocks by
// pooledRange, as the exporters pool), all maps in one atlas texture rendered once per forward and tile size,
// layer by layer as the grid's worker pools them (model_grid_tiles.h); and one map full-size, fetched on a worker
// too, with a view of cells for zoom and pan. Only the GL work is done here, on the UI thread.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "attnscope/model/forward.h"
#include "attnscope/model/model.h"
#include "window/gl/heatmap_program.h"
#include "window/gl/textures.h"
#include "window/maps/heatmap_view.h"
#include "window/latest_worker.h"
#include "window/maps/model_grid_tiles.h"

namespace attnscope::app {

class ModelGridRenderer {
 public:
  ModelGridRenderer();  // needs the window's GL 4.3 context; throws on a shader error
  ~ModelGridRenderer();
  ModelGridRenderer(const ModelGridRenderer&) = delete;
  ModelGridRenderer& operator=(const ModelGridRenderer&) = delete;

  // Once a frame. A new `revision` or tile size starts pooling every map (layer * heads + head) of `forward` to
  // blocks on the grid's worker (never on this thread): square blocks, as many as the tile's longer side has
  // pixels (at most n), drawn into tiles of tile_w x tile_h pixels (the grid fills its pane, so tiles need not
  // be square). Each layer that has landed since the last call is uploaded and rendered. Until then a layer's
  // tiles keep what they showed (the same size), or a neutral grey. Weights 0..1 span the colour map.
  // `contrast` (the window's one, heatmap_view.h) colours the tiles; a new one renders the landed layers again.
  // `weighting` non-null: value-norm weighting (model_grid_tiles.h's valueNormScales of that checkpoint); a change
  // of it starts again like a new forward.
  void syncGrid(const std::shared_ptr<const model::ForwardResult>& forward, int layers, int heads, unsigned revision,
                int tile_w, int tile_h, const MapContrast& contrast,
                const std::shared_ptr<const model::Model>& weighting = nullptr);
  // Layers of the last syncGrid's forward on show (from the top); pending while fewer than all.
  int gridLayersShown() const { return grid_shown_layers_; }
  // Pending: the grid of `revision` not synced yet, or fewer layers on show than all.
  bool gridPending(unsigned revision) const { return revision != grid_revision_ || grid_shown_layers_ < layers_; }
  // Adds tile (layer, head) of the last syncGrid at p0 (tile_w x tile_h pixels).
  void drawTile(ImDrawList* list, int layer, int head, ImVec2 p0) const;
  // Adds map `index` over [p0, p1) (whole pixels) showing the cells `view`; rendered again only when the map,
  // the view or the size changed. A new map or forward is fetched on a background thread (without kept maps it
  // is recomputed from Q and K: O(n^2 d), 40 ms at 1021 tokens, 16x that at 4096); grey until it lands.
  void drawMap(ImDrawList* list, const std::shared_ptr<const model::ForwardResult>& forward, int index,
               unsigned revision, ImVec2 p0, ImVec2 p1, const CellView& view, const MapContrast& contrast,
               const std::shared_ptr<const model::Model>& weighting = nullptr);
  // The top the colours of the grid (the largest weight shown under Shared, 1 under Fixed and RowMax; PerHead:
  // each its own, 0 returned) and of the full-size map (its own max under Shared and PerHead) are drawn against.
  float gridTop() const;
  float mapTop() const;
  // Map `index` of forward `revision` is not on show yet: not asked for, or not landed.
  bool mapPending(int index, unsigned revision) const {
    return map_pending_ || index != map_index_ || revision != map_revision_;
  }

 private:
  using Target = gl::RenderTarget;
  void resize(Target& target, int width, int height);  // fresh storage only when the size changes
  // Draws cells `view` of the weights and mask textures into the viewport (x, y, w, h) of `target`.
  // The weights over `top` (the contrast's), rows normalised over texel columns [row_x0, row_x1) under RowMax.
  void render(const Target& target, unsigned weights, unsigned mask, int x, int y, int w, int h, const CellView& view,
              float top, int row_x0, int row_x1);
  void renderGridTile(int layer, int head);  // tile (layer, head) of the atlas into grid_, under contrast_
  // Uploads and renders the layers the grid's job finished since the last call.
  void showLandedLayers();

  gl::HeatmapProgram program_;
  unsigned grid_weights_ = 0, grid_mask_ = 0;  // atlas: heads * blocks wide, layers * blocks tall
  Target grid_;
  int layers_ = 0, heads_ = 0, tile_w_ = 0, tile_h_ = 0;
  unsigned grid_revision_ = ~0u;
  const model::Model* grid_weighting_ = nullptr;  // the grid's value-norm weighting (null: plain weights)
  const model::Model* map_weighting_ = nullptr;   // the full-size map's
  std::shared_ptr<GridTilesJob> grid_job_;  // the atlas being computed for grid_revision_ and tile_ (null once shown)
  int grid_shown_layers_ = 0;               // its layers uploaded and rendered
  int grid_blocks_ = 1;                     // the atlas' blocks a tile side (GridTilesJob::blocks)
  MapContrast contrast_;                    // the grid's tiles (and the full map) as last rendered
  std::vector<float> tile_max_;             // (layers, heads): each landed tile's largest allowed block
  float grid_top_ = 1;                      // the top the grid was rendered against (Shared: changes as layers land)
  float map_max_ = 1;                       // the full-size map's largest allowed weight
  MapContrast map_contrast_;
  GridTileWorker grid_worker_;
  unsigned map_weights_ = 0, map_mask_ = 0;  // the full-size map: (n, n)
  Target map_;
  int map_index_ = -1;
  unsigned map_revision_ = ~0u;
  CellView map_view_;
  bool map_stale_ = true;
  struct MapRequest {
    std::shared_ptr<const model::ForwardResult> forward;  // held: a newer forward cannot free it mid-request
    int index = 0;
    std::shared_ptr<const model::Model> weighting;  // non-null: value-norm weighting
  };
  struct MapReply {
    Matrix weights;                     // (n, n) row-major: texture row i = query i
    std::vector<std::uint8_t> allowed;  // (n, n): 255 where query i reads key j
  };
  static MapReply fetchMap(const MapRequest& request);
  std::uint64_t map_wanted_ = 0;  // the request whose reply drawMap shows
  bool map_pending_ = false;
  LatestWorker<MapRequest, MapReply> map_worker_{fetchMap};  // last: stops before the members above go
};

}  // namespace attnscope::app
