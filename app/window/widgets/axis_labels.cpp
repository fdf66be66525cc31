// Token labels around a map (the heads panel, the diff and mistakes maps, the model's full-size map): queries
// left of the map (right-aligned), keys below it (centred, or turned upright), every k-th so that they never
// overlap, the first and the last in view always (row 0 is the sink row researchers look for).
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "attnscope/text_bounds.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

// Text turned 90 degrees anticlockwise, reading from bottom to top, its top edge at `top` and centred on x = `cx`
// (as the exported figures' key labels): ImGui draws text upright only, so the glyph vertices are turned here.
void addUprightText(ImDrawList* list, float cx, float top, ImU32 color, const char* text) {
  const ImVec2 size = ImGui::CalcTextSize(text);
  // Laid out level first, inside the current clip rectangle (AddText drops glyphs outside it), then turned.
  const ImVec4 clip = list->_CmdHeader.ClipRect;
  const ImVec2 level(std::max(clip.x, std::min(cx - size.x * 0.5f, clip.z - size.x)), top);
  const int first = list->VtxBuffer.Size;
  list->AddText(level, color, text);
  for (int k = first; k < list->VtxBuffer.Size; ++k) {
    ImDrawVert& v = list->VtxBuffer[k];
    const float x = v.pos.x - level.x, y = v.pos.y - level.y;
    v.pos = ImVec2(cx - size.y * 0.5f + y, top + size.x - x);  // (x, y) -> (y, -x), then placed
  }
}

// A token as an axis label: at most 24 characters, elided with "…" (a 30,000-character token would otherwise be
// measured and drawn in full every frame; the tooltip and the Cell tab name it in full).
constexpr std::size_t kAxisLabelChars = 24;
std::string axisLabel(const std::string& token) { return elideLabel(token, kAxisLabelChars); }

// The widest of `tokens` as axis labels; past 4096 tokens (a long scene, measured every frame) of 4096 evenly
// spaced ones.
float widestLabel(const std::vector<std::string>& tokens) {
  float widest = 0;
  const std::size_t step = std::max<std::size_t>(1, tokens.size() / 4096);
  for (std::size_t t = 0; t < tokens.size(); t += step)
    widest = std::max(widest, ImGui::CalcTextSize(axisLabel(tokens[t]).c_str()).x);
  return widest;
}

// The height key labels need under a map: one line upright, or the longest label (at most kMaxKeyLabelLines
// lines) turned, when upright labels would have to be thinned more than turned ones.
constexpr float kMaxKeyLabelLines = 5.0f;
bool keyLabelsTurned(const std::vector<std::string>& keys, float cell) {
  const float line = ImGui::GetTextLineHeight();
  float widest = 0;
  widest = widestLabel(keys);
  // Turned, a label takes one line of width: turn them when that shows more of them (a smaller stride).
  const float upright_stride = std::ceil((std::min(widest, 8 * line) + 6) / cell);
  const float turned_stride = std::ceil(line / cell);
  return turned_stride < upright_stride;
}
float keyLabelHeight(const std::vector<std::string>& keys, bool turned) {
  const float line = ImGui::GetTextLineHeight();
  if (!turned) return 1.2f * line;
  float widest = 0;
  widest = widestLabel(keys);
  return std::min(widest, kMaxKeyLabelLines * line) + 4;
}

std::vector<int> labelledPositions(int first, int last, float cell, float extent,
                                   const std::function<float(int)>& start) {
  std::vector<int> kept;
  if (last < first) return kept;
  const int stride = std::max(1, static_cast<int>(std::ceil(extent / std::max(cell, 1e-6f))));
  // b's label starts at or past the end of a's (a whole-pixel slack for rounding).
  const auto after = [&](int a, int b) { return start(b) >= start(a) + extent - 0.5f; };
  kept.push_back(first);
  // Every stride-th position (multiples of the stride, so labels stay put while a zoomed map pans).
  for (int i = (first / stride + 1) * stride; i < last; i += stride)
    if (after(kept.back(), i)) kept.push_back(i);
  if (last > first) {  // the last always: the labels before it that it would overlap give way
    while (kept.size() > 1 && !after(kept.back(), last)) kept.pop_back();
    if (after(kept.back(), last)) kept.push_back(last);
  }
  return kept;
}

// Rows thinner than a line get labels in a smaller font, down to kMinLabelScale of it, before any is left out: a
// teacher's 2 x 2 tiles of 10 tokens (13.5 px rows under a 17 px line) label every token.
constexpr float kMinLabelScale = 0.72f;

// The labels at `scale` of the window's font (ImGui's window font scale, set back to 1 on leaving).
struct LabelFontScale {
  explicit LabelFontScale(float scale) { ImGui::SetWindowFontScale(scale); }
  ~LabelFontScale() { ImGui::SetWindowFontScale(1.0f); }
};

