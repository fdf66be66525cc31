// The token view (token_view.cpp): the token picked, from it or to it, one head or the layer's mean
// (TokenViewState, maps/token_attention.h, with its numbers); what the Export tab writes of it (a token text
// figure, CSV or NPY).
#pragma once

#include <string>
#include <vector>

#include "attnscope/export/token_text.h"
#include "window/maps/map_sources.h"
#include "window/maps/token_attention.h"

namespace attnscope::app {

// What the view shows as a token text (token_text.h): titled "<subject> layer L, head H: attention from token k
// 'cat'" ("mean of 12 heads", "to token k"), the tokens as `labels`, the values as tokenViewValues gives them.
TokenText tokenViewText(const model::ForwardResult& forward, const std::vector<std::string>& labels,
                        const std::string& subject, int layer, const TokenViewState& state,
                        const MapWeighting& weighting);

}  // namespace attnscope::app
