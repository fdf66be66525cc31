// The views of a run that find and read heads (this folder): the run pane's "Find heads" (a head-type score for
// every layer and head as a layers x heads map, the strongest listed, a click opens that head's map) and "Token
// view" (the picked token's attention in the shown layer as coloured text, from it or to it, one head or the
// layer's mean), and the centre's rollout view (the attention rollout as one map in the window's contrast).
#pragma once

#include "window/view_state.h"

namespace attnscope::app {

class ModelSession;
void drawHeadScoresMap(ViewState& view, ModelSession& s);
void drawTokenView(ViewState& view, ModelSession& s);
void drawRolloutView(ViewState& view, ModelSession& s);

}  // namespace attnscope::app
