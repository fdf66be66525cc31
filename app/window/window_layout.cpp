// The window's layout, the file bar (open, save, undo, redo, with Ctrl+O, Ctrl+S, Ctrl+Z, Ctrl+Shift+Z or Ctrl+Y)
// and the status bar.
#include "window/window_layout.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include "attnscope/text_bounds.h"
#include "window/files/file_chooser.h"
#include "window/files/pane_settings.h"
#include "window/subject/model_session.h"
#include "window/model/model_view.h"
#include "window/model/open_arrays.h"
#include "window/subject/subject.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

constexpr ImGuiWindowFlags kPanelFlags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                         ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings;

void placeNext(ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
}

void fileBar(AppState& state, ViewState& view) {
  const ImGuiIO& io = ImGui::GetIO();
  const bool ctrl = io.KeyCtrl;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(state.dirty() ? "Scene file *" : "Scene file");
  if (ImGui::IsItemHovered() && state.dirty()) ImGui::SetTooltip("Unsaved changes");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 22);
  ImGui::InputTextWithHint("##path", "scene.json, attention / layer .npy .npz .safetensors, a capture", &state.path);
  probeItem("file.path");
  ImGui::SameLine();
  const bool browsed_open = browseButton("open.browse", state.path, ChooseWhat::OpenFile);  // then opened
  ImGui::SameLine();
  const char* no_path = "Type a scene file's path first (path/to/scene.json)";
  // .npy, .npz, .safetensors: an attention tensor or the user's layer, through a form (open_arrays.h).
  if (ImGui::Button("Open") || (ctrl && ImGui::IsKeyPressed(GLFW_KEY_O, false)) || browsed_open) {
    if (state.path.empty())
      state.refuse(no_path);
    else if (isArraysFile(state.path))
      beginOpenArrays(state, view, state.path);
    else if (arrays::isCaptureFolder(state.path))
      openCapture(state, view, state.path);
    else
      state.open(state.path);
  }
  probeItem("file.open");
  ImGui::SameLine();
  if (ImGui::Button("Save") || (ctrl && ImGui::IsKeyPressed(GLFW_KEY_S, false)))
    state.path.empty() ? state.refuse(no_path) : void(state.save(state.path));
  probeItem("file.save");
  ImGui::SameLine();
  // Save as: a name chosen in the browser, then saved there.
  if (browseButton("save.browse", state.path, ChooseWhat::SaveFile, "Save as...")) state.save(state.path);
  ImGui::SameLine();
  ImGui::BeginDisabled(!state.canUndo());
  if (ImGui::Button("Undo")) state.undo();
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("Undo the last edit (Ctrl+Z)");
  probeItem("file.undo");
  ImGui::SameLine();
  ImGui::BeginDisabled(!state.canRedo());
  if (ImGui::Button("Redo")) state.redo();
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Redo the last undone edit (Ctrl+Shift+Z or Ctrl+Y)");
  probeItem("file.redo");
  if (ctrl && !io.WantTextInput) {
    if (ImGui::IsKeyPressed(GLFW_KEY_Z, false)) io.KeyShift ? state.redo() : state.undo();
    if (ImGui::IsKeyPressed(GLFW_KEY_Y, false)) state.redo();
  }
  // The message gets the rest of the bar, on one line: cut with "..." where it does not fit, whole on hover (a
  // wrapped message pushed every pane down by its lines).
  if (!state.message().empty()) {
    ImGui::SameLine();
    const ImVec4 colour = state.messageIsError() ? ImVec4(1.0f, 0.45f, 0.4f, 1.0f)
                                                 : ImGui::GetStyle().Colors[ImGuiCol_TextDisabled];
    const std::string& message = state.message();
    const float room = std::max(ImGui::GetFontSize() * 4, ImGui::GetContentRegionAvail().x);
    const std::string shown =
        elideToWidth(message, room, [](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x; }, 4096);
    ImGui::TextColored(colour, "%s", shown.c_str());
    if (shown != message && ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
      ImGui::TextUnformatted(message.c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
    probeItem("file.message");
    probeNote("file.message", message);
    if (shown != message) probeNote("file.message.shown", shown);
  }
}

// The file bar is one row of widgets and the message beside them.
float fileBarHeight() { return ImGui::GetFrameHeight() + 2 * ImGui::GetStyle().WindowPadding.y; }

void statusBar(AppState& state, ViewState& view, double frame_ms) {
  ImGui::AlignTextToFramePadding();
  // The subject on show (subject.h); a scene's compute time only while a scene is the subject.
  const Subject subject(state, view);
  const std::string status = subject.status();
  if (subject.editable())
    ImGui::Text("%s  |  compute %.2f ms  |  frame %.1f ms  |  %s", state.backend().name().c_str(), state.computeMs(),
                frame_ms, status.c_str());
  else
    ImGui::Text("%s  |  frame %.1f ms  |  %s", state.backend().name().c_str(), frame_ms, status.c_str());
  probeItem("status.backend." + state.backend().name());  // which backend computed, for the GUI tests
  probeNote("status.subject", status);
  if (!subject.editable()) return;  // the scene's pending compute and warnings are not on show
  const Scene& edited = state.editedScene();
  if (&edited != &state.scene()) {  // a new shape computing off the UI thread: say what is coming
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.3f, 1.0f), "  |  computing n = %d, heads = %d...", edited.nQ(),
                       edited.numHeads());
    probeItem("status.computing");
  }
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

