// The part of a heatmap in view, its own header so that the heatmap program (gl/heatmap_program.h) and the
// views (heatmap_view.h, panels.h) share it without including each other.
#pragma once

namespace attnscope::app {

// The part of a heatmap in view, in cells: columns [col0, col1), rows [row0, row1) (fractional when zoomed).
struct CellView {
  float col0 = 0, row0 = 0, col1 = 1, row1 = 1;
};

}  // namespace attnscope::app
