// The diff panel's state (panel_diff.cpp): snapshot A, a copy of the result when pinned.
#pragma once

#include "attnscope/compute/result.h"

namespace attnscope::app {

struct DiffState {
  bool pinned = false;
  Result a;
};

}  // namespace attnscope::app
