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

// The computed matrix as a table; a cell whose printed value disagrees is red, with both numbers on hover.
void stepTable(const StepMatrix& sm) {
  const Matrix& m = sm.computed;
  const int cols = static_cast<int>(std::min<Eigen::Index>(m.cols(), 16));
  if (!ImGui::BeginTable(sm.name.c_str(), cols, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) return;
  for (Eigen::Index i = 0; i < std::min<Eigen::Index>(m.rows(), 16); ++i) {
    ImGui::TableNextRow();
    for (int j = 0; j < cols; ++j) {
      ImGui::TableNextColumn();
      const Disagreement* wrong = nullptr;
      for (const Disagreement& d : sm.disagreements)
        if (d.row == i && d.col == j) wrong = &d;
      if (std::isinf(m(i, j)))
        ImGui::TextDisabled("-inf");
      else if (wrong)
        ImGui::TextColored(kDisagree, "%.3f", m(i, j));
      else
        ImGui::Text("%.3f", m(i, j));
      if (wrong && ImGui::IsItemHovered())
        ImGui::SetTooltip("printed %.3f, computed %.4f, difference %+.4f", wrong->printed, wrong->computed,
                          wrong->difference());
    }
  }
  ImGui::EndTable();
}

void printedTable(const StepMatrix& sm) {
  const Matrix& m = *sm.printed;
  if (!ImGui::BeginTable((sm.name + "printed").c_str(), static_cast<int>(m.cols()),
                         ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit))
    return;
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    ImGui::TableNextRow();
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%.2f", m(i, j));
    }
  }
  ImGui::EndTable();
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
  static unsigned built_revision = ~0u;
  static Walkthrough walk;
  if (built_revision != state.revision()) {
    walk = buildWalkthrough(state.scene(), state.result());
    built_revision = state.revision();
  }
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
  if (disagreements > 0)
    ImGui::TextColored(kDisagree, "%d numbers printed in the text disagree with the computation", disagreements);

  const Step& step = walk.steps[static_cast<std::size_t>(view.walk_step)];
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
      stepTable(sm);
      ImGui::EndGroup();
      ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
      ImGui::BeginGroup();
      ImGui::TextDisabled("printed in the text");
      printedTable(sm);
      ImGui::EndGroup();
      if (!sm.disagreements.empty())
        ImGui::TextColored(kDisagree, "%zu value%s differ beyond the printed precision (+-%.3f)",
                           sm.disagreements.size(), sm.disagreements.size() == 1 ? "" : "s", sm.printed_tolerance);
    } else {
      stepTable(sm);
    }
    if (sm.name == "weights") smallHeatmap(sm.computed);
  }
}

}  // namespace attnscope::app
