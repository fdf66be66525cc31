// "Find heads": one head-type score for every layer and head of the subject as a layers x heads map (the first
// plot of TransformerLens's head detector and ARENA's induction map), the strongest heads listed beside it; a
// click on either opens that head's map in the centre. The scores come off the UI thread
// (ModelSession::headScores); the map is drawn from them, viridis over 0..1, undefined scores in the masked grey.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnscope/export/colormap.h"
#include "window/model/model_session.h"
#include "window/model/subject.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

constexpr int kListed = 5;  // the strongest heads listed under the map

void openHead(ViewState& view, ModelSession& s, int layer, int head) {
  s.layer = layer;
  s.focus_head = head;
  s.shown = true;
  view.model_rollout = 0;  // the heads, not the rollout
  view.model_zoom = CellView{0, 0, static_cast<float>(s.forward().n), static_cast<float>(s.forward().n)};
}

// Labels along one axis, every `step`-th from the first, and the last when it keeps a step's room from the one
// before: "L1" ... beside rows, "H1" ... above columns.
std::vector<int> labelled(int count, int step) {
  std::vector<int> at;
  for (int k = 0; k < count; k += step) at.push_back(k);
  if (at.back() != count - 1) {
    if (count - 1 - at.back() < step) at.pop_back();
    at.push_back(count - 1);
  }
  return at;
}

}  // namespace

