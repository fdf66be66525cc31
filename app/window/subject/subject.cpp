// The subject on show (subject.h): what it is, its name in the status bar and the title bar.
#include "window/subject/subject.h"

#include <imgui.h>

#include "window/subject/layer_scene.h"
#include "window/subject/model_session.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// "12 layers x 12 heads, 11 tokens" (with the KV groups where heads share them).
std::string modelShapes(const ModelSession& s) {
  const model::HeadLayout& c = s.layout();
  std::string text = std::to_string(c.n_layer) + (c.n_layer == 1 ? " layer x " : " layers x ") +
                     std::to_string(c.n_head) + " heads";
  if (s.checkpoint() && c.n_kv_head < c.n_head) text += " in " + std::to_string(c.n_kv_head) + " KV groups";
  return text + ", " + std::to_string(s.forward().n) + " tokens";
}

// "layer 5, head 8" (from 1), or "layer 5" while the grid is on show.
std::string layerAndHead(const ModelSession& s) {
  std::string text = "layer " + std::to_string(s.layer + 1);
  if (s.focused()) text += ", head " + std::to_string(s.focus_head + 1);
  return text;
}

}  // namespace

Subject::Subject(AppState& state, ViewState& view) : state_(state), view_(view) {
  const std::shared_ptr<ModelSession>& s = view.run.session;
  if (!s || !s->shown || (s->forward().n == 0 && !s->running())) return;  // the centre shows the scene's heads
  run_ = s.get();
}

bool Subject::tensor() const { return run_ && !run_->tensorFile().empty(); }

bool Subject::ready() const { return !run_ || run_->forward().n > 0; }

const char* Subject::paneTitle() const { return !run_ ? "Scene" : tensor() ? "Tensor" : "Model"; }

std::string Subject::centreTitle() const {
  if (run_) return "Model";
  const std::string scene = sceneName(state_, view_);
  return scene == "scene" ? "Heads" : scene + ": heads";
}

std::string Subject::status() const {
  if (!run_) {
    const Scene& scene = state_.scene();
    return sceneName(state_, view_) + ": n = " + std::to_string(scene.nQ()) + ", heads = " +
           std::to_string(scene.numHeads());
  }
  if (!ready()) return "loading the checkpoint " + run_->dir + "...";
  return run_->title() + ": " + modelShapes(*run_) + "  |  " + layerAndHead(*run_);
}

std::string Subject::windowTitle() const {
  if (!run_) return "attnscope - " + sceneName(state_, view_) + (state_.dirty() ? " *" : "");
  if (!ready()) return "attnscope - loading " + run_->dir;
  return "attnscope - " + run_->title() + ", " + layerAndHead(*run_);
}

bool Subject::sceneOnlyNote(const char* tab) const {
  if (!run_) return false;
  ModelSession& s = *run_;
  const std::string what = tensor() ? "a saved attention tensor" : "a checkpoint's grid";
  textWrappedAtSpaces(std::string(tab) + " explains a scene; the centre shows " + what + " (" + s.title() +
                      "). Open a layer as a scene to see it here.");
  probeItem("subject.scene_only");
  if (!tensor() && s.forward().n > 0 && layerSceneUnavailable(s).empty()) {
    const std::string open = "Open layer " + std::to_string(s.layer + 1) + " as the scene";
    if (ImGui::Button(open.c_str())) openModelLayerAsScene(state_, view_, s.layer);
    probeItem("subject.open_layer");
  }
  return true;
}

}  // namespace attnscope::app
