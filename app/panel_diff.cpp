// Diff panel: pin the current result as snapshot A; after edits (or undo) the panel shows B - A of every head
// on the diverging colour map centred at 0 (white = unchanged), with each head's largest change and where.
#include <algorithm>
#include <cstdio>
#include <string>

#include "attnscope/analysis.h"
#include "attnscope/colormap.h"
#include "attnscope/error.h"
#include "panels.h"
#include "ui_probe.h"

namespace attnscope::app {

namespace {

// Cells drawn one rectangle each: past this many over all heads the panel says to export instead.
constexpr long kMaxDrawnCells = 250000;

ImU32 toImU32(Rgb8 c) { return IM_COL32(c.r, c.g, c.b, 255); }

// A horizontal colour bar from -m (left) through 0 (white) to +m.
void drawDivergingBar(ImDrawList* list, ImVec2 p0, float width, float height, float m) {
  const auto& table = colorMapTable(ColorMap::Diverging);
  for (int i = 0; i < kColorMapSize; ++i) {
    const float x0 = p0.x + width * static_cast<float>(i) / kColorMapSize;
    const float x1 = p0.x + width * static_cast<float>(i + 1) / kColorMapSize;
    list->AddRectFilled(ImVec2(x0, p0.y), ImVec2(x1 + 0.5f, p0.y + height),
                        toImU32(table[static_cast<std::size_t>(i)]));
  }
  char lo[32], hi[32];
  std::snprintf(lo, sizeof lo, "-%.3g", m);
  std::snprintf(hi, sizeof hi, "+%.3g", m);
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const float below = p0.y + height + 2;
  list->AddText(ImVec2(p0.x, below), text, lo);
  list->AddText(ImVec2(p0.x + width * 0.5f - ImGui::CalcTextSize("0").x * 0.5f, below), text, "0");
  list->AddText(ImVec2(p0.x + width - ImGui::CalcTextSize(hi).x, below), text, hi);
}

}  // namespace

void drawDiffPanel(AppState& state, ViewState& view) {
  if (ImGui::Button(view.diff_pinned ? "Pin again as A" : "Pin as A")) {
    view.diff_a = state.result();
    view.diff_pinned = true;
  }
  probeItem("diff.pin");
  if (view.diff_pinned) {
    ImGui::SameLine();
    if (ImGui::Button("Unpin")) view.diff_pinned = false;
    probeItem("diff.unpin");
  }
  if (!view.diff_pinned) {
    ImGui::TextWrapped(
        "Pin the current result as snapshot A, then edit (or undo): this panel shows B - A, the "
        "change of every head's weights, white where nothing changed.");
    return;
  }
  std::vector<HeadDiff> diffs;
  try {
    diffs = diffResults(view.diff_a, state.result());
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
  if (cells > kMaxDrawnCells) {
    ImGui::TextWrapped("%ld cells are too many to draw here; attnscope export --what diff writes them.", cells);
    return;
  }
  const int heads = static_cast<int>(diffs.size());
  // Two tiles side by side when their titles fit, else one under another.
  const float title_w = ImGui::CalcTextSize("Head 00: max change 0.000 at (000, 000)").x;
  const int cols = heads >= 2 && (width - line) / 2 >= title_w ? 2 : 1;
  const float tile = (width - (cols - 1) * line) / static_cast<float>(cols);
  const int n_q = static_cast<int>(diffs[0].delta.rows()), n_k = static_cast<int>(diffs[0].delta.cols());
  const float cell = std::max(1.0f, std::floor(std::min(tile / n_k, 12 * line / n_q)));
  cursor = ImGui::GetCursorScreenPos();
  const float tile_h = cell * n_q + 2.2f * line;
  for (int h = 0; h < heads; ++h) {
    const HeadDiff& d = diffs[static_cast<std::size_t>(h)];
    const ImVec2 t0(cursor.x + (h % cols) * (tile + line), cursor.y + (h / cols) * tile_h);
    char title[96];
    if (d.max_abs > 0)
      std::snprintf(title, sizeof title, "Head %d: max change %.3g at (%d, %d)", h + 1, d.max_abs, d.row, d.col);
    else
      std::snprintf(title, sizeof title, "Head %d: unchanged", h + 1);
    list->AddText(t0, ImGui::GetColorU32(ImGuiCol_Text), title);
    const ImVec2 m0(std::floor(t0.x), std::floor(t0.y + 1.2f * line));
    for (int i = 0; i < n_q; ++i)
      for (int j = 0; j < n_k; ++j) {
        const Rgb8 c = colorAt(ColorMap::Diverging, colorMapParameter(d.delta(i, j), -m, m));
        list->AddRectFilled(ImVec2(m0.x + j * cell, m0.y + i * cell),
                            ImVec2(m0.x + (j + 1) * cell, m0.y + (i + 1) * cell), toImU32(c));
      }
    const ImVec2 m1(m0.x + n_k * cell, m0.y + n_q * cell);
    list->AddRect(ImVec2(m0.x - 1, m0.y - 1), ImVec2(m1.x + 1, m1.y + 1), IM_COL32(120, 120, 120, 255));
    probeRect("diff" + std::to_string(h) + ".map", m0, m1);
  }
  ImGui::Dummy(ImVec2(width, tile_h * static_cast<float>((heads + cols - 1) / cols)));
}

}  // namespace attnscope::app
