// The subject pane's layers x heads maps (layer_head_map.h).
#include "window/runviews/layer_head_map.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnscope/model/model_export.h"
#include "window/subject/model_session.h"
#include "window/ui_probe.h"
#include "window/widgets/widgets.h"
#include "window/runviews/find_heads.h"

namespace attnscope::app {

namespace {

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

std::optional<std::pair<int, int>> drawLayerHeadMap(const LayerHeadMap& map) {
  const int layers = map.layers, heads = map.heads;
  if (layers <= 0 || heads <= 0) return std::nullopt;
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float font = ImGui::GetFontSize(), line = ImGui::GetTextLineHeight();
  const float label_w = ImGui::CalcTextSize("L00").x + 0.4f * font;
  const float cell_w = std::clamp(
      std::floor((ImGui::GetContentRegionAvail().x - label_w - 2) / static_cast<float>(heads)), 3.0f,
      map.max_cell_fonts * font);
  const float cell_h = std::clamp(cell_w, 3.0f, line);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 p0(origin.x + label_w, origin.y + line + 2);
  const ImU32 label_color = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const auto label = [&](int h) { return map.column_label ? map.column_label(h) : "H" + std::to_string(h + 1); };
  float widest = ImGui::CalcTextSize("H00").x;
  if (map.column_label)
    for (int h = 0; h < heads; ++h) widest = std::max(widest, ImGui::CalcTextSize(label(h).c_str()).x);
  const int head_step = std::max(1, static_cast<int>(std::ceil((widest + 4) / cell_w)));
  for (int h : labelled(heads, head_step)) {
    const std::string text = label(h);
    drawProbedText(list, map.id + ".headlabel." + std::to_string(h),
                   ImVec2(p0.x + (h + 0.5f) * cell_w - ImGui::CalcTextSize(text.c_str()).x * 0.5f, origin.y),
                   label_color, text.c_str());
  }
  const int layer_step = std::max(1, static_cast<int>(std::ceil(line / cell_h)));
  for (int l : labelled(layers, layer_step)) {
    const std::string text = "L" + std::to_string(l + 1);
    drawProbedText(
        list, map.id + ".layerlabel." + std::to_string(l),
        ImVec2(p0.x - ImGui::CalcTextSize(text.c_str()).x - 0.2f * font, p0.y + (l + 0.5f) * cell_h - line * 0.5f),
        label_color, text.c_str());
  }
  const float gap = cell_w >= 6 ? 1.0f : 0.0f;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const std::optional<double> v = map.value(l, h);
      const Rgb8 c =
          v ? colorAt(map.colors, colorMapParameter(static_cast<float>(map.place ? map.place(*v) : *v), map.vmin,
                                                    map.vmax))
            : kMaskedColor;
      const ImVec2 c0(p0.x + h * cell_w, p0.y + l * cell_h);
      list->AddRectFilled(c0, ImVec2(c0.x + cell_w - gap, c0.y + cell_h - gap), IM_COL32(c.r, c.g, c.b, 255));
    }
  if (map.marked_layer >= 0 && map.marked_head >= 0) {
    const ImVec2 c0(p0.x + map.marked_head * cell_w, p0.y + map.marked_layer * cell_h);
    // White, with a dark edge outside so that it shows on viridis' yellow and the diverging map's white alike.
    list->AddRect(ImVec2(c0.x - 2, c0.y - 2), ImVec2(c0.x + cell_w + 1, c0.y + cell_h + 1), IM_COL32(0, 0, 0, 255));
    list->AddRect(ImVec2(c0.x - 1, c0.y - 1), ImVec2(c0.x + cell_w, c0.y + cell_h), IM_COL32(255, 255, 255, 255));
  }
  ImGui::SetCursorScreenPos(p0);
  const ImVec2 size(cell_w * static_cast<float>(heads), cell_h * static_cast<float>(layers));
  const bool clicked = ImGui::InvisibleButton((map.id + ".map").c_str(), size);
  probeRect(map.id + ".map", p0, ImVec2(p0.x + size.x, p0.y + size.y));
  if (!ImGui::IsItemHovered()) return std::nullopt;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const int l = std::clamp(static_cast<int>((mouse.y - p0.y) / cell_h), 0, layers - 1);
  const int h = std::clamp(static_cast<int>((mouse.x - p0.x) / cell_w), 0, heads - 1);
  if (map.tooltip) ImGui::SetTooltip("%s", map.tooltip(l, h).c_str());
  if (clicked) return std::make_pair(l, h);
  return std::nullopt;
}

std::optional<int> drawRankedButtons(const std::string& id, const std::vector<std::string>& texts) {
  std::optional<int> clicked;
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  for (int k = 0; k < static_cast<int>(texts.size()); ++k) {
    const std::string& text = texts[static_cast<std::size_t>(k)];
    // On the line while it fits, else on the next (decided before SameLine: a SameLine then NewLine would leave
    // the cursor's reach past the pane's edge).
    const float w = ImGui::CalcTextSize(text.c_str()).x + ImGui::GetStyle().FramePadding.x * 2;
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w <= right) ImGui::SameLine();
    if (ImGui::SmallButton(text.c_str())) clicked = k;
    probeItem(id + ".top." + std::to_string(k));
  }
  return clicked;
}

void rememberShown(FindHeadsState& find, const LayerHeadMap& map) {
  auto values = std::make_shared<model::LayerHeadValues>();
  values->title = map.title, values->scale_label = map.scale_label, values->number_name = map.number_name;
  values->map = map.colors, values->vmin = map.vmin, values->vmax = map.vmax, values->bar_labels = map.bar_labels;
  values->shown = Matrix::Zero(map.layers, map.heads);
  values->numbers = Matrix::Constant(map.layers, map.heads, std::nanf(""));
  for (int l = 0; l < map.layers; ++l)
    for (int h = 0; h < map.heads; ++h)
      if (const std::optional<double> v = map.value(l, h)) {
        values->shown(l, h) = static_cast<float>(map.place ? map.place(*v) : *v);
        values->numbers(l, h) = static_cast<float>(*v);
      }
  find.shown = std::move(values);
  find.shown_frame = ImGui::GetFrameCount();
}

bool checkpointMapOffered(const ModelSession& s, const std::string& what, std::string (*refusal)(const model::Model&)) {
  if (!s.checkpoint()) {
    textWrappedAtSpaces(what + " needs a checkpoint's weights: a saved tensor holds maps only.");
    probeItem("findheads.unavailable");
    return false;
  }
  if (const std::string why = refusal(*s.checkpoint()); !why.empty()) {
    textWrappedAtSpaces("Not offered: " + why + ".");
    probeItem("findheads.unavailable");
    probeNote("findheads.unavailable", why);
    return false;
  }
  return true;
}

float drawDivergingScale(double largest) {
  const float m = largest > 0 ? static_cast<float>(largest) : 1.0f;
  const float font = ImGui::GetFontSize();
  drawDivergingBar(ImGui::GetWindowDrawList(), ImGui::GetCursorScreenPos(),
                   std::min(ImGui::GetContentRegionAvail().x, 12 * font), 0.6f * font, m);
  ImGui::Dummy(ImVec2(1, 1.9f * ImGui::GetTextLineHeight()));
  probeNote("findheads.vmax", formatted("%.6g", m));
  return m;
}

}  // namespace attnscope::app
