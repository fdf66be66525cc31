// Heads panel: a grid of per-head heatmaps (GPU-drawn) with token labels, hover details, a colour bar;
// a click enlarges one head with zoom (mouse wheel) and pan (drag). Each tile carries its head-type label and a
// mute toggle (a right click on the map offers mute and enlarge too): muted heads are dimmed and the output change
// of zero-ablating them is shown under the grid.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "attnscope/compute/tiles.h"
#include "attnscope/export/colormap.h"
#include "attnscope/text_bounds.h"
#include "window/lesson/lesson.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// [SECTION] colour scale

float scaleTop(const AppState& state, const ViewState& view, int head) {
  const std::vector<HeadStats>& stats = state.result().stats;
  // A long scene: no statistics in the window (nor, while its result computes, a result of its heads).
  if (state.weightsPending() || stats.size() != state.result().heads.size()) return 1.0f;
  if (valueNormsShown(view)) return 1.0f;  // weighted maps lie in 0..1; the statistics are the weights'
  switch (view.contrast.scale) {
    case ColorScale::Fixed:
    case ColorScale::RowMax:  // each weight over its row's max: the shader divides, the range stays 0..1
      return 1.0f;
    case ColorScale::Shared: {
      float top = 0;
      for (const HeadStats& s : stats) top = std::max(top, s.max_weight);
      return top > 0 ? top : 1.0f;
    }
    case ColorScale::PerHead:
      return stats[static_cast<std::size_t>(head)].max_weight > 0 ? stats[static_cast<std::size_t>(head)].max_weight
                                                                  : 1.0f;
  }
  return 1.0f;
}

// A muted head's map is covered by black at this alpha (of 255): each channel drawn at (255 - a) / 255.
constexpr int kMutedDim = 160;

// Shift+click on mute: every head but `head` muted, so that the output change is all the others' and the map on
// show the one left; the same again (it is already alone) unmutes every head.
void soloHead(ViewState& view, int head, int heads) {
  std::vector<int> others;
  for (int h = 0; h < heads; ++h)
    if (h != head) others.push_back(h);
  view.heads.muted = view.heads.muted == others ? std::vector<int>{} : others;
}

bool isMuted(const ViewState& view, int head) {
  return std::binary_search(view.heads.muted.begin(), view.heads.muted.end(), head);
}

void toggleMuted(ViewState& view, int head) {
  auto it = std::lower_bound(view.heads.muted.begin(), view.heads.muted.end(), head);
  if (it != view.heads.muted.end() && *it == head)
    view.heads.muted.erase(it);
  else
    view.heads.muted.insert(it, head);
}

}  // namespace

