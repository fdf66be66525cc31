// The token view's state (token_view.cpp): the token picked, from it or to it, one head or the layer's mean; and
// its numbers, which the view draws and the Export tab writes (as a token text figure, CSV or NPY).
#pragma once

#include <string>
#include <vector>

#include "attnscope/export/token_text.h"
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
};
TokenViewValues tokenViewValues(const model::ForwardResult& forward, int layer, const TokenViewState& state,
                                const MapWeighting& weighting);
// What the view shows as a token text (token_text.h): titled "<subject> layer L, head H: attention from token k
// 'cat'" ("mean of 12 heads", "to token k"), the tokens as `labels`, the values as tokenViewValues gives them.
TokenText tokenViewText(const model::ForwardResult& forward, const std::vector<std::string>& labels,
                        const std::string& subject, int layer, const TokenViewState& state,
                        const MapWeighting& weighting);

}  // namespace attnscope::app
