// The breakdown panel's state (panel_breakdown.cpp): the cell it explains, set by a click on a heatmap cell.
#pragma once

namespace attnscope::app {

struct BreakdownState {
  int head = -1, query = 0, key = 0;  // head -1: none yet
};

}  // namespace attnscope::app
