// GPT-2 panel: open a checkpoint folder and type text; the forward runs off the UI thread and its layers x heads
// grid replaces the scene's heads in the centre pane (window/model/model_view.cpp); any layer opens as the scene.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <memory>
#include <string>

#include "window/model/model_session.h"
#include "window/model/model_view.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

void drawGpt2Panel(AppState& state, ViewState& view) {
  if (!view.model) view.model = std::make_shared<ModelSession>();
  ModelSession& s = *view.model;
  sectionHeader("GPT-2 checkpoint");
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##gpt2_dir", "folder: config.json, model.safetensors, vocab.json, merges.txt", &s.dir);
  probeItem("gpt2.path");
  ImGui::InputTextMultiline("##gpt2_text", &s.text, ImVec2(-1, ImGui::GetTextLineHeight() * 3.5f));
  probeItem("gpt2.text");
  if (ImGui::Button("Open model and run")) s.start();
  probeItem("gpt2.run");
  drawModelProgress(view, "gpt2");
  if (!s.error.empty() && !s.running()) {
    if (s.cancelled)
      ImGui::TextDisabled("%s", s.error.c_str());
    else
      errorText(s.error);
    probeItem("gpt2.error");
  }
  if (!s.checkpoint() || s.forward().n == 0) return;

  const model::Gpt2Config& c = s.checkpoint()->weights.config;
  textWrappedAtSpaces(formatted("%d layers x %d heads, %d tokens: every map is in the centre pane.", c.n_layer,
                                c.n_head, s.forward().n));
  if (!s.shown) {
    if (ImGui::Button("Show the model")) s.shown = true;
    probeItem("gpt2.show");
  }
  int layer_shown = s.scene_layer + 1;  // layers counted from 1 in the window
  if (stepperInt("layer", "gpt2.layer", layer_shown, 1, c.n_layer)) s.scene_layer = layer_shown - 1;
  if (ImGui::Button("Open this layer as the scene")) openModelLayerAsScene(state, view, s.scene_layer);
  probeItem("gpt2.open_layer");
}

}  // namespace attnscope::app
