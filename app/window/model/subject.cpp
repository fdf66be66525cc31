// The subject on show (subject.h): what it is, its name in the status bar and the title bar.
#include "window/model/subject.h"

#include <imgui.h>

#include "window/model/model_session.h"
#include "window/model/model_view.h"
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

SubjectKind subjectKind(const ViewState& view) {
  if (!modelShown(view)) return SubjectKind::Scene;
  return view.run.session->tensorFile().empty() ? SubjectKind::Checkpoint : SubjectKind::Tensor;
}

std::string sceneName(const AppState& state, const ViewState& view) {
  if (!view.run.layer_scene_name.empty() && state.scene().description == view.run.layer_scene_description)
    return view.run.layer_scene_name;
  return "scene";
}

void nameLayerScene(const AppState& state, ViewState& view, const std::string& model, int layer) {
  view.run.layer_scene_name = model + " layer " + std::to_string(layer + 1);
  view.run.layer_scene_description = state.editedScene().description;  // a big scene's result may still be computing
}

std::string subjectStatus(const AppState& state, const ViewState& view) {
  if (subjectKind(view) == SubjectKind::Scene) {
    const Scene& scene = state.scene();
    return sceneName(state, view) + ": n = " + std::to_string(scene.nQ()) + ", heads = " +
           std::to_string(scene.numHeads());
  }
  const ModelSession& s = *view.run.session;
  if (s.forward().n == 0) return "loading the checkpoint " + s.dir + "...";
  return s.title() + ": " + modelShapes(s) + "  |  " + layerAndHead(s);
}

std::string subjectTitle(const AppState& state, const ViewState& view) {
  if (subjectKind(view) == SubjectKind::Scene)
    return "attnscope - " + sceneName(state, view) + (state.dirty() ? " *" : "");
  const ModelSession& s = *view.run.session;
  if (s.forward().n == 0) return "attnscope - loading " + s.dir;
  return "attnscope - " + s.title() + ", " + layerAndHead(s);
}

bool sceneOnlyNote(AppState& state, ViewState& view, const char* tab) {
  const SubjectKind kind = subjectKind(view);
  if (kind == SubjectKind::Scene) return false;
  ModelSession& s = *view.run.session;
  const std::string what = kind == SubjectKind::Tensor ? "a saved attention tensor" : "a checkpoint's grid";
  textWrappedAtSpaces(std::string(tab) + " explains a scene; the centre shows " + what + " (" + s.title() +
                      "). Open a layer as a scene to see it here.");
  probeItem("subject.scene_only");
  if (kind == SubjectKind::Checkpoint && s.forward().n > 0 && layerSceneUnavailable(s).empty()) {
    const std::string open = "Open layer " + std::to_string(s.layer + 1) + " as the scene";
    if (ImGui::Button(open.c_str())) openModelLayerAsScene(state, view, s.layer);
    probeItem("subject.open_layer");
  }
  return true;
}

}  // namespace attnscope::app
