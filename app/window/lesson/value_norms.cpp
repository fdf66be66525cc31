// Value-norm weighting of a scene's heads (lesson.h): the switch above the heads, its note, and the hover's line.
#include <algorithm>
#include <exception>

#include "attnscope/compute/tiles.h"
#include "window/maps/heatmap_view.h"
#include "window/lesson/lesson.h"
#include "window/view_state.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

// Every scene: kept maps are weighted as uploaded, a long scene's tiles (CPU or GPU) with key scales.
bool valueNormsShown(const ViewState& view) { return view.run.value_norm == 1; }

void drawValueNormSwitch(ViewState& view) {
  valueNormSwitch(view, "heads.value_norm", "heads.value_norm_note", "the scene's largest");
}

void valueNormTooltipLine(const AppState& state, const ViewState& view, const HeatmapRenderer& renderer, int head,
                          int row, int key) {
  const Matrix& norms = renderer.valueNorms();
  if (!valueNormsShown(view) || head >= norms.rows() || key >= norms.cols()) return;
  const float largest = renderer.valueNormTop();
  const float norm = norms(head, key);
  if (state.weightsPending()) return;  // a long scene's result (m, l) not in yet
  const HeadResult& hr = state.result().heads[static_cast<std::size_t>(head)];
  // A long scene keeps no map: the one cell recomputed (a tile of one), when the result is of this scene.
  float weight = 0;
  try {
    const TileRequest cell{head, row, row + 1, key, key + 1};
    weight = hr.hasMap() ? hr.weights(row, key) : weightTile(state.headsScene(), state.result(), cell).values(0, 0);
  } catch (const std::exception&) {
    return;  // a result of an older shape, between an edit and its compute: no line this frame
  }
  ImGui::Text("colour: weight x value norm %.4f / largest %.4f = %.4f", norm, largest,
              largest > 0 ? weight * norm / largest : 0.0f);
}

}  // namespace attnscope::app
