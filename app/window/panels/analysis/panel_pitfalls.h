// The mistakes panel's state (panel_pitfalls.cpp).
#pragma once

namespace attnscope::app {

struct PitfallsState {
  int pitfall = 0;  // an index into pitfallList()
};

}  // namespace attnscope::app
