// Walkthrough panel: the worked example step by step (Prev/Next, or the arrow keys), each matrix as a small
// table and heatmap, the tutorial's printed numbers beside the computed ones with disagreements highlighted.
// Built from the current scene, so an edit updates every step (and drops comparisons that no longer apply).
#include <GLFW/glfw3.h>

#include <cmath>
#include <string>

#include "attnscope/colormap.h"
#include "attnscope/walkthrough.h"
#include "panels.h"
#include "ui_probe.h"

namespace attnscope::app {

namespace {

const ImVec4 kDisagree(1.0f, 0.42f, 0.38f, 1.0f);

// A matrix as a grid of numbers drawn straight into the draw list (an ImGui table per matrix cost several ms a
// frame on llvmpipe). `disagreements` marks cells in red with both numbers on hover; `dim` greys the numbers.
void numberGrid(const Matrix& m, const std::vector<Disagreement>& disagreements, bool dim, const char* format) {
  const Eigen::Index rows = std::min<Eigen::Index>(m.rows(), 16), cols = std::min<Eigen::Index>(m.cols(), 16);
  const float cell_w = ImGui::CalcTextSize("-0.000").x + ImGui::GetFontSize() * 0.6f;
  const float cell_h = ImGui::GetTextLineHeightWithSpacing();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImDrawList* list = ImGui::GetWindowDrawList();
  list->AddRectFilled(p0, ImVec2(p0.x + cell_w * cols, p0.y + cell_h * rows), IM_COL32(255, 255, 255, 14));
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) {
      const Disagreement* wrong = nullptr;
      for (const Disagreement& d : disagreements)
        if (d.row == i && d.col == j) wrong = &d;
      char text[24];
      if (std::isinf(m(i, j)))
        std::snprintf(text, sizeof text, "-inf");
      else
        std::snprintf(text, sizeof text, format, m(i, j));
      const ImVec2 c0(p0.x + cell_w * j, p0.y + cell_h * i);
      const ImU32 color =
          wrong ? ImGui::GetColorU32(kDisagree) : ImGui::GetColorU32(dim ? ImGuiCol_TextDisabled : ImGuiCol_Text);
      list->AddText(ImVec2(c0.x + cell_w - ImGui::CalcTextSize(text).x - ImGui::GetFontSize() * 0.3f, c0.y + 1), color,
                    text);
      if (wrong && ImGui::IsWindowHovered() && mouse.x >= c0.x && mouse.x < c0.x + cell_w && mouse.y >= c0.y &&
          mouse.y < c0.y + cell_h)
        ImGui::SetTooltip("printed %.3f, computed %.4f, difference %+.4f", wrong->printed, wrong->computed,
                          wrong->difference());
    }
  ImGui::Dummy(ImVec2(cell_w * cols, cell_h * rows));
}

// Weights as a small heatmap of ImGui rectangles (a few cells: no texture needed).
void smallHeatmap(const Matrix& m) {
  const float cell = ImGui::GetFontSize() * 1.2f;
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImDrawList* list = ImGui::GetWindowDrawList();
  const Eigen::Index rows = std::min<Eigen::Index>(m.rows(), 32), cols = std::min<Eigen::Index>(m.cols(), 32);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) {
      const Rgb8 c = colorAt(ColorMap::Viridis, m(i, j));
      const ImVec2 c0(p0.x + j * cell, p0.y + i * cell);
      list->AddRectFilled(c0, ImVec2(c0.x + cell - 1, c0.y + cell - 1), IM_COL32(c.r, c.g, c.b, 255));
    }
  ImGui::Dummy(ImVec2(cols * cell, rows * cell));
}

}  // namespace

void drawWalkthroughPanel(AppState& state, ViewState& view) {
  if (view.walk_revision != state.revision()) {
    view.walk = buildWalkthrough(state.scene(), state.result());
    view.walk_revision = state.revision();
  }
  const Walkthrough& walk = view.walk;
  const int count = static_cast<int>(walk.steps.size());
  if (count == 0) {
    ImGui::TextWrapped("No steps for this scene.");
    return;
  }
  const ImGuiIO& io = ImGui::GetIO();
  const bool keys = !io.WantTextInput;
  if ((ImGui::Button("< Prev") || (keys && ImGui::IsKeyPressed(GLFW_KEY_LEFT))) && view.walk_step > 0) --view.walk_step;
  probeItem("walk.prev");
  ImGui::SameLine();
  if ((ImGui::Button("Next >") || (keys && ImGui::IsKeyPressed(GLFW_KEY_RIGHT))) && view.walk_step + 1 < count)
    ++view.walk_step;
  probeItem("walk.next");
  view.walk_step = std::clamp(view.walk_step, 0, count - 1);
  ImGui::SameLine();
  ImGui::Text("step %d of %d", view.walk_step + 1, count);
  const int disagreements = walk.disagreementCount();
  if (disagreements > 0) {
    ImGui::PushStyleColor(ImGuiCol_Text, kDisagree);
    ImGui::TextWrapped("%d number%s printed in the text disagree%s with the computation (red; hover for both)",
                       disagreements, disagreements == 1 ? "" : "s", disagreements == 1 ? "s" : "");
    ImGui::PopStyleColor();
  }

  const Step& step = walk.steps[static_cast<std::size_t>(view.walk_step)];
  view.walk_head = step.head;  // the heads panel outlines this head
  ImGui::Spacing();
  ImGui::TextColored(ImVec4(0.55f, 0.75f, 1.0f, 1.0f), "%s", step.title.c_str());
  probeItem("walk.title");
  probeItem("walk.step" + std::to_string(view.walk_step));  // which step is shown, for the GUI test
  if (!step.note.empty()) ImGui::TextWrapped("%s", step.note.c_str());
  for (const StepMatrix& sm : step.matrices) {
    sectionHeader(sm.name.c_str());
    if (sm.printed) {
      ImGui::BeginGroup();
      ImGui::TextDisabled("computed");
      numberGrid(sm.computed, sm.disagreements, false, "%.3f");
      ImGui::EndGroup();
      ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
      ImGui::BeginGroup();
      ImGui::TextDisabled("printed in the text");
      numberGrid(*sm.printed, {}, true, "%.2f");
      ImGui::EndGroup();
      if (!sm.disagreements.empty())
        ImGui::TextColored(kDisagree, "%zu value%s differ beyond the printed precision (+-%.3f)",
                           sm.disagreements.size(), sm.disagreements.size() == 1 ? "" : "s", sm.printed_tolerance);
    } else {
      numberGrid(sm.computed, {}, false, "%.3f");
    }
    if (sm.name == "weights") smallHeatmap(sm.computed);
  }
}

}  // namespace attnscope::app
