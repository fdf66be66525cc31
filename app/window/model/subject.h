// The one subject the window shows and acts on: a scene (the worked example, a preset, a file, a checkpoint's
// layer opened as a scene), a checkpoint run (its forward's layers x heads), or a saved attention tensor. The
// status bar, the title bar, Export, Similarity and the scene-only analysis tabs ask here what it is.
#pragma once

#include <string>

#include "window/app_state.h"
#include "window/view_state.h"

namespace attnscope::app {

enum class SubjectKind { Scene, Checkpoint, Tensor };

// What the centre shows: the model (a checkpoint's forward, running or landed, or a tensor), else the scene.
SubjectKind subjectKind(const ViewState& view);
// The scene's name: "GPT-2 layer 3" for a checkpoint's layer opened as the scene (edits keep the name; another
// scene replacing it does not), else "scene".
std::string sceneName(const AppState& state, const ViewState& view);
// Remembers that the scene now on show is layer `layer` (from 0) of the model titled `model` (openModelLayerAsScene).
void nameLayerScene(const AppState& state, ViewState& view, const std::string& model, int layer);
// The subject in one line, for the status bar: "GPT-2: 12 layers x 12 heads, 11 tokens | layer 5, head 8",
// "att.npy: 2 layers x 3 heads, 6 tokens | layer 1", "scene: n = 3, heads = 2".
std::string subjectStatus(const AppState& state, const ViewState& view);
// The window's title: "attnscope - " and the subject in a few words ("GPT-2, layer 5", "scene *" when unsaved).
std::string subjectTitle(const AppState& state, const ViewState& view);
// For a tab that explains a scene (Steps, Diff, Cell, Mistakes) while the subject is a model or tensor: a line
// saying so, and where the model's layer can open as a scene, a button that does. True then: the tab draws
// nothing else. `tab`: its name, as in "Steps explains a scene".
bool sceneOnlyNote(AppState& state, ViewState& view, const char* tab);
// The left pane while a checkpoint run or a tensor is the subject (subject_pane.cpp): the model card (family,
// layers, heads, KV heads, head_dim, dtype, memory) or the tensor's shape, the layer and head navigator, the
// tokens, and why the scene editors are hidden.
void drawSubjectPane(AppState& state, ViewState& view);
// The views of a run that find and read heads (app/window/runviews/): the subject pane's "Find heads" (a
// head-type score for every layer and head as a layers x heads map, the strongest listed, a click opens that
// head's map) and "Token view" (the picked token's attention in the shown layer as coloured text, from it or to
// it, one head or the layer's mean), and the centre's rollout view (the attention rollout as one map in the
// window's contrast).
class ModelSession;
void drawHeadScoresMap(ViewState& view, ModelSession& s);
void drawTokenView(ViewState& view, ModelSession& s);
void drawRolloutView(ViewState& view, ModelSession& s);

}  // namespace attnscope::app
