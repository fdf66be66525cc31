// The views of a run that find and read heads (this folder): the run pane's "Find heads" (a head-type score for
// every layer and head as a layers x heads map, the strongest listed, a click opens that head's map) and "Token
// view" (the picked token's attention in the shown layer as coloured text, from it or to it, one head or the
// layer's mean), and the centre's rollout view (the attention rollout as one map in the window's contrast).
#pragma once

#include "window/view_state.h"

namespace attnscope::app {

class ModelSession;
void drawHeadScoresMap(ViewState& view, ModelSession& s);
// The token view reads and sets its own state; `value_norms`: weighted as the grid is (the centre's switch on).
void drawTokenView(TokenViewState& tokens, bool value_norms, ModelSession& s);
// The rollout in the centre's colour scale (`contrast`); its "Back to the heads" switches `run`'s rollout off.
void drawRolloutView(ModelViewState& run, MapContrast& contrast, ModelSession& s);

}  // namespace attnscope::app
