// The window's panels, one file each (panel_*.cpp, with its state in panel_*.h, gathered in view_state.h), and the
// widgets they share; the scene itself lives in AppState and changes only through AppState::edit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "window/app_state.h"
#include "attnscope/analysis/analysis.h"
#include "attnscope/export/colormap.h"
#include "attnscope/export/export.h"
#include "attnscope/analysis/walkthrough.h"
#include "window/maps/heatmap_view.h"
#include "window/widgets/widgets.h"
#include "window/view_state.h"

namespace attnscope::app {

// The order the heads are shown in: UPGMA leaf order when view.cluster_order (and the similarity is there),
// else 0..h-1. The clustering itself in `clustering` when not null.
std::vector<int> headOrder(const AppState& state, const ViewState& view, Clustering* clustering = nullptr);

// Each draws its contents into the current ImGui window.
void drawModelPanel(AppState& state, ViewState& view);
void drawInputsPanel(AppState& state, ViewState& view);
void drawProjectionsPanel(AppState& state, ViewState& view);
void drawHeadsPanel(AppState& state, ViewState& view, HeatmapRenderer& renderer);
void drawSimilarityPanel(AppState& state, ViewState& view);
void drawWalkthroughPanel(AppState& state, ViewState& view);
void drawExportPanel(AppState& state, ViewState& view);
void drawDiffPanel(AppState& state, ViewState& view);       // panel_diff.cpp
void drawBreakdownPanel(AppState& state, ViewState& view);  // panel_breakdown.cpp
void drawPitfallsPanel(AppState& state, ViewState& view);   // panel_pitfalls.cpp
void drawCheckpointPanel(AppState& state, ViewState& view);  // panel_checkpoint.cpp
// The left pane while a run (a checkpoint's forward or a saved tensor) is the subject (panel_run.cpp): the model
// card (family, layers, heads, KV heads, head_dim, dtype, memory) or the tensor's shape, the layer and head
// navigator, Find heads, the token view, the tokens, and why the scene editors are hidden.
void drawRunPane(AppState& state, ViewState& view, ModelSession& run);
// The row profile of view.profile.query under the enlarged head, rowProfileHeight() tall from p0.
void drawRowProfile(const AppState& state, ViewState& view, int head, ImVec2 p0, float width);
float rowProfileHeight();

}  // namespace attnscope::app
