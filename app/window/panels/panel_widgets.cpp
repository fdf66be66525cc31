// Widgets the panels share: editable matrix tables, integer steppers, inline edit errors.
#include <cstdio>
#include <string>

#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {
bool g_fresh_gesture = false;    // an item became active and has not changed anything yet
constexpr int kProbedCells = 8;  // matrixTable names cells (i, j) with i, j < 8 for the scripted mode
constexpr int kShownRows = 12;   // matrixTable's height in rows; more rows scroll inside it
}  // namespace

bool continuesGesture(bool changed) {
  if (ImGui::IsItemActivated()) g_fresh_gesture = true;
  if (!changed) return false;
  const bool continuing = !g_fresh_gesture;
  g_fresh_gesture = false;
  return continuing;
}

bool matrixTable(const char* id, const Matrix& m, Matrix& out, bool& continuing, const char* probe) {
  if (m.size() == 0) return false;
  const float width = ImGui::GetFontSize() * 3.6f;
  bool changed = false;
  const int cols = static_cast<int>(std::min<Eigen::Index>(m.cols(), 63));
  // A scrolling table left to size itself takes all the height that remains: size it to its rows (at most
  // kShownRows, scrolling beyond), plus the horizontal scrollbar when the columns do not fit.
  const ImGuiStyle& style = ImGui::GetStyle();
  const int shown_rows = static_cast<int>(std::min<Eigen::Index>(m.rows(), kShownRows));
  float height = static_cast<float>(shown_rows) * (ImGui::GetFrameHeight() + 2 * style.CellPadding.y) + 2;
  const float content_w = ImGui::CalcTextSize("0000").x + static_cast<float>(cols + 1) * 2 * style.CellPadding.x +
                          static_cast<float>(cols) * width;
  if (content_w > ImGui::GetContentRegionAvail().x) height += style.ScrollbarSize;
  ImGuiTableFlags flags =
      ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
  if (m.rows() > kShownRows) flags |= ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable(id, cols + 1, flags, ImVec2(0, height))) return false;
  // Only the rows on screen are submitted: a few thousand drag widgets a frame would stall a big scene.
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(m.rows()));
  while (clipper.Step())
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%d", i);
      for (int j = 0; j < cols; ++j) {
        ImGui::TableNextColumn();
        float value = m(i, j);
        ImGui::PushID(i * 64 + j);
        ImGui::SetNextItemWidth(width);
        const bool edited = ImGui::DragFloat("##v", &value, 0.01f, 0.0f, 0.0f, "%.3f");
        const bool continues = continuesGesture(edited);
        if (probe && i < kProbedCells && j < kProbedCells)
          probeItem(std::string(probe) + "." + std::to_string(i) + "." + std::to_string(j));
        if (edited) {
          continuing = continues;
          if (!changed) out = m;
          out(i, j) = value;
          changed = true;
        }
        ImGui::PopID();
      }
    }
  ImGui::EndTable();
  return changed;
}

bool stepperInt(const char* label, const std::string& probe, int& value, int min, int max) {
  ImGui::PushID(label);
  const int before = value;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label);
  ImGui::SameLine(ImGui::GetFontSize() * 6.5f);
  if (ImGui::Button("-", ImVec2(ImGui::GetFrameHeight(), 0)) && value > min) --value;
  probeItem(probe + ".minus");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.0f);
  int typed = value;
  if (ImGui::InputInt("##value", &typed, 0, 0, ImGuiInputTextFlags_EnterReturnsTrue))
    value = std::max(min, std::min(max, typed));
  probeItem(probe);
  ImGui::SameLine();
  if (ImGui::Button("+", ImVec2(ImGui::GetFrameHeight(), 0)) && value < max) ++value;
  probeItem(probe + ".plus");
  ImGui::PopID();
  return value != before;
}

void sectionHeader(const char* title) {
  ImGui::Spacing();
  ImGui::TextColored(ImVec4(0.55f, 0.75f, 1.0f, 1.0f), "%s", title);
  ImGui::Separator();
}

void showEditError(const AppState& state) {
  if (state.editError().empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
  ImGui::TextWrapped("Not applied: %s", state.editError().c_str());
  ImGui::PopStyleColor();
}

void drawMatrixCells(ImDrawList* list, const Matrix& values, ImVec2 p0, float cell, ColorMap map, float vmin,
                     float vmax, const MaskMatrix* masked) {
  for (Eigen::Index i = 0; i < values.rows(); ++i)
    for (Eigen::Index j = 0; j < values.cols(); ++j) {
      const Rgb8 c =
          masked && (*masked)(i, j) ? kMaskedColor : colorAt(map, colorMapParameter(values(i, j), vmin, vmax));
      const float x = p0.x + static_cast<float>(j) * cell, y = p0.y + static_cast<float>(i) * cell;
      list->AddRectFilled(ImVec2(x, y), ImVec2(x + cell, y + cell), IM_COL32(c.r, c.g, c.b, 255));
    }
  const ImVec2 p1(p0.x + static_cast<float>(values.cols()) * cell, p0.y + static_cast<float>(values.rows()) * cell);
  list->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), IM_COL32(120, 120, 120, 255));
}

void drawDivergingBar(ImDrawList* list, ImVec2 p0, float width, float height, float m) {
  const auto& table = colorMapTable(ColorMap::Diverging);
  for (int i = 0; i < kColorMapSize; ++i) {
    const float x0 = p0.x + width * static_cast<float>(i) / kColorMapSize;
    const float x1 = p0.x + width * static_cast<float>(i + 1) / kColorMapSize;
    const Rgb8 c = table[static_cast<std::size_t>(i)];
    list->AddRectFilled(ImVec2(x0, p0.y), ImVec2(x1 + 0.5f, p0.y + height), IM_COL32(c.r, c.g, c.b, 255));
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

}  // namespace attnscope::app