void drawHeadScoresMap(ViewState& view, ModelSession& s) {
  const ModelSession::HeadScores* scores = s.headScores();
  const std::vector<std::string>& names = headTypeScoreNames();
  sectionHeader("Find heads");
  view.find_score = std::clamp(view.find_score, 0, static_cast<int>(names.size()) - 1);
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("duplicate-token").x + 3 * ImGui::GetFontSize());
  if (ImGui::BeginCombo("score", headTypeText(names[static_cast<std::size_t>(view.find_score)]))) {
    for (int k = 0; k < static_cast<int>(names.size()); ++k) {
      if (ImGui::Selectable(headTypeText(names[static_cast<std::size_t>(k)]), k == view.find_score))
        view.find_score = k;
      probeItem("findheads.score." + std::to_string(k));
    }
    ImGui::EndCombo();
  }
  probeItem("findheads.score");
  if (!scores) {
    ImGui::TextDisabled("scoring every head...");
    probeItem("findheads.pending");
    return;
  }
  const std::string& name = names[static_cast<std::size_t>(view.find_score)];
  const int layers = static_cast<int>(scores->size()), heads = layers > 0 ? static_cast<int>((*scores)[0].size()) : 0;
  if (layers == 0 || heads == 0) return;
  auto score = [&](int l, int h) {
    return headTypeScore((*scores)[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)], name);
  };

  ImDrawList* list = ImGui::GetWindowDrawList();
  const float font = ImGui::GetFontSize(), line = ImGui::GetTextLineHeight();
  drawScaleBar(list, ImGui::GetCursorScreenPos(), std::min(ImGui::GetContentRegionAvail().x, 12 * font), 0.6f * font,
               ColorMap::Viridis, 0.0f, 1.0f);
  ImGui::Dummy(ImVec2(1, 1.9f * line));
  const float label_w = ImGui::CalcTextSize("L00").x + 0.4f * font;
  const float cell_w = std::clamp(
      std::floor((ImGui::GetContentRegionAvail().x - label_w - 2) / static_cast<float>(heads)), 3.0f, 2 * font);
  const float cell_h = std::clamp(cell_w, 3.0f, line);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 p0(origin.x + label_w, origin.y + line + 2);
  const ImU32 label_color = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const int head_step = std::max(1, static_cast<int>(std::ceil((ImGui::CalcTextSize("H00").x + 4) / cell_w)));
  for (int h : labelled(heads, head_step)) {
    const std::string text = "H" + std::to_string(h + 1);
    drawProbedText(list, "findheads.headlabel." + std::to_string(h),
                   ImVec2(p0.x + (h + 0.5f) * cell_w - ImGui::CalcTextSize(text.c_str()).x * 0.5f, origin.y),
                   label_color, text.c_str());
  }
  const int layer_step = std::max(1, static_cast<int>(std::ceil(line / cell_h)));
  for (int l : labelled(layers, layer_step)) {
    const std::string text = "L" + std::to_string(l + 1);
    drawProbedText(
        list, "findheads.layerlabel." + std::to_string(l),
        ImVec2(p0.x - ImGui::CalcTextSize(text.c_str()).x - 0.2f * font, p0.y + (l + 0.5f) * cell_h - line * 0.5f),
        label_color, text.c_str());
  }
  const float gap = cell_w >= 6 ? 1.0f : 0.0f;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const std::optional<double> v = score(l, h);
      const Rgb8 c =
          v ? colorAt(ColorMap::Viridis, colorMapParameter(static_cast<float>(*v), 0.0f, 1.0f)) : kMaskedColor;
      const ImVec2 c0(p0.x + h * cell_w, p0.y + l * cell_h);
      list->AddRectFilled(c0, ImVec2(c0.x + cell_w - gap, c0.y + cell_h - gap), IM_COL32(c.r, c.g, c.b, 255));
    }
  if (s.focused()) {  // the head on show, outlined
    const ImVec2 c0(p0.x + s.focus_head * cell_w, p0.y + s.layer * cell_h);
    list->AddRect(ImVec2(c0.x - 1, c0.y - 1), ImVec2(c0.x + cell_w, c0.y + cell_h), IM_COL32(255, 255, 255, 255));
  }
  ImGui::SetCursorScreenPos(p0);
  const ImVec2 size(cell_w * static_cast<float>(heads), cell_h * static_cast<float>(layers));
  const bool clicked = ImGui::InvisibleButton("findheads.map", size);
  probeRect("findheads.map", p0, ImVec2(p0.x + size.x, p0.y + size.y));
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int l = std::clamp(static_cast<int>((mouse.y - p0.y) / cell_h), 0, layers - 1);
    const int h = std::clamp(static_cast<int>((mouse.x - p0.x) / cell_w), 0, heads - 1);
    const std::optional<double> v = score(l, h);
    if (v)
      ImGui::SetTooltip("layer %d, head %d\n%s score %.3f\nclick: open its map", l + 1, h + 1, headTypeText(name), *v);
    else
      ImGui::SetTooltip("layer %d, head %d\nno %s score: no query row has such a key\nclick: open its map", l + 1,
                        h + 1, headTypeText(name));
    if (clicked) openHead(view, s, l, h);
  }

  // The strongest heads, in words, each a click away.
  std::vector<std::pair<double, int>> ranked;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h)
      if (const std::optional<double> v = score(l, h)) ranked.emplace_back(*v, l * heads + h);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (ranked.empty()) {
    textWrappedAtSpaces(std::string("No head has a ") + headTypeText(name) +
                        " score on this text: no token repeats. Try repeated random tokens.");
    return;
  }
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ImGui::TextDisabled("strongest:");
  for (int k = 0; k < std::min(kListed, static_cast<int>(ranked.size())); ++k) {
    const int l = ranked[static_cast<std::size_t>(k)].second / heads,
              h = ranked[static_cast<std::size_t>(k)].second % heads;
    const std::string text =
        formatted("layer %d, head %d: %.3f", l + 1, h + 1, ranked[static_cast<std::size_t>(k)].first);
    // On the line while it fits, else on the next (decided before SameLine: a SameLine then NewLine would leave
    // the cursor's reach past the pane's edge).
    const float w = ImGui::CalcTextSize(text.c_str()).x + ImGui::GetStyle().FramePadding.x * 2;
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w <= right) ImGui::SameLine();
    if (ImGui::SmallButton(text.c_str())) openHead(view, s, l, h);
    probeItem("findheads.top." + std::to_string(k));
  }
}

}  // namespace attnscope::app