// A tab that also records its rectangle for the scripted mode, and whether its label was shortened.
bool tab(const char* label, const std::string& probe) {
  const bool open = ImGui::BeginTabItem(label);
  probeItem(probe);
  const float needed = ImGui::CalcTextSize(label).x + 2 * ImGui::GetStyle().FramePadding.x;
  probeFit(probe, ImGui::GetItemRectSize().x + 0.5f >= needed);
  return open;
}

// The analysis tabs, in order: the pane is at least as wide as their labels need, so none is shortened.
const char* const kAnalysisTabs[] = {"Steps", "Similarity", "Diff", "Cell", "Mistakes", "Export", "Checkpoint"};

float tabBarWidth(const char* const* labels, int count) {
  const ImGuiStyle& style = ImGui::GetStyle();
  float w = 2 * style.WindowPadding.x;
  for (int i = 0; i < count; ++i) w += ImGui::CalcTextSize(labels[i]).x + 2 * style.FramePadding.x + 1;  // ImGui's +1
  // + the vertical scrollbar a long tab shows
  return w + static_cast<float>(count - 1) * style.ItemInnerSpacing.x + style.ScrollbarSize + 4;
}

// The side panes' settings (pane_settings.h): read at the first frame, saved when a drag ends or a pane is
// collapsed or opened. A file that cannot be read or written is said once in the file bar.
struct Panes {
  bool loaded = false, problem_said = false;
  std::string path;
  PaneSettings settings;
};

Panes& panes() {
  static Panes p;
  return p;
}

void sayPaneProblem(AppState& state, const std::string& problem) {
  if (problem.empty() || panes().problem_said) return;
  panes().problem_said = true;
  state.refuse(problem);
}

void loadPanesOnce(AppState& state) {
  Panes& p = panes();
  if (p.loaded) return;
  p.loaded = true;
  p.path = paneSettingsPath();
  std::string problem;
  p.settings = loadPaneSettings(p.path, problem);
  sayPaneProblem(state, problem);
}

// A side pane's width in pixels: its remembered width (in font heights) or `fallback`, within [min_px, max_px];
// 0 while collapsed.
float paneWidth(float em, bool collapsed, float fallback, float min_px, float max_px) {
  if (collapsed) return 0;
  const float want = em > 0 ? em * ImGui::GetFontSize() : fallback;
  return std::max(min_px, std::min(want, max_px));
}

// The strip between a side pane and the centre, `w` wide at `pos`: its arrow collapses or opens the pane
// ("pane.<side>.collapse" / "pane.<side>.expand"), the rest drags the pane's edge ("pane.<side>.splitter").
// `width_px`: the pane's width now; on a drag `em` follows it. True when the settings changed (to be saved).
bool paneGrip(const std::string& side, ImVec2 pos, ImVec2 size, bool left, float width_px, float min_px, float max_px,
              float& em, bool& collapsed) {
  bool changed = false;
  placeNext(pos, size);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0.0f);
  ImGui::Begin(
      ("##grip_" + side).c_str(), nullptr,
      kPanelFlags | ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float w = size.x;
  // The arrow: points the way the pane goes on a click.
  ImGui::InvisibleButton("##toggle", ImVec2(w, w * 2));
  const bool toggle_hovered = ImGui::IsItemHovered();
  if (ImGui::IsItemClicked()) collapsed = !collapsed, changed = true;
  probeItem("pane." + side + (collapsed ? ".expand" : ".collapse"));
  if (toggle_hovered) ImGui::SetTooltip(collapsed ? "Show the pane" : "Hide the pane");
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  const bool points_left = left != collapsed;
  const float cx = (a.x + b.x) * 0.5f, cy = (a.y + b.y) * 0.5f, r = w * 0.3f;
  const ImU32 arrow = ImGui::GetColorU32(toggle_hovered ? ImGuiCol_Text : ImGuiCol_TextDisabled);
  if (points_left)
    list->AddTriangleFilled(ImVec2(cx - r, cy), ImVec2(cx + r, cy - r * 1.5f), ImVec2(cx + r, cy + r * 1.5f), arrow);
  else
    list->AddTriangleFilled(ImVec2(cx + r, cy), ImVec2(cx - r, cy - r * 1.5f), ImVec2(cx - r, cy + r * 1.5f), arrow);
  if (!collapsed) {
    ImGui::InvisibleButton("##drag", ImVec2(w, std::max(1.0f, size.y - w * 2)));
    probeItem("pane." + side + ".splitter");
    const bool active = ImGui::IsItemActive();
    if (active || ImGui::IsItemHovered()) {
      ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeEW);
      list->AddRectFilled(ImGui::GetItemRectMin(), ImGui::GetItemRectMax(),
                          ImGui::GetColorU32(active ? ImGuiCol_SeparatorActive : ImGuiCol_SeparatorHovered));
    }
    if (active && ImGui::GetIO().MouseDelta.x != 0) {
      const float dx = ImGui::GetIO().MouseDelta.x * (left ? 1.0f : -1.0f);
      em = std::max(min_px, std::min(width_px + dx, max_px)) / ImGui::GetFontSize();
    }
    if (ImGui::IsItemDeactivated()) changed = true;
  }
  ImGui::End();
  ImGui::PopStyleVar(2);
  return changed;
}

}  // namespace

