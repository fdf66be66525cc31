// The window's panels, one file each (panel_*.cpp), and the view state they share (what is selected, zoom,
// colour scale); the scene itself lives in AppState and changes only through AppState::edit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "app_state.h"
#include "attnscope/walkthrough.h"
#include "heatmap_view.h"

namespace attnscope::app {

struct Gpt2Session;  // panel_gpt2.cpp: the opened checkpoint and its forward

enum class ColorScale { Fixed, Shared, PerHead };  // 0..1; 0..max over all heads; 0..max of each head

struct ViewState {
  int focus_head = -1;                 // >= 0: the heads panel shows this head enlarged
  int compare_a = -1, compare_b = -1;  // >= 0: the heads panel shows these two side by side (from similarity)
  CellView zoom;                       // the enlarged head's visible cells
  ColorScale color_scale = ColorScale::Fixed;
  int metric = 0;  // similarity: 0 cosine, 1 Jensen-Shannon
  int walk_step = 0;
  Walkthrough walk;  // built from the scene at walk_revision
  unsigned walk_revision = ~0u;
  int walk_head = -1;      // the head the shown walkthrough step is about (-1: none or tab hidden)
  std::uint64_t seed = 1;  // for random presets and random fills
  int random_n = 16, random_heads = 4, random_d_model = 16;
  std::string sentence = "The cat sat on the mat because it was tired.";
  int projection_head = 0;  // the projections panel's head
  int copy_from_head = 1;   // 1-based, as shown
  std::string export_path = "attnscope_export.png";
  int export_what = 1, export_format = 0;
  int export_head = 1;  // 1-based, as shown
  bool export_annotate = false;
  std::string export_message;
  std::shared_ptr<Gpt2Session> gpt2;  // created by the GPT-2 panel on first draw
};

// Each draws its contents into the current ImGui window.
void drawModelPanel(AppState& state, ViewState& view);
void drawInputsPanel(AppState& state, ViewState& view);
void drawProjectionsPanel(AppState& state, ViewState& view);
void drawHeadsPanel(AppState& state, ViewState& view, HeatmapRenderer& renderer);
void drawSimilarityPanel(AppState& state, ViewState& view);
void drawWalkthroughPanel(AppState& state, ViewState& view);
void drawExportPanel(AppState& state, ViewState& view);
void drawGpt2Panel(AppState& state, ViewState& view);  // panel_gpt2.cpp

// Shared widgets (panel_widgets.cpp).
// Call right after an editing widget: true when this change continues the gesture of the last one (a drag in
// progress), so AppState::edit pushes no new undo entry for it.
bool continuesGesture(bool changed);
// An editable matrix table; returns true and the edited copy in `out` when the user changed a cell this frame;
// `continuing` as continuesGesture(). `probe` names the cells of the first 8 rows and columns for the scripted
// mode: "<probe>.<row>.<col>", 0-based. Drag a cell, or Ctrl+click / double-click it to type a value.
bool matrixTable(const char* id, const Matrix& m, Matrix& out, bool& continuing, const char* probe = nullptr);
// "- [value] +" with named probes "<probe>.minus", "<probe>.plus"; true when the value changed.
bool stepperInt(const char* label, const std::string& probe, int& value, int min, int max);
// A section title with a rule under it.
void sectionHeader(const char* title);
// The edit error of the last edit, in red, under the widget that caused it.
void showEditError(const AppState& state);

}  // namespace attnscope::app
