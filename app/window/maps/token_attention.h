// One token's attention in one layer (the token view's numbers: window/runviews/token_view.h draws them): its row
// or its column of each head's map, from the forward's kept maps or tiles. Computed off the UI thread
// (ModelSession::tokenAttention): a capture's layer is read, and its heads' row statistics worked out, on first use.
#pragma once

#include <string>
#include <vector>

#include "attnscope/model/forward.h"
#include "window/maps/map_sources.h"

namespace attnscope::app {

struct TokenViewState {
  int token = -1;  // -1: none
  int to_it = 0;   // 0: its row (from it), 1: its column (to it)
  int head = -1;   // -1: the mean of the layer's heads
};

// The weights of `token` in `layer` for `head` (or every head's mean where head < 0): its row (from it) or its
// column (to it), (n), `masked` 1 where no head may attend (a key after a causal query). One row or one column
// tile per head, so a forward without kept maps recomputes O(n d) per head, not a map. `weighting` on: each weight
// times its key's value-norm scale (valueNormScales: the norm over the layer's largest), as the grid.
struct TokenViewValues {
  std::vector<double> w;
  std::vector<char> masked;
  std::string error;  // not empty: the layer could not be read (ModelSession::tokenAttention); w and masked empty
};
TokenViewValues tokenViewValues(const model::ForwardResult& forward, int layer, const TokenViewState& state,
                                const MapWeighting& weighting);

}  // namespace attnscope::app