namespace {

// [SECTION] one heatmap with its labels

// The widest query label a tile may give room to (at most 4096 measured, evenly spaced: a long scene would
// measure 32k every frame), plus its margin.
float widestQueryLabel(const Scene& scene) {
  float label_w = 0;
  const std::size_t label_step = std::max<std::size_t>(1, scene.query_tokens.size() / 4096);
  for (std::size_t t = 0; t < scene.query_tokens.size(); t += label_step)
    label_w = std::max(label_w, ImGui::CalcTextSize(axisLabel(scene.query_tokens[t]).c_str()).x);
  return label_w + 6;
}

// How a tile of (width, height) pixels holds its map: the query labels' width (0: no labels), square cells of
// `cell` pixels, the key labels turned upright or not. One rule for drawTile and for the grid choosing its columns.
struct TileGeometry {
  float label_w = 0, cell = 0, height = 0;  // height: title, map and key labels
  float title_h = 0;                        // the title's line, or two (type_line)
  bool labels = false, turned = false;
  bool type_line = false;  // the head's type chip and entropy on a line of their own under its name
};

TileGeometry tileGeometry(const Scene& scene, float widest_query, float width, float height, const CellView& cells) {
  const float line = ImGui::GetTextLineHeight();
  TileGeometry g;
  // Small tiles (many heads) give all their room to the map; the tooltip still names the tokens.
  g.labels = width >= 7 * line && height >= 6 * line;
  g.label_w = g.labels ? std::min(widest_query, width * 0.3f) : 0;
  // A labelled tile too narrow for the name, the type chip and the entropy beside the buttons gives them a
  // second line (a teacher's 2 x 2 tiles kept neither).
  g.type_line = g.labels && width < oneLineTitleWidth();
  g.title_h = (g.type_line ? 2.3f : 1.2f) * line;
  const float n_cols = cells.col1 - cells.col0, n_rows = cells.row1 - cells.row0;
  const float avail_w = width - g.label_w;
  float key_h = g.labels ? 1.2f * line : 0.1f * line;
  g.cell = mapCell(avail_w, height - g.title_h - key_h, n_cols, n_rows);
  g.turned = g.labels && keyLabelsTurned(scene, g.cell);
  if (g.turned) {
    key_h = keyLabelHeight(scene, true);
    g.cell = mapCell(avail_w, height - g.title_h - key_h, n_cols, n_rows);
  }
  g.height = g.title_h + std::floor(g.cell * n_rows) + key_h;
  return g;
}

struct TileResult {
  bool clicked = false;
  bool enlarge = false;  // the title's "enlarge" button
  ImVec2 map_min, map_max;
};

// Draws head `head` into [p0, p1): title, key labels below, query labels left, the map itself; hover shows the
// cell under the mouse. Labels are thinned so that they never overlap (every k-th token).
// `tag` (the grid's "KV 3" on a group's last tile in a row), when not empty, is drawn at the title line's right
// end in `tag_color`, the title shortened to leave it room.
TileResult drawTile(AppState& state, ViewState& view, HeatmapRenderer& renderer, int head, ImVec2 p0, ImVec2 p1,
                    const CellView& cells, bool zoomable, float widest_query, const std::string& tag = "",
                    ImU32 tag_color = 0) {
  const Scene& scene = state.headsScene();
  const bool weights_known = !state.weightsPending();  // result() describes `scene`: exact weights may be shown
  const std::vector<std::string>& q_tokens = scene.query_tokens;
  const std::vector<std::string>& k_tokens = scene.keyTokens();
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  TileResult out;

  // Title: "Head 3", its head-type label as a chip, its mean row entropy where the tile is wide enough
  // (lesson/head_title.cpp); then the mute toggle.
  static const std::vector<HeadStats> kNoStats;
  const std::vector<HeadStats>& all_stats = weights_known ? state.result().stats : kNoStats;
  const float* entropy =
      head < static_cast<int>(all_stats.size()) ? &all_stats[static_cast<std::size_t>(head)].entropy : nullptr;
  static const std::vector<HeadTypeScores> kNoTypes;
  const std::vector<HeadTypeScores>& types = weights_known ? state.headTypes() : kNoTypes;
  const char* label =
      head < static_cast<int>(types.size()) ? headTypeText(headTypeLabel(types[static_cast<std::size_t>(head)])) : "";
  const float tag_w = tag.empty() ? 0.0f : ImGui::CalcTextSize(tag.c_str()).x + line * 0.5f;
  // The buttons: mute, and in the grid an enlarge button where it fits (lesson/head_title.cpp; a double-click on
  // the map enlarges too): a click on a cell only picks it for the Cell tab, the grid stays.
  const float mute_only_w =
      ImGui::CalcTextSize(isMuted(view, head) ? "unmute" : "mute").x + 2 * ImGui::GetStyle().FramePadding.x;
  const bool grid_tile = !zoomable && view.heads.compare_a < 0;
  const bool enlargeable = grid_tile && enlargeFits(head, mute_only_w + tag_w, p1.x - p0.x);
  const float mute_w = mute_only_w + (enlargeable ? enlargeButtonWidth() + ImGui::GetStyle().ItemSpacing.x : 0.0f);
  // A narrow labelled tile: the name on the first line, the type chip and the entropy on a second (TileGeometry).
  const TileGeometry g = tileGeometry(scene, widest_query, p1.x - p0.x, p1.y - p0.y, cells);
  const float title_end = g.type_line
                              ? drawHeadTitle(list, head, "", nullptr, p0, p1.x - mute_w - tag_w - 0.5f * line)
                              : drawHeadTitle(list, head, label, entropy, p0, p1.x - mute_w - tag_w - 0.5f * line);
  if (g.type_line) drawHeadTitle(list, head, label, entropy, ImVec2(p0.x, p0.y + 1.15f * line), p1.x, false);
  const bool muted = isMuted(view, head);
  const ImVec2 after_title = ImGui::GetCursorScreenPos();
  ImGui::SetCursorScreenPos(ImVec2(title_end + line * 0.5f, p0.y - 1));
  ImGui::PushID(head);
  if (ImGui::SmallButton(muted ? "unmute" : "mute")) {
    if (ImGui::GetIO().KeyShift)
      soloHead(view, head, scene.numHeads());
    else
      toggleMuted(view, head);
  }
  probeItem("head" + std::to_string(head) + ".mute");
  if (enlargeable) {
    ImGui::SameLine();
    out.enlarge = enlargeButton(head);
  }
  ImGui::PopID();
  ImGui::SetCursorScreenPos(after_title);
  // The tag where it fits beside the title and the button (else the frame alone shows the group, the tooltip
  // names it).
  if (!tag.empty() && title_end - p0.x + mute_w + tag_w + line * 0.5f <= p1.x - p0.x)
    drawProbedText(list, "head" + std::to_string(head) + ".tag", ImVec2(p1.x - tag_w + line * 0.5f, p0.y), tag_color,
                   tag.c_str());
  const char* hint = "rows: queries, columns: keys";
  if (tag.empty() && title_end - p0.x + mute_w + ImGui::CalcTextSize(hint).x + 3 * line < p1.x - p0.x)
    list->AddText(ImVec2(p1.x - ImGui::CalcTextSize(hint).x - line, p0.y), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                  hint);

  // The map: square cells where the space allows, at most the tile; below it the key labels, turned upright
  // when they would otherwise have to be thinned.
  const float n_cols = cells.col1 - cells.col0, n_rows = cells.row1 - cells.row0;
  const float label_w = g.label_w, cell = g.cell;
  const bool labels = g.labels, turned = g.turned;
  const ImVec2 m0(std::floor(p0.x + label_w), std::floor(p0.y + g.title_h));  // whole pixels: one texel each
  const ImVec2 m1(std::floor(m0.x + cell * n_cols), std::floor(m0.y + cell * n_rows));
  out.map_min = m0;
  out.map_max = m1;
  renderer.draw(list, head, m0, m1, cells, 0.0f, scaleTop(state, view, head), view.contrast);
  if (isMuted(view, head)) list->AddRectFilled(m0, m1, IM_COL32(0, 0, 0, kMutedDim));
  if (head == view.walk.head)  // the walkthrough's current step is about this head
    list->AddRect(ImVec2(m0.x - 3, m0.y - 3), ImVec2(m1.x + 3, m1.y + 3), IM_COL32(90, 170, 255, 255), 0, 0, 2.0f);
  probeRect("head" + std::to_string(head) + ".map", m0, m1);
  if (weights_known) drawChangeMarks(list, head, m0, m1, cells, cell);  // what the last edit changed, fading
  if (head == view.breakdown.head && view.breakdown.query < scene.nQ() && view.breakdown.key < scene.nK()) {
    // The cell the Cell tab explains, outlined in orange (hover outlines in white).
    const ImVec2 c0(m0.x + (static_cast<float>(view.breakdown.key) - cells.col0) * cell,
                    m0.y + (static_cast<float>(view.breakdown.query) - cells.row0) * cell);
    list->PushClipRect(m0, m1, true);
    list->AddRect(c0, ImVec2(c0.x + cell, c0.y + cell), IM_COL32(255, 160, 40, 255), 0, 0, 2.0f);
    list->PopClipRect();
  }

  // Large cells carry their number across the middle (2.6 lines at least, so the top fifth stays the plain
  // colour, where the GUI tests read it): lesson/cell_numbers.cpp.
  if (cell >= 2.6f * line && weights_known)
    drawCellNumbers(state, view, renderer, head, cells, m0, m1, cell, scaleTop(state, view, head));

  if (labels) drawAxisLabels(scene, cells, m0, m1, cell, label_w, turned && keyLabelsTurned(scene, cell));

  // Interaction: an invisible button over the map takes hover, clicks, drags and the wheel.
  ImGui::SetCursorScreenPos(m0);
  out.clicked = ImGui::InvisibleButton(("map" + std::to_string(head)).c_str(),
                                       ImVec2(std::max(1.0f, m1.x - m0.x), std::max(1.0f, m1.y - m0.y)));
  const bool map_active = ImGui::IsItemActive(), map_hovered = ImGui::IsItemHovered();
  // A right click on the map: what its title's buttons do, where the hand already is.
  if (ImGui::BeginPopupContextItem(("map_menu" + std::to_string(head)).c_str())) {
    const std::string id = "head" + std::to_string(head) + ".menu.";
    ImGui::TextDisabled("Head %d", head + 1);
    if (ImGui::MenuItem(isMuted(view, head) ? "Unmute" : "Mute")) toggleMuted(view, head);
    probeItem(id + "mute");
    if (ImGui::MenuItem("This head alone", "Shift+click mute")) soloHead(view, head, scene.numHeads());
    probeItem(id + "alone");
    if (grid_tile) {
      if (ImGui::MenuItem("Enlarge")) out.enlarge = true;
      probeItem(id + "enlarge");
    }
    ImGui::EndPopup();
  }
  const ImGuiIO& io = ImGui::GetIO();
  if (zoomable && map_active && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 0.0f)) {
    const float dx = io.MouseDelta.x / cell, dy = io.MouseDelta.y / cell;
    view.heads.zoom.col0 -= dx, view.heads.zoom.col1 -= dx, view.heads.zoom.row0 -= dy, view.heads.zoom.row1 -= dy;
  }
  if (map_hovered) {
    out.enlarge = out.enlarge || (grid_tile && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left));
    const float col = cells.col0 + (io.MousePos.x - m0.x) / cell;
    const float row = cells.row0 + (io.MousePos.y - m0.y) / cell;
    if (zoomable && io.MouseWheel != 0) {
      // Zoom about the cell under the mouse; never closer than 4 cells, never further than the whole map.
      const float factor = std::pow(0.85f, io.MouseWheel);
      const float all_w = static_cast<float>(scene.nK()), all_h = static_cast<float>(scene.nQ());
      const float w = std::clamp(n_cols * factor, std::min(4.0f, all_w), all_w);
      const float h = std::clamp(n_rows * factor, std::min(4.0f, all_h), all_h);
      const float fx = (col - cells.col0) / n_cols, fy = (row - cells.row0) / n_rows;
      view.heads.zoom = CellView{col - fx * w, row - fy * h, col - fx * w + w, row - fy * h + h};
    }
    const int i = static_cast<int>(std::floor(row)), j = static_cast<int>(std::floor(col));
    if (zoomable && i >= 0 && i < scene.nQ()) view.profile.query = i;  // the row profile follows the mouse
    // A click (not the end of a pan) picks the cell for the breakdown panel.
    if (out.clicked && io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Left] < 16 && i >= 0 && i < scene.nQ() && j >= 0 &&
        j < scene.nK()) {
      view.breakdown.head = head;
      view.breakdown.query = i;
      view.breakdown.key = j;
    }
    if (i >= 0 && i < scene.nQ() && j >= 0 && j < scene.nK()) {
      const ImVec2 c0(m0.x + (static_cast<float>(j) - cells.col0) * cell,
                      m0.y + (static_cast<float>(i) - cells.row0) * cell);
      list->AddRect(c0, ImVec2(c0.x + cell, c0.y + cell), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
      ImGui::BeginTooltip();
      if (scene.grouped())
        ImGui::Text("Head %d (KV head %d)", head + 1, scene.kvOf(head) + 1);
      else
        ImGui::Text("Head %d", head + 1);
      // Heads count from 1, positions from 0 (as the exports' CSV and NPY), always with the token beside them.
      ImGui::Text("query  %s  (position %d)", q_tokens[static_cast<std::size_t>(i)].c_str(), i);
      ImGui::Text("key    %s  (position %d)", k_tokens[static_cast<std::size_t>(j)].c_str(), j);
      if (!weights_known) {  // the overview is drawn; the exact weight needs the result's m, l
        ImGui::TextDisabled("weight: computing the result...");
        ImGui::EndTooltip();
        return out;
      }
      const HeadResult& hr = state.result().heads[static_cast<std::size_t>(head)];
      // The exact weight: from the map, or a 1 x 1 tile recomputed from q_i, k_j and the row statistics.
      ImGui::Text("weight %.4f",
                  hr.hasMap() ? hr.weights(i, j)
                              : weightTile(scene, state.result(), TileRequest{head, i, i + 1, j, j + 1}).values(0, 0));
      valueNormTooltipLine(state, view, renderer, head, i, j);
      changeTooltipLine(head, i, j);
      if (hr.scores.size() == 0)
        ImGui::TextDisabled("score not kept");
      else if (std::isinf(hr.scores(i, j)))
        ImGui::Text("score  masked (-inf)");
      else
        ImGui::Text("score  %.4f", hr.scores(i, j));
      ImGui::EndTooltip();
    }
  }
  return out;
}

