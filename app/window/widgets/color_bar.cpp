// The colour bar beside the heads' and the model's maps, labelled in the contrast's terms, and the contrast control
// above them (widgets.h): one MapContrast (the window's) colours the heads, the model grid, the full-size map and the
// rollout.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "attnscope/export/colormap.h"
#include "window/ui_probe.h"
#include "window/widgets/widgets.h"

namespace attnscope::app {

namespace {
// What the colour bar says at its top ("1.00", a max, "row\nmax") and bottom (0, or top / 1000 on the log scale).
struct ColorBarLabels {
  char top[32], bottom[32];
};
ColorBarLabels colorBarLabels(float top, const MapContrast& contrast) {
  ColorBarLabels l{};
  const bool rows = contrast.scale == ColorScale::RowMax;
  if (rows)
    std::snprintf(l.top, sizeof l.top, "row\nmax");
  else
    std::snprintf(l.top, sizeof l.top, "%.2f", top);
  if (contrast.log && rows)
    std::snprintf(l.bottom, sizeof l.bottom, "max\n/1000");
  else if (contrast.log)
    std::snprintf(l.bottom, sizeof l.bottom, "%.0e", static_cast<double>(top) / 1000);
  else
    std::snprintf(l.bottom, sizeof l.bottom, "0");
  return l;
}
}  // namespace

// A vertical colour bar from 0 (bottom) to `top`, one band per colour-map entry, labelled in the contrast's
// terms: its top ("1.00", a max, "row max") and its bottom (0, or top / 1000 on the log scale).
void drawColorBar(ImDrawList* list, ImVec2 p0, ImVec2 p1, float top, const MapContrast& contrast) {
  const auto& table = colorMapTable(ColorMap::Viridis);
  const float h = p1.y - p0.y;
  for (int i = 0; i < kColorMapSize; ++i) {
    const float y1 = p1.y - h * static_cast<float>(i) / kColorMapSize;
    const float y0 = p1.y - h * static_cast<float>(i + 1) / kColorMapSize;
    const Rgb8 c = table[static_cast<std::size_t>(i)];
    list->AddRectFilled(ImVec2(p0.x, std::floor(y0)), ImVec2(p1.x, std::ceil(y1)), IM_COL32(c.r, c.g, c.b, 255));
  }
  list->AddRect(p0, p1, IM_COL32(120, 120, 120, 255));
  const ColorBarLabels labels = colorBarLabels(top, contrast);
  const ImU32 color = ImGui::GetColorU32(ImGuiCol_Text);
  drawProbedText(list, "colorbar.top", ImVec2(p1.x + 4, p0.y - 2), color, labels.top);
  drawProbedText(list, "colorbar.bottom", ImVec2(p1.x + 4, p1.y - ImGui::CalcTextSize(labels.bottom).y), color,
                 labels.bottom);
  if (contrast.log)  // the decades between: 1/10 and 1/100 of the top, a third and two thirds up
    for (int k = 1; k <= 2; ++k) {
      const float y = p0.y + (p1.y - p0.y) * static_cast<float>(k) / 3.0f;
      list->AddLine(ImVec2(p1.x, y), ImVec2(p1.x + 3, y), color);
      drawProbedText(list, "colorbar.decade" + std::to_string(k), ImVec2(p1.x + 4, y - ImGui::GetFontSize() * 0.5f),
                     ImGui::GetColorU32(ImGuiCol_TextDisabled), k == 1 ? "/10" : "/100");
    }
}

float colorBarLabelWidth(float top, const MapContrast& contrast) {
  const ColorBarLabels labels = colorBarLabels(top, contrast);
  float widest = std::max(ImGui::CalcTextSize(labels.top).x, ImGui::CalcTextSize(labels.bottom).x);
  if (contrast.log) widest = std::max(widest, ImGui::CalcTextSize("/100").x);
  return widest;
}

// The contrast control: the scale's top (0 to 1, a max, each row's max) and the log scale, on one row where it
// fits. The same MapContrast colours the heads, the model grid and the full-size map.
void drawContrastControl(MapContrast& contrast) {
  ImGui::TextUnformatted("Colour scale");
  int scale = static_cast<int>(contrast.scale);
  const char* names[] = {"0 to 1", "shared max", "per-head max", "row max"};
  for (int i = 0; i < 4; ++i) {
    const float w = ImGui::CalcTextSize(names[i]).x + ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x;
    const float row_end = ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + ImGui::GetStyle().ItemSpacing.x;
    if (row_end + w <= ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
    if (ImGui::RadioButton(names[i], scale == i)) contrast.scale = static_cast<ColorScale>(i);
    probeItem(std::string("heads.scale.") + std::to_string(i));
    if (i == 3 && ImGui::IsItemHovered())
      ImGui::SetTooltip("Each query row over its own largest weight: where each token looks, whatever its spread.");
  }
  const float log_w = ImGui::CalcTextSize("log").x + ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x;
  const float row_end = ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + ImGui::GetStyle().ItemSpacing.x;
  if (row_end + log_w <= ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
  ImGui::Checkbox("log", &contrast.log);
  probeItem("heads.scale.log");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("A log scale over 3 decades: from the top down to a thousandth of it.");
}

}  // namespace attnscope::app
