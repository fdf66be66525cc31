// Similarity panel: the heads x heads matrix (cosine of flattened weight maps, or Jensen-Shannon divergence);
// hover names the pair, a click shows the two heads side by side in the heads panel.
#include <cmath>
#include <string>

#include "attnscope/colormap.h"
#include "panels.h"
#include "ui_probe.h"

namespace attnscope::app {

void drawSimilarityPanel(AppState& state, ViewState& view) {
  ImGui::RadioButton("cosine", &view.metric, 0);
  ImGui::SameLine();
  ImGui::RadioButton("Jensen-Shannon", &view.metric, 1);
  const bool cosine = view.metric == 0;
  ImGui::TextDisabled(
      cosine ? "1 = identical attention maps, 0 = no overlap" : "0 = identical rows; ln 2 = %.3f = disjoint",
      std::log(2.0));
  if (state.analysisPending()) ImGui::TextDisabled("(updates when the edits pause)");
  const Matrix& m = cosine ? state.result().similarity.cosine : state.result().similarity.js;
  const int h = static_cast<int>(m.rows());
  if (h == 0) return;
  const float top = cosine ? 1.0f : static_cast<float>(std::log(2.0));
  const float avail = ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 2;
  const float cell = std::max(6.0f, std::min(avail / static_cast<float>(h), ImGui::GetFontSize() * 3.0f));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 p0(origin.x + ImGui::GetFontSize() * 1.8f, origin.y + ImGui::GetTextLineHeight());
  ImDrawList* list = ImGui::GetWindowDrawList();
  const bool values = cell > ImGui::CalcTextSize("0.00").x + 4;
  for (int a = 0; a < h; ++a) {
    if (cell > ImGui::GetFontSize() || a % 4 == 0) {
      const std::string label = std::to_string(a + 1);
      list->AddText(ImVec2(origin.x, p0.y + (a + 0.5f) * cell - ImGui::GetTextLineHeight() * 0.5f),
                    ImGui::GetColorU32(ImGuiCol_TextDisabled), label.c_str());
      list->AddText(ImVec2(p0.x + (a + 0.5f) * cell - ImGui::CalcTextSize(label.c_str()).x * 0.5f, origin.y),
                    ImGui::GetColorU32(ImGuiCol_TextDisabled), label.c_str());
    }
    for (int b = 0; b < h; ++b) {
      const float v = m(a, b);
      const Rgb8 c = colorAt(ColorMap::Viridis, v / top);
      const ImVec2 c0(p0.x + b * cell, p0.y + a * cell);
      list->AddRectFilled(c0, ImVec2(c0.x + cell - 1, c0.y + cell - 1), IM_COL32(c.r, c.g, c.b, 255));
      if (values) {
        char text[16];
        std::snprintf(text, sizeof text, "%.2f", v);
        const bool dark = c.r + c.g + c.b < 300;
        list->AddText(ImVec2(c0.x + (cell - ImGui::CalcTextSize(text).x) * 0.5f,
                             c0.y + (cell - ImGui::GetTextLineHeight()) * 0.5f),
                      dark ? IM_COL32(255, 255, 255, 255) : IM_COL32(0, 0, 0, 255), text);
      }
    }
  }
  ImGui::SetCursorScreenPos(p0);
  const bool clicked = ImGui::InvisibleButton("similarity", ImVec2(cell * h, cell * h));
  probeRect("similarity.map", p0, ImVec2(p0.x + cell * h, p0.y + cell * h));
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int a = std::clamp(static_cast<int>((mouse.y - p0.y) / cell), 0, h - 1);
    const int b = std::clamp(static_cast<int>((mouse.x - p0.x) / cell), 0, h - 1);
    ImGui::SetTooltip("Head %d vs head %d\n%s %.4f\nclick: show them side by side", a + 1, b + 1,
                      cosine ? "cosine" : "JS divergence", m(a, b));
    if (clicked) {
      view.compare_a = a;
      view.compare_b = b;
      view.focus_head = -1;
    }
  }
  ImGui::Spacing();
  ImGui::TextWrapped("Per-head statistics:");
  if (ImGui::BeginTable("stats", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableSetupColumn("head");
    ImGui::TableSetupColumn("entropy");
    ImGui::TableSetupColumn("max w");
    ImGui::TableSetupColumn("mean dist");
    ImGui::TableHeadersRow();
    for (int a = 0; a < h; ++a) {
      const HeadStats& s = state.result().stats[static_cast<std::size_t>(a)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d", a + 1);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", s.entropy);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", s.max_weight);
      ImGui::TableNextColumn();
      ImGui::Text("%.2f", s.mean_distance);
    }
    ImGui::EndTable();
  }
}

}  // namespace attnscope::app
