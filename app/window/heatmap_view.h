// Heatmaps drawn on the GPU: each head's weights live in an R32F texture (uploaded from the CPU result, or the
// GPU backend's own resident texture) and a small shader maps them through the colour map texture made from
// colorMapTable(ColorMap::Viridis) into a texture that ImGui shows as an image.
#pragma once

#include <imgui.h>

#include <vector>

#include "window/app_state.h"

namespace attnscope::app {

// The part of a heatmap in view, in cells: columns [col0, col1), rows [row0, row1) (fractional when zoomed).
struct CellView {
  float col0 = 0, row0 = 0, col1 = 1, row1 = 1;
};

class HeatmapRenderer {
 public:
  HeatmapRenderer();  // needs a current GL 4.3 context; throws std::runtime_error on a shader error
  ~HeatmapRenderer();
  HeatmapRenderer(const HeatmapRenderer&) = delete;
  HeatmapRenderer& operator=(const HeatmapRenderer&) = delete;

  // Call before drawing (after this frame's edits): uploads what changed since the last call.
  void sync(const AppState& state);
  // Adds head `head`'s heatmap over the screen rectangle [p0, p1) (whole pixels); weights from `lo` to `hi` span
  // the colour map. The map is rendered by the heatmap shader into a texture of exactly that many pixels (level
  // of detail: never larger than what can be shown), and only when the weights, the view or the size changed;
  // every other frame just draws that texture.
  void draw(ImDrawList* list, int head, ImVec2 p0, ImVec2 p1, const CellView& view, float lo, float hi);

 private:
  // One head's rendered map: an RGBA8 texture the size of its place on screen, and what it shows.
  struct Rendered {
    unsigned texture = 0, framebuffer = 0;
    int width = 0, height = 0;
    CellView view;
    float lo = 0, hi = 0;
    unsigned source = 0, source_revision = ~0u, mask_revision = ~0u;
  };
  void render(Rendered& target, int head, const CellView& view, float lo, float hi);
  unsigned weightsTexture(const AppState& state, int head) const;

  unsigned program_ = 0, vao_ = 0, colormap_ = 0, mask_ = 0;
  std::vector<unsigned> head_textures_;  // our own R32F copies of the CPU result, one per head
  std::vector<unsigned> head_revisions_;
  std::vector<unsigned> sources_;  // the weights texture each head is drawn from this frame
  std::vector<unsigned> source_revisions_;
  std::vector<Rendered> rendered_;
  unsigned mask_revision_ = ~0u;
};

}  // namespace attnscope::app
