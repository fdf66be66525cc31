// The row profile under an enlarged head (panel_row_profile.cpp): the query hovered, else the one clicked, and the
// row it last read.
#pragma once

#include "attnscope/types.h"

namespace attnscope::app {

struct RowProfileState {
  int query = -1;
  bool log = false;
  Matrix row;  // (1, n_k) weights of (head, row_query) at revision
  int head = -1, row_query = -1;
  unsigned revision = ~0u;
};

}  // namespace attnscope::app
