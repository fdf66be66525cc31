// What the window shows and how: one member a panel or view, each defined in that panel's own header, beside the
// colour scale every map shares. The scene itself lives in AppState and changes only through AppState::edit.
#pragma once

#include "attnscope/export/contrast.h"
#include "window/model/model_view_state.h"
#include "window/panels/analysis/panel_breakdown.h"
#include "window/panels/analysis/panel_diff.h"
#include "window/panels/output/panel_export.h"
#include "window/panels/panel_heads.h"
#include "window/panels/scene/panel_model.h"
#include "window/panels/analysis/panel_pitfalls.h"
#include "window/panels/scene/panel_projections.h"
#include "window/panels/panel_row_profile.h"
#include "window/panels/analysis/panel_similarity.h"
#include "window/panels/analysis/panel_walkthrough.h"
#include "window/runviews/find_heads.h"
#include "window/runviews/token_view.h"

namespace attnscope::app {

struct ViewState {
  MapContrast contrast;  // every map's colours (attnscope/export/contrast.h): the heads, the model grid, the full map, exports
  HeadsState heads;
  SimilarityState similarity;
  ModelViewState run;  // the centre's checkpoint run or tensor
  TokenViewState tokens;
  FindHeadsState find;
  WalkthroughState walk;
  PresetsState presets;
  ProjectionsState projections;
  ExportState exporter;
  PitfallsState pitfalls;
  BreakdownState breakdown;
  DiffState diff;
  RowProfileState profile;
};

}  // namespace attnscope::app
