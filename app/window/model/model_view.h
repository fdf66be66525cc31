// The model in the centre pane: once a checkpoint has run (the Checkpoint tab), its layers x heads grid replaces
// the scene's heads, query heads framed by KV group. Hover names layer, head, KV head, tokens and weight; a click opens the map full-size (labels, zoom, pan);
// a token strip above the grid highlights a token's row and column in every tile; the forward's progress and
// cancel sit on top while it runs; any layer opens as the scene, and one button leads back.
#pragma once

#include <string>
#include <vector>

#include "window/app_state.h"
#include "window/view_state.h"

namespace attnscope::app {

// The centre pane's contents while a run is the subject (subject/subject.h).
void drawModelView(AppState& state, ViewState& view);
// Over the scene's heads when a model has run: a button back to the model view. Draws nothing otherwise.
void drawBackToModel(ViewState& view);
// The forward's progress bar and its Cancel button while it runs (the centre and the Checkpoint tab both show it).
void drawModelProgress(ViewState& view, const char* probe);
// An opened attention tensor's head-type scores, statistics and similarity for one layer (tensor_analysis.cpp).
void drawTensorAnalysis(ModelSession& session);
// The kv head of each query head (one entry per head, from 0; empty before a forward): the grid frames each
// group of heads sharing one. GPT-2 has no grouped-query attention: every head is its own group, and no frame
// is drawn.
std::vector<int> kvHeadOfEachHead(const ViewState& view);

}  // namespace attnscope::app
