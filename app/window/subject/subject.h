// The one subject the window shows and acts on: a scene (the worked example, a preset, a file, a checkpoint's
// layer opened as a scene), a checkpoint run (its forward's layers x heads), or a saved attention tensor. The
// scene lives in AppState and the run in ViewState's ModelSession; the panes ask a Subject what is on show
// (its names, whether it can be edited, its run) rather than looking at both owners, so that only subject.cpp
// tells the three apart.
#pragma once

#include <string>

#include "window/app_state.h"
#include "window/view_state.h"

namespace attnscope::app {

class ModelSession;

class Subject {
 public:
  // The subject on show now: the model (a checkpoint's forward, running or landed, or a tensor) while the centre
  // shows it, else the scene. Cheap: made where it is asked, once a frame or more.
  Subject(AppState& state, ViewState& view);

  // The scene editors (Model, Inputs, Projections), its compute time and warnings, and the tabs that explain a
  // scene (Steps, Diff, Cell, Mistakes) have something to work on: only a scene can be edited.
  bool editable() const { return run_ == nullptr; }
  // The run on show (a checkpoint's forward or a tensor), or null while the scene is the subject.
  ModelSession* run() const { return run_; }
  // There is something to show and export: a scene always, a run once its first forward (or tensor) landed.
  bool ready() const;

  // The left pane's title: "Scene", "Model" or "Tensor".
  const char* paneTitle() const;
  // The centre pane's title: "Model", "Heads", or "GPT-2 layer 3: heads" for a checkpoint's layer as the scene.
  std::string centreTitle() const;
  // The subject in one line, for the status bar: "GPT-2: 12 layers x 12 heads, 11 tokens | layer 5, head 8",
  // "att.npy: 2 layers x 3 heads, 6 tokens | layer 1", "scene: n = 3, heads = 2".
  std::string status() const;
  // The window's title: "attnscope - " and the subject in a few words ("GPT-2, layer 5", "scene *" when unsaved).
  std::string windowTitle() const;
  // For a tab that explains a scene (Steps, Diff, Cell, Mistakes) while the subject cannot be edited: a line
  // saying so, and where the model's layer can open as a scene, a button that does. True then: the tab draws
  // nothing else. `tab`: its name, as in "Steps explains a scene".
  bool sceneOnlyNote(const char* tab) const;

 private:
  bool tensor() const;  // the run is a saved tensor (no weights), not a checkpoint's forward
  AppState& state_;
  ViewState& view_;
  ModelSession* run_ = nullptr;  // null: the scene
};

}  // namespace attnscope::app