void drawAxisLabels(const std::vector<std::string>& q_tokens, const std::vector<std::string>& k_tokens,
                    const CellView& cells, ImVec2 m0, ImVec2 m1, float cell, float label_w, bool turned) {
  ImDrawList* list = ImGui::GetWindowDrawList();
  const LabelFontScale font(std::clamp(cell / ImGui::GetTextLineHeight(), kMinLabelScale, 1.0f));
  const float line = ImGui::GetTextLineHeight();
  const ImU32 text_color = ImGui::GetColorU32(ImGuiCol_Text);
  float key_label_w = 0;
  key_label_w = widestLabel(k_tokens);
  // Query labels (left), right-aligned, every `stride`-th so they do not overlap.
  const int first_row = std::max(0, static_cast<int>(std::floor(cells.row0)));
  const int last_row = std::min(static_cast<int>(q_tokens.size()) - 1, static_cast<int>(std::ceil(cells.row1)) - 1);
  // A row's label centred on its row, but kept within the map's height (row 0's would reach into the title line
  // above the map when rows are thinner than a line, the last one's into the key labels).
  const auto row_top = [&](int i) {
    const float y = m0.y + (static_cast<float>(i) + 0.5f - cells.row0) * cell - line * 0.5f;
    return std::clamp(y, m0.y, std::max(m0.y, m1.y - line));
  };
  list->PushClipRect(ImVec2(m0.x - label_w, m0.y - 1), ImVec2(m0.x, m1.y + line), true);
  for (const int i : labelledPositions(first_row, last_row, cell, line, row_top)) {
    // Elided to the column it has ("Sente…", never "entence" cut by the clip), measured against it.
    const std::string shown = elideToWidth(axisLabel(q_tokens[static_cast<std::size_t>(i)]), label_w - 4,
                                           [](const std::string& text) { return ImGui::CalcTextSize(text.c_str()).x; });
    const char* t = shown.c_str();
    const float y = row_top(i), x = m0.x - 4 - ImGui::CalcTextSize(t).x;
    list->AddText(ImVec2(x, y), text_color, t);
    const std::string id = "axis.query." + std::to_string(i);
    probeText(id, ImVec2(x, y), ImVec2(m0.x - 4, y + line));
    probeTextRoom(id, ImVec2(x, y), ImVec2(m0.x - 4, y + line), list->GetClipRectMin().x, m0.x);
  }
  list->PopClipRect();
  // Key labels (below), centred under their column when they fit.
  const int first_col = std::max(0, static_cast<int>(std::floor(cells.col0)));
  const int last_col = std::min(static_cast<int>(k_tokens.size()) - 1, static_cast<int>(std::ceil(cells.col1)) - 1);
  const float label_extent = turned ? line : std::min(key_label_w, 8 * line) + 6;
  const auto col_start = [&](int j) {
    return m0.x + (static_cast<float>(j) + 0.5f - cells.col0) * cell - label_extent * 0.5f;
  };
  list->PushClipRect(ImVec2(m0.x - line, m1.y), ImVec2(m1.x + line, m1.y + keyLabelHeight(k_tokens, turned)), true);
  for (const int j : labelledPositions(first_col, last_col, cell, label_extent, col_start)) {
    const std::string shown = axisLabel(k_tokens[static_cast<std::size_t>(j)]);
    const char* t = shown.c_str();
    const float cx = m0.x + (static_cast<float>(j) + 0.5f - cells.col0) * cell;
    const float w = ImGui::CalcTextSize(t).x;
    if (turned) {
      addUprightText(list, cx, m1.y + 2, text_color, t);
      probeText("axis.key." + std::to_string(j), ImVec2(cx - line * 0.5f, m1.y + 2), ImVec2(cx + line * 0.5f, m1.y + 2 + w));
    } else {
      list->AddText(ImVec2(cx - w * 0.5f, m1.y + 2), text_color, t);
      probeText("axis.key." + std::to_string(j), ImVec2(cx - w * 0.5f, m1.y + 2), ImVec2(cx + w * 0.5f, m1.y + 2 + line));
    }
  }
  list->PopClipRect();
}

float queryLabelWidth(const std::vector<std::string>& queries) {
  float widest = 0;
  widest = widestLabel(queries);
  return widest + 6;
}

void drawMapAxes(const std::vector<std::string>& q_tokens, const std::vector<std::string>& k_tokens, ImVec2 m0,
                 float cell) {
  const float line = ImGui::GetTextLineHeight();
  const int n_q = static_cast<int>(q_tokens.size()), n_k = static_cast<int>(k_tokens.size());
  const ImVec2 m1(m0.x + static_cast<float>(n_k) * cell, m0.y + static_cast<float>(n_q) * cell);
  const bool turned = keyLabelsTurned(k_tokens, cell);
  drawAxisLabels(q_tokens, k_tokens, CellView{0, 0, static_cast<float>(n_k), static_cast<float>(n_q)}, m0, m1, cell,
                 std::min(queryLabelWidth(q_tokens), 8 * line), turned);
}

float mapAxesHeight(const std::vector<std::string>& k_tokens, float cell) {
  return keyLabelHeight(k_tokens, keyLabelsTurned(k_tokens, cell));
}

float mapCell(float avail_w, float avail_h, float n_cols, float n_rows) {
  // At least a pixel for the whole map, never a fixed least cell: 0.01 px made a 32k-token map 328 px tall in a
  // 150 px place, over the heads below it.
  return std::max(1.0f / std::max({n_cols, n_rows, 1.0f}), std::min(avail_w / n_cols, avail_h / n_rows));
}

}  // namespace attnscope::app
