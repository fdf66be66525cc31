// A checkpoint's attention maps on screen through the heatmap shader (shaders/heatmap.*, as the heads panel):
// the layers x heads grid from each map's pooled overview (max over the cells of a block, blocks by
// pooledRange, as the exporters pool), all maps in one atlas texture rendered once per forward and tile size;
// and one map full-size, with a view of cells for zoom and pan.
#pragma once

#include <imgui.h>

#include "attnscope/model/gpt2.h"
#include "window/heatmap_view.h"

namespace attnscope::app {

class ModelGridRenderer {
 public:
  ModelGridRenderer();  // needs the window's GL 4.3 context; throws on a shader error
  ~ModelGridRenderer();
  ModelGridRenderer(const ModelGridRenderer&) = delete;
  ModelGridRenderer& operator=(const ModelGridRenderer&) = delete;

  // Renders every map (layer * heads + head) of `forward` pooled to tiles of `tile` pixels, unless `revision`
  // and `tile` are those of the last call. Weights 0..1 span the colour map.
  void syncGrid(const model::ForwardResult& forward, int layers, int heads, unsigned revision, int tile);
  // Adds tile (layer, head) of the last syncGrid at p0 (tile x tile pixels).
  void drawTile(ImDrawList* list, int layer, int head, ImVec2 p0) const;
  // Adds map `index` over [p0, p1) (whole pixels) showing the cells `view`; rendered again only when the map,
  // the view or the size changed.
  void drawMap(ImDrawList* list, const model::ForwardResult& forward, int index, unsigned revision, ImVec2 p0,
               ImVec2 p1, const CellView& view);

 private:
  struct Target {  // an RGBA8 texture rendered into through its framebuffer
    unsigned texture = 0, framebuffer = 0;
    int width = 0, height = 0;
  };
  void resize(Target& target, int width, int height);
  // Draws cells `view` of the weights and mask textures into the viewport (x, y, w, h) of `target`.
  void render(const Target& target, unsigned weights, unsigned mask, int x, int y, int w, int h, const CellView& view);

  unsigned program_ = 0, vao_ = 0, colormap_ = 0;
  unsigned grid_weights_ = 0, grid_mask_ = 0;  // atlas: heads * blocks wide, layers * blocks tall
  Target grid_;
  int layers_ = 0, heads_ = 0, tile_ = 0;
  unsigned grid_revision_ = ~0u;
  unsigned map_weights_ = 0, map_mask_ = 0;  // the full-size map: (n, n)
  Target map_;
  int map_index_ = -1;
  unsigned map_revision_ = ~0u;
  CellView map_view_;
  bool map_stale_ = true;
};

}  // namespace attnscope::app