// Under the grid when heads are muted: the ablate mode button and which heads, then the L2 norm of the output
// change per query token when they are ablated (the engine's ablateHeads) as a bar per query, with its scale on
// the left and the query tokens under the bars. Height: kMutedEffectLines text lines.
constexpr float kMutedEffectLines = 5.0f;

void drawMutedEffect(const AppState& state, ViewState& view, ImVec2 p0, float width) {
  if (longScene(state) || state.weightsPending()) {  // an output projection of n rows per frame: too slow live
    ImGui::SetCursorScreenPos(p0);
    ImGui::PushTextWrapPos(p0.x + width);
    ImGui::TextDisabled(
        "Muted heads are dimmed; their ablation effect is not computed live for a long scene "
        "(attnscope analyze gives each head's importance).");
    ImGui::PopTextWrapPos();
    return;
  }
  const AblationMode mode = view.heads.mute_mean ? AblationMode::Mean : AblationMode::Zero;
  const AblationResult ab = ablateHeads(state.scene(), state.result(), view.heads.muted, mode);
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const ImU32 text_color = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  // Line 1: the mode button (zero or mean ablation: a muted head's output replaced by zeros, or by its mean over
  // the queries), then what is muted and the total change.
  const ImVec2 cursor = ImGui::GetCursorScreenPos();
  ImGui::SetCursorScreenPos(p0);
  if (ImGui::SmallButton(view.heads.mute_mean ? "ablate: mean" : "ablate: zero")) view.heads.mute_mean = !view.heads.mute_mean;
  probeItem("heads.mute_mode");
  const float text_x = ImGui::GetItemRectMax().x + line * 0.5f;
  ImGui::SetCursorScreenPos(cursor);
  std::string text = ab.heads.size() > 1 ? "muted heads" : "muted head";
  for (int h : ab.heads) text += " " + std::to_string(h + 1);
  char total[64];
  std::snprintf(total, sizeof total, ": output change (L2) %.4f", ab.total_change);
  text += total;
  // In a narrow pane (1000 x 700) the line is cut with "…" to its room and shown whole on hover.
  const float room = p0.x + width - text_x;
  const std::string shown =
      elideToWidth(text, room, [](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x; });
  probeFit("heads.muted_effect.text", ImGui::CalcTextSize(shown.c_str()).x <= room);
  probeNote("heads.muted_effect.text", text);
  list->PushClipRect(ImVec2(text_x, p0.y), ImVec2(p0.x + width, p0.y + line * 1.2f), true);
  list->AddText(ImVec2(text_x, p0.y), text_color, shown.c_str());
  list->PopClipRect();
  if (shown != text && ImGui::IsWindowHovered() &&
      ImGui::IsMouseHoveringRect(ImVec2(text_x, p0.y), ImVec2(p0.x + width, p0.y + line)))
    ImGui::SetTooltip("%s", text.c_str());

  // The bars: one per query, height in proportion to its change; the scale (0 .. largest) on the left.
  double largest = 0;
  for (double c : ab.query_change) largest = std::max(largest, c);
  char top_text[32];
  std::snprintf(top_text, sizeof top_text, "%.3g", largest);
  const float axis_w = ImGui::CalcTextSize(top_text).x + line * 0.4f;
  const float x0 = p0.x + axis_w, bars_w = width - axis_w;
  const float top = p0.y + 1.5f * line, base = p0.y + 3.6f * line;
  list->AddText(ImVec2(p0.x, top - line * 0.5f), dim, top_text);
  list->AddText(ImVec2(x0 - ImGui::CalcTextSize("0").x - line * 0.4f, base - line * 0.5f), dim, "0");
  list->AddLine(ImVec2(x0 - 1, top), ImVec2(x0 - 1, base), dim);
  const int n = static_cast<int>(ab.query_change.size());
  const float bar_w = std::max(1.0f, std::min(3 * line, bars_w / static_cast<float>(std::max(1, n))));
  for (int i = 0; i < n; ++i) {
    const float h =
        largest > 0 ? static_cast<float>(ab.query_change[static_cast<std::size_t>(i)] / largest) * (base - top) : 0;
    const float x = x0 + static_cast<float>(i) * bar_w;
    list->AddRectFilled(ImVec2(x + (bar_w > 3 ? 1 : 0), base - h), ImVec2(x + bar_w - (bar_w > 3 ? 1 : 0), base),
                        IM_COL32(230, 120, 60, 255));
  }
  // Query tokens under their bars, every k-th so that they never overlap.
  const std::vector<std::string>& tokens = state.scene().query_tokens;
  float token_w = 0;
  for (const std::string& t : tokens) token_w = std::max(token_w, ImGui::CalcTextSize(axisLabel(t).c_str()).x);
  const int stride = std::max(1, static_cast<int>(std::ceil((std::min(token_w, 6 * line) + line * 0.5f) / bar_w)));
  list->PushClipRect(ImVec2(x0, base), ImVec2(p0.x + width, base + 1.2f * line), true);
  for (int i = 0; i < n; i += stride) {
    const char* t = tokens[static_cast<std::size_t>(i)].c_str();
    const float x = x0 + (static_cast<float>(i) + 0.5f) * bar_w - ImGui::CalcTextSize(t).x * 0.5f;
    list->AddText(ImVec2(std::max(x0, x), base + 1), dim, t);
  }
  list->PopClipRect();
  probeRect("heads.muted_effect", p0, ImVec2(p0.x + width, base));
}

