// The projections panel's state (panel_projections.cpp): the head edited, the head to copy from.
#pragma once

namespace attnscope::app {

struct ProjectionsState {
  int head = 0;
  int copy_from_head = 1;  // 1-based, as shown
};

}  // namespace attnscope::app
