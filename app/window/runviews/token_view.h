// The token view's state (token_view.cpp): the token picked, from it or to it, one head or the layer's mean.
#pragma once

namespace attnscope::app {

struct TokenViewState {
  int token = -1;  // -1: none
  int to_it = 0;   // 0: its row (from it), 1: its column (to it)
  int head = -1;   // -1: the mean of the layer's heads
};

}  // namespace attnscope::app
