// The window's fixed layout: a file bar on top, the scene editors on the left, the heads in the middle, the
// analysis panels on the right, a status bar at the bottom. Sizes follow the window (and its HiDPI scale).
#pragma once

#include "window/app_state.h"
#include "window/maps/heatmap_view.h"
#include "window/panels/panels.h"

namespace attnscope::app {

// Builds this frame's ImGui windows. `last_frame_ms`: the previous frame's time, for the status bar.
void drawWindowLayout(AppState& state, ViewState& view, HeatmapRenderer& renderer, double last_frame_ms);

}  // namespace attnscope::app
