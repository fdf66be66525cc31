// The heads panel's state (panel_heads.cpp): which head is enlarged or which two are compared, the enlarged head's
// zoom, the heads muted on their tiles.
#pragma once

#include <vector>

#include "window/maps/heatmap_view.h"

namespace attnscope::app {

struct HeadsState {
  int focus = -1;                      // >= 0: the panel shows this head enlarged
  int compare_a = -1, compare_b = -1;  // >= 0: the panel shows these two side by side (from similarity)
  CellView zoom;                       // the enlarged head's visible cells
  // Heads muted on their tiles (sorted, 0-based): drawn dimmed, and the output change of zero-ablating them shown.
  std::vector<int> muted;
  bool mute_mean = false;  // muting replaces a head's output by its mean over the queries instead of zeros
  // Back to every head's tile (the "All heads" button, a new subject).
  void showAll() { focus = compare_a = compare_b = -1; }
};

}  // namespace attnscope::app
