// A head's title line: its name, its type as a chip set apart (in headTypeText's words, panels.h), its mean row
// entropy (lesson.h).
#include <cmath>
#include <cstdio>
#include <string>

#include "window/lesson/lesson.h"
#include "window/view_state.h"
#include "window/ui_probe.h"

namespace attnscope::app {

const char* headTypeText(const std::string& label) {
  if (label == "previous_token") return "previous-token";
  if (label == "current_token") return "current-token";
  if (label == "first_token") return "first-token";
  if (label == "local") return "local";
  if (label == "induction") return "induction";
  if (label == "duplicate_token") return "duplicate-token";
  return "";
}

std::string entropyValue(double entropy) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", entropy);
  return text;
}

float oneLineTitleWidth() {
  const float line = ImGui::GetTextLineHeight(), pad = ImGui::GetStyle().FramePadding.x;
  return ImGui::CalcTextSize("Head 12").x + 0.6f * line + ImGui::CalcTextSize("duplicate-token").x + 0.5f * line +
         0.5f * line + ImGui::CalcTextSize("unmute").x + 2 * pad + ImGui::GetStyle().ItemSpacing.x +
         enlargeButtonWidth();
}

float drawHeadTitle(ImDrawList* list, int head, const char* type, const float* entropy, ImVec2 p0, float max_x,
                    bool with_name) {
  const float line = ImGui::GetTextLineHeight(), pad = 0.25f * line;
  const std::string id = "head" + std::to_string(head);
  const std::string name = with_name ? "Head " + std::to_string(head + 1) : "";
  const float gap = with_name ? 0.6f * line : 0.0f;  // a line of its own starts with the chip
  const bool has_type = type && *type;
  const float name_w = ImGui::CalcTextSize(name.c_str()).x;
  const float chip_w = has_type ? ImGui::CalcTextSize(type).x + 2 * pad : 0;
  std::string stat;
  if (entropy) stat = std::string(kEntropyName) + " " + entropyValue(*entropy) + " " + kEntropyUnit;
  const float room = max_x - p0.x;
  // What fits, dropped in order: "mean", the unit, "row", "entropy" for its letter H, the entropy, the chip,
  // "Head" itself (the tooltip keeps the whole meaning).
  const float stat_gap = with_name || has_type ? 0.6f * line : 0.0f;  // before the entropy
  const auto fits = [&] { return name_w + gap + chip_w + stat_gap + ImGui::CalcTextSize(stat.c_str()).x <= room; };
  if (entropy && !fits()) stat = "row entropy " + entropyValue(*entropy) + " " + kEntropyUnit;
  if (entropy && !fits()) stat = "row entropy " + entropyValue(*entropy);
  if (entropy && !fits()) stat = "entropy " + entropyValue(*entropy);
  if (entropy && !fits()) stat = "H " + entropyValue(*entropy);  // the usual letter; the hover says it whole
  if (!fits()) stat.clear();
  const bool chip = has_type && name_w + gap + chip_w <= room;
  const std::string shown = !with_name || name_w <= room ? name : "H" + std::to_string(head + 1);
  float x = p0.x;
  if (with_name) {
    drawProbedText(list, id + ".title", ImVec2(x, p0.y), ImGui::GetColorU32(ImGuiCol_Text), shown.c_str());
    x += ImGui::CalcTextSize(shown.c_str()).x;
  }
  if (chip) {
    // A rounded chip in the head-type's own colour, a gap each side, so "previous-token" never reads as part
    // of the title or the entropy.
    x += gap;
    const ImVec2 c0(x, p0.y - 1), c1(x + chip_w, p0.y + line + 1);
    list->AddRectFilled(c0, c1, IM_COL32(70, 60, 120, 255), 0.5f * line);
    drawProbedText(list, id + ".type", ImVec2(x + pad, p0.y), IM_COL32(225, 215, 255, 255), type);
    probeNote(id + ".type", type);
    x += chip_w;
  }
  if (!stat.empty()) {
    x += chip || with_name ? 0.6f * line : 0.0f;
    drawProbedText(list, id + ".entropy", ImVec2(x, p0.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), stat.c_str());
    probeNote(id + ".entropy", stat);
    const ImVec2 s1(x + ImGui::CalcTextSize(stat.c_str()).x, p0.y + line);
    if (ImGui::IsMouseHoveringRect(ImVec2(x, p0.y), s1) && ImGui::IsWindowHovered())
      ImGui::SetTooltip("%s", kEntropyMeaning);
    x = s1.x;
  }
  return x;
}

bool enlargeFits(int head, float others_w, float width) {
  const float line = ImGui::GetTextLineHeight();
  const std::string shortest = "H" + std::to_string(head + 1);  // the title at its shortest
  return ImGui::CalcTextSize(shortest.c_str()).x + line + others_w + ImGui::GetStyle().ItemSpacing.x +
             enlargeButtonWidth() <=
         width;
}

float enlargeButtonWidth() { return ImGui::GetFrameHeight() - 2 * ImGui::GetStyle().FramePadding.y + 4; }

bool enlargeButton(int head) {
  const float side = enlargeButtonWidth();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const bool pressed = ImGui::InvisibleButton("enlarge", ImVec2(side, side));
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* list = ImGui::GetWindowDrawList();
  list->AddRectFilled(p0, ImVec2(p0.x + side, p0.y + side),
                      ImGui::GetColorU32(hovered ? ImGuiCol_ButtonHovered : ImGuiCol_Button), 2);
  // Four corner marks pointing outwards: the usual "show larger" sign.
  const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text);
  const float m = std::floor(side * 0.22f), arm = std::floor(side * 0.28f);
  const ImVec2 a(p0.x + m, p0.y + m), b(p0.x + side - m, p0.y + side - m);
  const ImVec2 corners[4] = {a, ImVec2(b.x, a.y), b, ImVec2(a.x, b.y)};
  for (const ImVec2& c : corners) {
    const float dx = c.x == a.x ? arm : -arm, dy = c.y == a.y ? arm : -arm;
    list->AddLine(c, ImVec2(c.x + dx, c.y), ink, 1.5f);
    list->AddLine(c, ImVec2(c.x, c.y + dy), ink, 1.5f);
  }
  if (hovered) ImGui::SetTooltip("Enlarge head %d (its row profile below it); All heads goes back", head + 1);
  probeItem("head" + std::to_string(head) + ".enlarge");
  return pressed;
}

}  // namespace attnscope::app