void drawWindowLayout(AppState& state, ViewState& view, HeatmapRenderer& renderer, double last_frame_ms) {
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const ImGuiStyle& style = ImGui::GetStyle();
  const float bar_h = ImGui::GetFrameHeight() + 2 * style.WindowPadding.y;
  loadPanesOnce(state);
  PaneSettings& panes_now = panes().settings;
  const float font = ImGui::GetFontSize();
  const float grip_w = std::round(font * 0.75f);
  // Defaults: each side pane 28% of the window (at least 22 font heights); the analysis pane at least as wide as
  // its tab labels, which it never shortens. The centre keeps at least 12 font heights.
  const float default_side = std::max(font * 22, display.x * 0.28f);
  const float min_analysis = tabBarWidth(kAnalysisTabs, 7);
  const float centre_min = font * 12 + 2 * grip_w;
  const float analysis_max = std::max(min_analysis, display.x - centre_min - font * 14);
  const float analysis_w = paneWidth(panes_now.right_em, panes_now.right_collapsed,
                                     std::max(default_side, min_analysis), min_analysis, analysis_max);
  const float side_max = std::max(font * 14, display.x - analysis_w - centre_min);
  const float side_w = paneWidth(panes_now.left_em, panes_now.left_collapsed, default_side, font * 14, side_max);
  const float body_h = display.y - bar_h - fileBarHeight() - (state.banner().empty() ? 0 : bar_h);
  float y = 0;

  const float file_h = fileBarHeight();
  placeNext(ImVec2(0, y), ImVec2(display.x, file_h));
  ImGui::Begin("##file", nullptr, kPanelFlags | ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar);
  fileBar(state, view);
  probePaneFits("pane.file");
  ImGui::End();
  y += file_h;
  if (!state.banner().empty()) {
    placeNext(ImVec2(0, y), ImVec2(display.x, bar_h));
    ImGui::PushStyleColor(ImGuiCol_WindowBg, ImVec4(0.55f, 0.25f, 0.1f, 1.0f));
    ImGui::Begin("##banner", nullptr, kPanelFlags | ImGuiWindowFlags_NoTitleBar);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(state.banner().c_str());
    probeItem("banner");
    if (const auto& failed = state.failedCheck())  // which head and row the GPU's check caught, for the GUI tests
      probeItem("banner.gpu_check.head" + std::to_string(failed->head) + ".row" + std::to_string(failed->row));
    ImGui::End();
    ImGui::PopStyleColor();
    y += bar_h;
  }

  // The left pane follows the subject: the scene's editors, or the model's or tensor's card and navigator. The
  // centre's subject is decided first (an edit since the last frame makes the scene the subject).
  if (state.sceneEdits() != view.run.seen_scene_edits) {
    view.run.seen_scene_edits = state.sceneEdits();
    if (view.run.session) view.run.session->shown = false;
  }
  if (view.run.session) view.run.session->poll();
  bool save = paneGrip("left", ImVec2(side_w, y), ImVec2(grip_w, body_h), true, side_w, font * 14, side_max,
                       panes_now.left_em, panes_now.left_collapsed);
  save |= paneGrip("right", ImVec2(display.x - analysis_w - grip_w, y), ImVec2(grip_w, body_h), false, analysis_w,
                   min_analysis, analysis_max, panes_now.right_em, panes_now.right_collapsed);
  if (save) {
    std::string problem;
    if (!savePaneSettings(panes().path, panes_now, problem)) sayPaneProblem(state, problem);
  }
  if (side_w > 0) {
    const Subject subject(state, view);
    placeNext(ImVec2(0, y), ImVec2(side_w, body_h));
    const std::string left_title = std::string(subject.paneTitle()) + "###left";
    ImGui::Begin(left_title.c_str(), nullptr, kPanelFlags);
    probeNote("pane.left.title", subject.paneTitle());
    if (!subject.editable()) {
      drawRunPane(state, view, *subject.run());
    } else if (ImGui::BeginTabBar("scene_tabs")) {
      // edit_origin: an edit that fails is shown by the panel that made it, once.
      if (tab("Model", "tab.model")) state.edit_origin = "model", drawModelPanel(state, view), ImGui::EndTabItem();
      if (tab("Inputs", "tab.inputs")) state.edit_origin = "inputs", drawInputsPanel(state, view), ImGui::EndTabItem();
      if (tab("Projections", "tab.projections")) {
        state.edit_origin = "projections";
        drawProjectionsPanel(state, view);
        ImGui::EndTabItem();
      }
      ImGui::EndTabBar();
    }
    probePaneFits("pane.scene");
    ImGui::End();
  }

  // The centre: the model's layers x heads once a checkpoint has run (until the user goes back to the scene or
  // edits it: a preset, an editor, Open, Undo make the scene the subject), else the scene's heads. One window
  // either way ("###centre"), titled after what it shows.
  // Asked again: a button of the left pane may have changed the subject this frame.
  const Subject subject(state, view);
  placeNext(ImVec2(side_w + grip_w, y), ImVec2(display.x - side_w - analysis_w - 2 * grip_w, body_h));
  const std::string centre_title = subject.centreTitle() + "###centre";
  ImGui::Begin(centre_title.c_str(), nullptr,
               kPanelFlags | ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  state.edit_origin = "heads";
  if (!subject.editable()) {
    drawModelView(state, view);
  } else {
    drawBackToModel(view);
    drawHeadsPanel(state, view, renderer);
  }
  probePaneFits("pane.heads");
  ImGui::End();

  view.walk.head = -1;
  if (analysis_w > 0) {
    placeNext(ImVec2(display.x - analysis_w, y), ImVec2(analysis_w, body_h));
    ImGui::Begin("Analysis", nullptr, kPanelFlags);
    state.edit_origin = "analysis";
    if (ImGui::BeginTabBar("analysis_tabs")) {
      // "Steps" is the walkthrough of the worked example.
      // The tabs that explain a scene say so while a model or tensor is on show (Subject::sceneOnlyNote).
      if (tab(kAnalysisTabs[0], "tab.walkthrough")) {
        state.edit_origin = "walkthrough";
        if (!Subject(state, view).sceneOnlyNote("Steps")) drawWalkthroughPanel(state, view);
        ImGui::EndTabItem();
      }
      if (tab(kAnalysisTabs[1], "tab.similarity")) drawSimilarityPanel(state, view), ImGui::EndTabItem();
      if (tab(kAnalysisTabs[2], "tab.diff")) {
        if (!Subject(state, view).sceneOnlyNote("Diff")) drawDiffPanel(state, view);
        ImGui::EndTabItem();
      }
      if (tab(kAnalysisTabs[3], "tab.breakdown")) {
        if (!Subject(state, view).sceneOnlyNote("Cell")) drawBreakdownPanel(state, view);
        ImGui::EndTabItem();
      }
      if (tab(kAnalysisTabs[4], "tab.pitfalls")) {
        if (!Subject(state, view).sceneOnlyNote("Mistakes")) drawPitfallsPanel(state, view);
        ImGui::EndTabItem();
      }
      if (tab(kAnalysisTabs[5], "tab.export")) drawExportPanel(state, view), ImGui::EndTabItem();
      if (tab(kAnalysisTabs[6], "tab.checkpoint")) drawCheckpointPanel(state, view), ImGui::EndTabItem();
      ImGui::EndTabBar();
    }
    probePaneFits("pane.analysis");
    ImGui::End();
  }

  placeNext(ImVec2(0, display.y - bar_h), ImVec2(display.x, bar_h));
  ImGui::Begin("##status", nullptr, kPanelFlags | ImGuiWindowFlags_NoTitleBar);
  statusBar(state, view, last_frame_ms);
  probePaneFits("pane.status");
  ImGui::End();
  drawOpenArraysForm(state, view);  // a modal over every pane, while one is open
  drawFileChooser();                // the in-window file browser, while one is open
}

}  // namespace attnscope::app