void clampZoom(CellView& z, const Scene& scene) {
  const float w = std::min(z.col1 - z.col0, static_cast<float>(scene.nK()));
  const float h = std::min(z.row1 - z.row0, static_cast<float>(scene.nQ()));
  z.col0 = std::clamp(z.col0, 0.0f, static_cast<float>(scene.nK()) - w);
  z.row0 = std::clamp(z.row0, 0.0f, static_cast<float>(scene.nQ()) - h);
  z.col1 = z.col0 + w;
  z.row1 = z.row0 + h;
}

}  // namespace

void drawHeadsPanel(AppState& state, ViewState& view, HeatmapRenderer& renderer) {
  // After the editors on the left have applied this frame's edits; the weighting as the switch says.
  renderer.sync(state, valueNormsShown(view));
  trackChanges(state);
  const Scene& scene = state.headsScene();
  const int heads = scene.numHeads();
  if (view.heads.focus >= heads) view.heads.focus = -1;
  if (view.heads.compare_a >= heads || view.heads.compare_b >= heads) view.heads.compare_a = view.heads.compare_b = -1;

  drawContrastControl(view.contrast);
  drawValueNormSwitch(view);
  if (state.resultPending()) {  // a big scene recomputes off the UI thread: the maps show the previous result
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.3f, 1.0f), "updating...");
    probeItem("heads.stale");
  }
  bool maps_stale = false;
  const std::string progress = renderer.progress(state, maps_stale);  // a long scene's overviews, as they land
  if (!progress.empty() || maps_stale) {
    const std::string text = progress.empty() ? "uploading maps..." : progress;
    // On the row when it fits, else on a line of its own: a narrow pane cut it at its edge. x in window coordinates.
    const float row_end = ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + ImGui::GetStyle().ItemSpacing.x;
    if (row_end + ImGui::CalcTextSize(text.c_str()).x <= ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
    ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.3f, 1.0f), "%s", text.c_str());
    probeItem("heads.overviews");
  }
  if (view.heads.focus >= 0 || view.heads.compare_a >= 0) {
    // Right-aligned on the row when it fits after what the row already holds (the overview progress, say),
    // else on a line of its own: never drawn over the text before it. x in window coordinates.
    const float button_width = ImGui::CalcTextSize("All heads").x + 2 * ImGui::GetStyle().FramePadding.x;
    const float row_end = ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + ImGui::GetStyle().ItemSpacing.x;
    const float right_aligned = ImGui::GetWindowContentRegionMax().x - button_width;
    if (right_aligned >= row_end) ImGui::SameLine(right_aligned);
    if (ImGui::Button("All heads")) view.heads.showAll();
    probeItem("heads.back");
  }
  // After the button: this frame draws what it chose (head -1 enlarged crashed the window).
  const bool single = view.heads.focus >= 0, pair = view.heads.compare_a >= 0;

  // The grid (or the enlarged head) fills the panel, leaving a strip for the colour bar on the right.
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  view.heads.muted.erase(
      std::remove_if(view.heads.muted.begin(), view.heads.muted.end(), [&](int h) { return h >= heads; }),
      view.heads.muted.end());
  const float effect_h = view.heads.muted.empty() ? 0.0f : kMutedEffectLines * ImGui::GetTextLineHeight();
  avail.y -= effect_h;
  const float bar_w = ImGui::GetFontSize() * 3.5f;
  const float gap = ImGui::GetFontSize() * 0.8f;
  const ImVec2 area(avail.x - bar_w - gap, avail.y);
  const CellView whole{0, 0, static_cast<float>(scene.nK()), static_cast<float>(scene.nQ())};

  if (single) {
    clampZoom(view.heads.zoom, scene);
    // The hovered query row, else the clicked one, feeds the row profile under the map.
    view.profile.query = view.breakdown.head == view.heads.focus ? view.breakdown.query : -1;
    const float profile_h = rowProfileHeight();
    drawTile(state, view, renderer, view.heads.focus, origin, ImVec2(origin.x + area.x, origin.y + area.y - profile_h),
             view.heads.zoom, true, widestQueryLabel(scene));
    // The cells in view, in cells not pixels, for the scripted tests (gui_long_zoom checks them by colour).
    probeRect("heads.zoom_cells", ImVec2(view.heads.zoom.col0, view.heads.zoom.row0), ImVec2(view.heads.zoom.col1, view.heads.zoom.row1));
    drawRowProfile(state, view, view.heads.focus, ImVec2(origin.x, origin.y + area.y - profile_h + 4), area.x);
  } else if (pair) {
    const float w = (area.x - gap) / 2;
    drawTile(state, view, renderer, view.heads.compare_a, origin, ImVec2(origin.x + w, origin.y + area.y), whole, false,
             widestQueryLabel(scene));
    const ImVec2 second(origin.x + w + gap, origin.y);
    drawTile(state, view, renderer, view.heads.compare_b, second, ImVec2(second.x + w, origin.y + area.y), whole, false,
             widestQueryLabel(scene));
  } else {
    std::vector<int> order = headOrder(state, view);  // of the result's scene: a long edit may have other heads
    if (static_cast<int>(order.size()) != heads) {
      order.resize(static_cast<std::size_t>(heads));
      for (int h = 0; h < heads; ++h) order[static_cast<std::size_t>(h)] = h;
    }
    const auto kv_at = [&](int slot) { return scene.kvOf(order[static_cast<std::size_t>(slot)]); };
    // The columns that give the largest maps (each tile's title and labels counted, as drawTile lays them out);
    // with grouped heads only those that start every row with a new KV group, so that no group is split
    // across two rows (one row of every head always qualifies).
    const float widest_query = widestQueryLabel(scene);
    int cols = heads;
    float best = -1;
    for (int c = 1; c <= heads; ++c) {
      bool whole_groups = true;
      for (int slot = c; slot < heads && scene.grouped(); slot += c)
        whole_groups = whole_groups && kv_at(slot) != kv_at(slot - 1);
      if (!whole_groups) continue;
      const int rows = (heads + c - 1) / c;
      const TileGeometry g = tileGeometry(scene, widest_query, area.x / static_cast<float>(c) - gap,
                                          area.y / static_cast<float>(rows) - gap * 0.5f, whole);
      const float score = g.cell * (g.labels ? 1.1f : 1.0f);  // tokens beside the map: worth a tenth of its side
      if (score > best) best = score, cols = c;
    }
    const int rows = (heads + cols - 1) / cols;
    const float tile_w = area.x / static_cast<float>(cols);
    // Rows as tall as their maps need, stacked without a band between them (the map is square-celled, so when
    // the width limits it the height to spare goes below the grid, in one place).
    const float room_h = area.y / static_cast<float>(rows);
    const float tile_h =
        std::min(room_h, tileGeometry(scene, widest_query, tile_w - gap, room_h - gap * 0.5f, whole).height + gap);
    const ImU32 frame = IM_COL32(240, 200, 80, 255);
    for (int slot = 0; slot < heads; ++slot) {
      const int h = order[static_cast<std::size_t>(slot)];
      const ImVec2 t0(origin.x + static_cast<float>(slot % cols) * tile_w,
                      origin.y + static_cast<float>(slot / cols) * tile_h);
      const ImVec2 t1(t0.x + tile_w - gap, t0.y + tile_h - gap * 0.5f);
      // A KV group's last head in its row carries the group's name in its title line.
      const bool run_ends = slot + 1 == heads || (slot + 1) % cols == 0 || kv_at(slot + 1) != kv_at(slot);
      const std::string tag = scene.grouped() && run_ends ? "KV " + std::to_string(kv_at(slot) + 1) : "";
      if (drawTile(state, view, renderer, h, t0, t1, whole, false, widest_query, tag, frame).enlarge) {
        view.heads.focus = h;
        view.heads.zoom = whole;
      }
    }
    probeRect("heads.area", origin, ImVec2(origin.x + area.x, origin.y + area.y));
    // Grouped-query heads: each run of one key/value head's query heads along a row of tiles inside one frame
    // (the heads of a group sit side by side unless clustering reorders them).
    if (scene.grouped()) {
      ImDrawList* list = ImGui::GetWindowDrawList();
      for (int slot = 0; slot < heads;) {
        const int kv = kv_at(slot);
        int end = slot + 1;
        while (end < heads && end % cols != 0 && kv_at(end) == kv) ++end;
        const ImVec2 f0(origin.x + static_cast<float>(slot % cols) * tile_w - gap * 0.4f,
                        origin.y + static_cast<float>(slot / cols) * tile_h - gap * 0.4f);
        const ImVec2 f1(origin.x + static_cast<float>((end - 1) % cols + 1) * tile_w - gap * 0.6f,
                        f0.y + tile_h - gap * 0.1f);
        list->AddRect(f0, f1, frame, 0, 0, 2.0f);
        probeRect("heads.kvframe." + std::to_string(slot), f0, f1);
        slot = end;
      }
    }
  }
  if (!view.heads.muted.empty())
    drawMutedEffect(state, view, ImVec2(origin.x, origin.y + avail.y + 0.2f * ImGui::GetTextLineHeight()), area.x);
  const float top = scaleTop(state, view, std::max(0, view.heads.focus));
  const ImVec2 b0(origin.x + area.x + gap, origin.y + ImGui::GetTextLineHeight() * 1.2f);
  drawColorBar(ImGui::GetWindowDrawList(), b0, ImVec2(b0.x + bar_w * 0.35f, b0.y + std::min(area.y * 0.6f, 300.0f)),
               view.contrast.scale == ColorScale::PerHead && view.heads.focus < 0 ? 1.0f : top, view.contrast);
  if (view.contrast.scale == ColorScale::PerHead && view.heads.focus < 0)
    ImGui::GetWindowDrawList()->AddText(ImVec2(b0.x, b0.y + std::min(area.y * 0.6f, 300.0f) + 20),
                                        ImGui::GetColorU32(ImGuiCol_TextDisabled), "x head\nmax");
}

std::vector<int> headOrder(const AppState& state, const ViewState& view, Clustering* clustering) {
  const int h = state.scene().numHeads();
  const Similarity& s = state.result().similarity;
  if (view.similarity.cluster_order && s.cosine.rows() == h && s.js.rows() == h) {
    Clustering c = clusterHeads(s, view.similarity.metric == 0 ? ClusterMetric::Cosine : ClusterMetric::JensenShannon);
    std::vector<int> order = c.order;
    if (clustering) *clustering = std::move(c);
    return order;
  }
  std::vector<int> order(static_cast<std::size_t>(h));
  for (int i = 0; i < h; ++i) order[static_cast<std::size_t>(i)] = i;
  return order;
}

}  // namespace attnscope::app
