// A checkpoint's layer opened as the scene (every family, from the layer inputs its forward kept), and the name
// the window gives that scene: the run's way into the scene editors, offered by the centre, the left pane and the
// Checkpoint tab.
#pragma once

#include <string>

#include "window/app_state.h"
#include "window/view_state.h"

namespace attnscope::app {

class ModelSession;

// Layer `layer` (from 0) of the model as the scene being edited; the centre then shows the scene's heads.
// Does nothing where layerSceneUnavailable() gives a reason; a refused scene is said in the session's error.
void openModelLayerAsScene(AppState& state, ViewState& view, int layer);
// Why the checkpoint's layers cannot open as scenes (one line for a disabled button's tooltip); "" when they can:
// every family, from a forward that kept each layer's input (ModelSession's does).
std::string layerSceneUnavailable(const ModelSession& session);

// The scene's name: "GPT-2 layer 3" for a checkpoint's layer opened as the scene (edits keep the name; another
// scene replacing it does not), else "scene".
std::string sceneName(const AppState& state, const ViewState& view);
// Remembers that the scene now on show is layer `layer` (from 0) of the model titled `model` (openModelLayerAsScene).
void nameLayerScene(const AppState& state, ViewState& view, const std::string& model, int layer);

}  // namespace attnscope::app
