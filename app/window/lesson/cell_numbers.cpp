// The numbers written across large cells (lesson.h): each visible cell's weight to 3 decimals, or under value-norm
// weighting the value it is coloured by, in white or black against its colour; "masked" on masked cells.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "attnscope/compute/tiles.h"
#include "window/lesson/lesson.h"
#include "window/view_state.h"
#include "window/ui_probe.h"

namespace attnscope::app {

void drawCellNumbers(const AppState& state, const ViewState& view, const HeatmapRenderer& renderer, int head,
                     const CellView& cells, ImVec2 m0, ImVec2 m1, float cell, float scale_top) {
  const Scene& scene = state.headsScene();
  ImDrawList* list = ImGui::GetWindowDrawList();
  // The visible cells' weights as an engine tile (a few dozen cells: from the map, or recomputed on a long scene).
  const int i0 = std::max(0, static_cast<int>(cells.row0)),
            i1 = std::min(scene.nQ(), static_cast<int>(std::ceil(cells.row1)));
  const int j0 = std::max(0, static_cast<int>(cells.col0)),
            j1 = std::min(scene.nK(), static_cast<int>(std::ceil(cells.col1)));
  const Tile shown = weightTile(scene, state.result(), TileRequest{head, i0, i1, j0, j1});
  // Under value-norm weighting a cell shows what it is coloured by: weight x key j's value norm / the largest.
  const Matrix& norms = renderer.valueNorms();
  const float norm_top = renderer.valueNormTop();
  const bool weighted = valueNormsShown(view) && head < norms.rows() && norms.cols() == scene.nK() && norm_top > 0;
  const auto shownValue = [&](float weight, int j) { return weighted ? weight * norms(head, j) / norm_top : weight; };
  list->PushClipRect(m0, m1, true);
  for (int i = i0; i < i1; ++i) {
    // The top this row's colours are drawn against (its own max under the row scale, as the shader).
    float top = scale_top;
    if (view.contrast.scale == ColorScale::RowMax) {
      top = 0;
      const Tile row = weightTile(scene, state.result(), TileRequest{head, i, i + 1, 0, scene.nK()});
      for (int j = 0; j < scene.nK(); ++j)
        if (!row.masked(0, j)) top = std::max(top, shownValue(row.values(0, j), j));
    }
    for (int j = j0; j < j1; ++j) {
      char text[16];
      const bool allowed = !shown.masked(i - i0, j - j0);
      const float value = shownValue(shown.values(i - i0, j - j0), j);
      if (allowed)
        std::snprintf(text, sizeof text, "%.3f", value);
      else
        std::snprintf(text, sizeof text, "masked");
      const Rgb8 c = allowed ? colorAt(ColorMap::Viridis, contrastT(view.contrast, value, top)) : kMaskedColor;
      const bool dark = 0.299f * c.r + 0.587f * c.g + 0.114f * c.b < 140;
      probeNote("head" + std::to_string(head) + ".cell." + std::to_string(i) + "." + std::to_string(j), text);
      const ImVec2 size = ImGui::CalcTextSize(text);
      list->AddText(ImVec2(m0.x + (static_cast<float>(j) + 0.5f - cells.col0) * cell - size.x * 0.5f,
                           m0.y + (static_cast<float>(i) + 0.5f - cells.row0) * cell - size.y * 0.5f),
                    dark ? IM_COL32(255, 255, 255, 230) : IM_COL32(20, 20, 20, 230), text);
    }
  }
  list->PopClipRect();
}

}  // namespace attnscope::app
