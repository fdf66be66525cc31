// Diff panel: pin the current result as snapshot A; after edits (or undo) the panel shows B - A of every head
// on the diverging colour map centred at 0 (white = unchanged), with each head's largest change and where.
#include <algorithm>
#include <cstdio>
#include <string>

#include "attnscope/analysis/analysis.h"
#include "attnscope/export/colormap.h"
#include "attnscope/error.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

void drawDiffPanel(AppState& state, ViewState& view) {
  if (longScene(state)) {  // the diff subtracts whole maps
    longSceneNote(state, "The A/B diff");
    return;
  }
  if (ImGui::Button(view.diff.pinned ? "Pin again as A" : "Pin as A")) {
    view.diff.a = state.result();
    view.diff.pinned = true;
  }
  probeItem("diff.pin");
  if (view.diff.pinned) {
    ImGui::SameLine();
    if (ImGui::Button("Unpin")) view.diff.pinned = false;
    probeItem("diff.unpin");
  }
  if (!view.diff.pinned) {
    ImGui::TextWrapped(
        "Pin the current result as snapshot A, then edit (or undo): this panel shows B - A, the "
        "change of every head's weights, white where nothing changed.");
    return;
  }
  std::vector<HeadDiff> diffs;
  try {
    diffs = diffResults(view.diff.a, state.result());
  } catch (const InputError& e) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(230, 80, 80, 255));
    ImGui::TextWrapped("Cannot compare with A: %s. Pin again to compare with this shape.", e.what());
    ImGui::PopStyleColor();
    return;
  }
  float m = 0;
  long cells = 0;
  for (const HeadDiff& d : diffs) {
    m = std::max(m, d.max_abs);
    cells += static_cast<long>(d.delta.size());
  }
  ImGui::Text("B - A, largest change %.4g", m);
  if (m == 0) m = 1;  // nothing changed: every cell white on a nominal scale
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const float width = ImGui::GetContentRegionAvail().x;
  ImVec2 cursor = ImGui::GetCursorScreenPos();
  drawDivergingBar(list, cursor, std::min(width, 12 * line), 0.6f * line, m);
  ImGui::Dummy(ImVec2(width, 1.8f * line));
  if (cells > kMaxDrawnMatrixCells) {
    ImGui::TextWrapped("%ld cells are too many to draw here; attnscope export --what diff writes them.", cells);
    return;
  }
  const int heads = static_cast<int>(diffs.size());
  // Two tiles side by side when their titles fit, else one under another.
  const float title_w = ImGui::CalcTextSize("at query token (000), key token (000)").x;
  const int cols = heads >= 2 && (width - line) / 2 >= title_w ? 2 : 1;
  const float tile = (width - (cols - 1) * line) / static_cast<float>(cols);
  const int n_q = static_cast<int>(diffs[0].delta.rows()), n_k = static_cast<int>(diffs[0].delta.cols());
  // The tokens beside the map, as on the heads' maps (queries left, keys below).
  const Scene& shown = state.scene();
  const float label_w = std::min(queryLabelWidth(shown.query_tokens), 0.3f * tile);
  const float cell = std::max(1.0f, std::floor(std::min((tile - label_w) / n_k, 12 * line / n_q)));
  cursor = ImGui::GetCursorScreenPos();
  // two title lines, the map, its key labels, a gap
  const float tile_h = cell * n_q + 2.2f * line + mapAxesHeight(shown.keyTokens(), cell) + 0.6f * line;
  for (int h = 0; h < heads; ++h) {
    const HeadDiff& d = diffs[static_cast<std::size_t>(h)];
    const ImVec2 t0(cursor.x + (h % cols) * (tile + line), cursor.y + (h / cols) * tile_h);
    char title[160];
    const Scene& scene = state.scene();
    if (d.max_abs > 0)
      std::snprintf(title, sizeof title, "Head %d: max change %.3g\nat query %s (%d), key %s (%d)", h + 1, d.max_abs,
                    scene.query_tokens[static_cast<std::size_t>(d.row)].c_str(), d.row,
                    scene.keyTokens()[static_cast<std::size_t>(d.col)].c_str(), d.col);
    else
      std::snprintf(title, sizeof title, "Head %d: unchanged", h + 1);
    list->AddText(t0, ImGui::GetColorU32(ImGuiCol_Text), title);
    const ImVec2 m0(std::floor(t0.x + label_w), std::floor(t0.y + 2.2f * line));
    drawMatrixCells(list, d.delta, m0, cell, ColorMap::Diverging, -m, m, nullptr);
    drawMapAxes(shown.query_tokens, shown.keyTokens(), m0, cell);
    hoverMatrixCells(state.scene(), d.delta, m0, cell, "B - A");
    const ImVec2 m1(m0.x + n_k * cell, m0.y + n_q * cell);
    probeRect("diff" + std::to_string(h) + ".map", m0, m1);
  }
  ImGui::Dummy(ImVec2(width, tile_h * static_cast<float>((heads + cols - 1) / cols)));
}

}  // namespace attnscope::app
