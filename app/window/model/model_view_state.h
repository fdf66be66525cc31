// The centre's model view state (model_view.cpp, subject.cpp): the opened checkpoint or tensor, which of its views
// is on show, the full-size map's cells in view, and the name of a layer opened as the scene.
#pragma once

#include <memory>
#include <string>

#include "window/maps/heatmap_view.h"

namespace attnscope::app {

class ModelSession;     // window/subject/model_session.h: the opened checkpoint and its forward
struct OpenArraysForm;  // window/model/open_arrays.h: the Open form for .npy, .npz and .safetensors files

struct ModelViewState {
  std::shared_ptr<ModelSession> session;        // created by the Checkpoint panel on first draw (or an Open of a tensor)
  std::shared_ptr<OpenArraysForm> open_arrays;  // the file bar's Open form for arrays files (open_arrays.h)
  int rollout = 0;     // the centre's view of a run: 0 its heads (the grid or one map), 1 its rollout
  int value_norm = 0;  // the grid and full-size map weighted by value norms (map_sources.h's valueNormScales): 1 on
  CellView zoom;       // the full-size map: the cells in view
  // A checkpoint's layer opened as the scene: its name ("GPT-2 layer 3") while the scene's description is still
  // the one it was opened with (subject.h).
  std::string layer_scene_name, layer_scene_description;
  unsigned seen_scene_edits = 0;  // AppState::sceneEdits() when last looked: an edit since makes the scene the subject
};

}  // namespace attnscope::app
