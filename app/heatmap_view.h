// Heatmaps drawn on the GPU inside ImGui's draw lists: each head's weights live in an R32F texture (uploaded
// from the CPU result, or the GPU backend's own resident texture) and a small shader maps them through the
// colour map texture made from colorMapTable(ColorMap::Viridis).
#pragma once

#include <deque>
#include <vector>

#include <imgui.h>

#include "app_state.h"

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

  // Call once per frame before drawing: forgets last frame's draw calls, uploads what changed.
  void beginFrame(const AppState& state);
  // Adds head `head`'s heatmap over the screen rectangle [p0, p1); weights from `lo` to `hi` span the map.
  void draw(ImDrawList* list, int head, ImVec2 p0, ImVec2 p1, const CellView& view, float lo, float hi);

 private:
  struct DrawCall {
    HeatmapRenderer* self;
    unsigned weights;
    ImVec4 rect;
    CellView view;
    float lo, hi;
  };
  static void renderCallback(const ImDrawList* list, const ImDrawCmd* cmd);
  void render(const DrawCall& call, const ImDrawCmd& cmd) const;
  unsigned weightsTexture(const AppState& state, int head) const;

  unsigned program_ = 0, vao_ = 0, colormap_ = 0, mask_ = 0;
  std::vector<unsigned> head_textures_;  // our own R32F copies of the CPU result, one per head
  std::vector<unsigned> head_revisions_;
  std::vector<unsigned> draw_textures_;  // the texture each head is drawn from this frame
  unsigned full_revision_ = ~0u;
  std::deque<DrawCall> calls_;           // stable addresses until the frame is rendered
};

}  // namespace attnscope::app
