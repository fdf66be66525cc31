// The window's layout, the file bar (open, save, undo, with Ctrl+O, Ctrl+S, Ctrl+Z) and the status bar.
#include "window/window_layout.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

constexpr ImGuiWindowFlags kPanelFlags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                         ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings;

void placeNext(ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
}

void fileBar(AppState& state) {
  const ImGuiIO& io = ImGui::GetIO();
  const bool ctrl = io.KeyCtrl;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(state.dirty() ? "Scene file *" : "Scene file");
  if (ImGui::IsItemHovered() && state.dirty()) ImGui::SetTooltip("Unsaved changes");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 22);
  ImGui::InputTextWithHint("##path", "path/to/scene.json", &state.path);
  probeItem("file.path");
  ImGui::SameLine();
  if ((ImGui::Button("Open") || (ctrl && ImGui::IsKeyPressed(GLFW_KEY_O, false))) && !state.path.empty())
    state.open(state.path);
  probeItem("file.open");
  ImGui::SameLine();
  if ((ImGui::Button("Save") || (ctrl && ImGui::IsKeyPressed(GLFW_KEY_S, false))) && !state.path.empty())
    state.save(state.path);
  probeItem("file.save");
  ImGui::SameLine();
  ImGui::BeginDisabled(!state.canUndo());
  if (ImGui::Button("Undo")) state.undo();
  ImGui::EndDisabled();
  if (ctrl && ImGui::IsKeyPressed(GLFW_KEY_Z, false) && !io.WantTextInput) state.undo();
  probeItem("file.undo");
  ImGui::SameLine();
  ImGui::TextDisabled("%s", state.message().c_str());
}

void statusBar(const AppState& state, double frame_ms) {
  ImGui::AlignTextToFramePadding();
  ImGui::Text("%s  |  compute %.2f ms  |  frame %.1f ms  |  n = %d, heads = %d", state.backend().name().c_str(),
              state.computeMs(), frame_ms, state.scene().nQ(), state.scene().numHeads());
  probeItem("status.backend." + state.backend().name());  // which backend computed, for the GUI tests
  const std::vector<std::string>& warnings = state.result().warnings;
  if (!warnings.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.3f, 1.0f), "  |  %zu warning%s: %s", warnings.size(),
                       warnings.size() == 1 ? "" : "s", warnings.front().c_str());
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      for (const std::string& w : warnings) ImGui::TextUnformatted(w.c_str());
      ImGui::EndTooltip();
    }
  }
}

// A tab that also records its rectangle for the scripted mode.
bool tab(const char* label, const std::string& probe) {
  const bool open = ImGui::BeginTabItem(label);
  probeItem(probe);
  return open;
}

}  // namespace

void drawWindowLayout(AppState& state, ViewState& view, HeatmapRenderer& renderer, double last_frame_ms) {
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const ImGuiStyle& style = ImGui::GetStyle();
  const float bar_h = ImGui::GetFrameHeight() + 2 * style.WindowPadding.y;
  const float side_w = std::max(ImGui::GetFontSize() * 22, display.x * 0.28f);
  const float body_h = display.y - 2 * bar_h - (state.banner().empty() ? 0 : bar_h);
  float y = 0;

  placeNext(ImVec2(0, y), ImVec2(display.x, bar_h));
  ImGui::Begin("##file", nullptr, kPanelFlags | ImGuiWindowFlags_NoTitleBar);
  fileBar(state);
  ImGui::End();
  y += bar_h;
  if (!state.banner().empty()) {
    placeNext(ImVec2(0, y), ImVec2(display.x, bar_h));
    ImGui::PushStyleColor(ImGuiCol_WindowBg, ImVec4(0.55f, 0.25f, 0.1f, 1.0f));
    ImGui::Begin("##banner", nullptr, kPanelFlags | ImGuiWindowFlags_NoTitleBar);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(state.banner().c_str());
    ImGui::End();
    ImGui::PopStyleColor();
    y += bar_h;
  }

  placeNext(ImVec2(0, y), ImVec2(side_w, body_h));
  ImGui::Begin("Scene", nullptr, kPanelFlags);
  if (ImGui::BeginTabBar("scene_tabs")) {
    if (tab("Model", "tab.model")) drawModelPanel(state, view), ImGui::EndTabItem();
    if (tab("Inputs", "tab.inputs")) drawInputsPanel(state, view), ImGui::EndTabItem();
    if (tab("Projections", "tab.projections")) drawProjectionsPanel(state, view), ImGui::EndTabItem();
    ImGui::EndTabBar();
  }
  ImGui::End();

  placeNext(ImVec2(side_w, y), ImVec2(display.x - 2 * side_w, body_h));
  ImGui::Begin("Heads", nullptr, kPanelFlags | ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  drawHeadsPanel(state, view, renderer);
  ImGui::End();

  placeNext(ImVec2(display.x - side_w, y), ImVec2(side_w, body_h));
  ImGui::Begin("Analysis", nullptr, kPanelFlags);
  view.walk_head = -1;
  if (ImGui::BeginTabBar("analysis_tabs")) {
    if (tab("Walkthrough", "tab.walkthrough")) drawWalkthroughPanel(state, view), ImGui::EndTabItem();
    if (tab("Similarity", "tab.similarity")) drawSimilarityPanel(state, view), ImGui::EndTabItem();
    if (tab("Export", "tab.export")) drawExportPanel(state, view), ImGui::EndTabItem();
    if (tab("Diff", "tab.diff")) drawDiffPanel(state, view), ImGui::EndTabItem();
    if (tab("Cell", "tab.breakdown")) drawBreakdownPanel(state, view), ImGui::EndTabItem();
    if (tab("Mistakes", "tab.pitfalls")) drawPitfallsPanel(state, view), ImGui::EndTabItem();
    if (tab("GPT-2", "tab.gpt2")) drawGpt2Panel(state, view), ImGui::EndTabItem();
    ImGui::EndTabBar();
  }
  ImGui::End();

  placeNext(ImVec2(0, display.y - bar_h), ImVec2(display.x, bar_h));
  ImGui::Begin("##status", nullptr, kPanelFlags | ImGuiWindowFlags_NoTitleBar);
  statusBar(state, last_frame_ms);
  ImGui::End();
}

}  // namespace attnscope::app
