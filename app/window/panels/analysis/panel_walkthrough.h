// The walkthrough tab's state (panel_walkthrough.cpp): the step on show and the head it is about.
#pragma once

namespace attnscope::app {

struct WalkthroughState {
  int step = 0;
  int head = -1;  // the head the shown step is about (-1: none or tab hidden)
};

}  // namespace attnscope::app
