// The heatmap shader (shaders/heatmap.vert, .frag, embedded at configure time) with the Viridis colour map it
// looks colours up in: cells of a map's weights and mask textures (gl/textures.h) drawn as colours into part of
// a render target. Each of the window's renderers (window/maps/heatmap_view.h) owns one.
#pragma once

#include "attnscope/export/contrast.h"
#include "window/cell_view.h"
#include "window/gl/textures.h"

namespace attnscope::app::gl {

// What one draw shows: texels `view` of `weights` (R32F) and `mask` (R8, the same size; 0 = masked, drawn in
// kMaskedColor). Weights from `lo` to `hi` span the colour map; under `contrast.scale` RowMax each weight is first
// divided by its row's largest allowed weight over the texel columns [row_x0, row_x1) (one map's columns of an
// atlas; the default: the whole row).
struct HeatmapCells {
  unsigned weights = 0, mask = 0;
  CellView view;
  float lo = 0, hi = 1;
  MapContrast contrast;
  int row_x0 = 0, row_x1 = 1 << 30;
};

class HeatmapProgram {
 public:
  HeatmapProgram();  // needs a current GL 4.3 context; throws ShaderError (a std::runtime_error) on a shader error
  ~HeatmapProgram();
  HeatmapProgram(const HeatmapProgram&) = delete;
  HeatmapProgram& operator=(const HeatmapProgram&) = delete;

  // Draws `cells` over the viewport (x, y, width, height) of `target`, in texels (GL's rows: y = 0 at the
  // bottom). The caller's framebuffer and viewport are put back; blending and the scissor test are left off,
  // which ImGui's backend sets again for its own draw.
  void draw(const RenderTarget& target, int x, int y, int width, int height, const HeatmapCells& cells) const;

 private:
  unsigned program_ = 0, vao_ = 0, colormap_ = 0;
  int u_rect_ = -1, u_display_ = -1, u_view_ = -1, u_range_ = -1, u_masked_color_ = -1, u_row_norm_ = -1, u_log_ = -1,
      u_row_span_ = -1;
};

}  // namespace attnscope::app::gl
