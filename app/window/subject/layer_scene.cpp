// A checkpoint's layer opened as the scene, and the way the window names it.
#include "window/subject/layer_scene.h"

#include <exception>
#include <string>
#include <utility>

#include "attnscope/model/families.h"
#include "window/subject/model_session.h"

namespace attnscope::app {

std::string layerSceneUnavailable(const ModelSession& s) {
  if (!s.tensorFile().empty())
    return "An attention tensor holds only the weights: there are no projections to open as a scene.";
  if (s.checkpoint() && s.checkpoint()->architecture().attn_softcap > 0)
    return model::familyDisplayName(s.checkpoint()->model_type) +
           " soft-caps its attention scores (attn_logit_softcapping), which a scene cannot: its layers do not open as "
           "scenes.";
  // Every family's layer becomes a scene from the layer inputs its forward kept (the session's forward keeps them).
  if (s.checkpoint() && s.forward().n > 0 && static_cast<int>(s.forward().ln1.size()) != s.layout().n_layer)
    return "This forward kept no layer inputs (keep_ln1), so its layers cannot open as scenes; run the model again.";
  return "";
}

void openModelLayerAsScene(AppState& state, ViewState& view, int layer) {
  ModelSession& s = *view.run.session;
  if (!layerSceneUnavailable(s).empty()) return;
  const model::Model& ck = *s.checkpoint();
  const std::string text = s.ranText().size() > 200 ? s.ranText().substr(0, 200) + "..." : s.ranText();
  const std::string description = model::familyDisplayName(ck.model_type) + " checkpoint " + ck.dir + ", layer " +
                                  std::to_string(layer + 1) + " of " + std::to_string(s.layout().n_layer) +
                                  " (from 1), text: \"" + text + "\"";
  // GPT-2: per head its own W_Q, W_K, W_V; the Llama family: KV heads, RoPE, q_norm/k_norm, sliding window.
  // A refusal (the engine's check, or validateScene's) is said in red where the model's errors are, once.
  const std::string what = "open " + model::familyDisplayName(ck.model_type) + " layer";
  try {
    Scene scene = model::modelLayerScene(ck, s.forward(), layer, s.labels(), description);
    if (!state.replaceScene(what, std::move(scene))) {
      s.error = "layer " + std::to_string(layer + 1) + " as a scene: " + state.editError();
      s.cancelled = false;
      state.clearEditError();
      return;
    }
  } catch (const std::exception& e) {
    s.error = "layer " + std::to_string(layer + 1) + " as a scene: " + e.what();
    s.cancelled = false;
    return;
  }
  s.error.clear();
  nameLayerScene(state, view, model::familyDisplayName(ck.model_type), layer);
  view.heads.focus = -1;
  s.shown = false;
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

}  // namespace attnscope::app
