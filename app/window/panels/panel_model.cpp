// Model panel: sizes (d_model, heads, d_k, d_v), mask, scale, backend, and the preset scenes.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <string>

#include "attnscope/scene/presets.h"
#include "attnscope/scene/scene_edit.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

enum MaskChoice { kNone, kCausal, kKeyPadding, kPainted };

int maskChoice(const Scene& s) {
  if (s.mask == MaskKind::Causal) return kCausal;
  if (s.mask == MaskKind::Explicit) return kPainted;
  return s.key_padding.empty() ? kNone : kKeyPadding;
}

void setMask(Scene& s, int choice) {
  s.mask = choice == kCausal ? MaskKind::Causal : choice == kPainted ? MaskKind::Explicit : MaskKind::None;
  if (choice == kKeyPadding) {
    if (s.key_padding.empty()) s.key_padding.assign(static_cast<std::size_t>(s.nK()), 0);
  } else {
    s.key_padding.clear();
  }
  if (choice == kPainted && (s.explicit_mask.rows() != s.nQ() || s.explicit_mask.cols() != s.nK())) {
    Scene causal = s;  // painting starts from the causal pattern, a common hand-made mask
    causal.mask = MaskKind::Causal;
    s.explicit_mask = allowedMask(causal);
  }
}

void sizesSection(AppState& state, ViewState& view) {
  const Scene& scene = state.scene();
  SceneSize size{scene.d_model, scene.numHeads(), scene.heads[0].dK(), scene.heads[0].dV()};
  const SceneSize before = size;
  stepperInt("d_model", "model.d_model", size.d_model, 1, 4096);
  stepperInt("heads", "model.heads", size.heads, 1, 64);
  stepperInt("d_k", "model.d_k", size.d_k, 1, 1024);
  stepperInt("d_v", "model.d_v", size.d_v, 1, 1024);
  if (size.d_model != before.d_model || size.heads != before.heads || size.d_k != before.d_k || size.d_v != before.d_v)
    state.edit("sizes", [&](Scene& s) { s = resizeScene(s, size, view.seed++); });
  ImGui::TextDisabled("n_q = %d, n_k = %d tokens; sum of d_v = %d", scene.nQ(), scene.nK(), scene.concatWidth());
}

void maskSection(AppState& state) {
  const Scene& scene = state.scene();
  int current = maskChoice(scene);
  const char* names[] = {"none", "causal", "key padding", "painted"};
  const char* probes[] = {"model.mask.none", "model.mask.causal", "model.mask.padding", "model.mask.painted"};
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Mask");
  for (int i = 0; i < 4; ++i) {
    if (i != 2)
      ImGui::SameLine(i == 0 ? ImGui::GetFontSize() * 4 : 0);
    else
      ImGui::SetCursorPosX(ImGui::GetFontSize() * 4);
    if (ImGui::RadioButton(names[i], current == i) && current != i)
      state.edit("mask", [i](Scene& s) { setMask(s, i); });
    probeItem(probes[i]);
  }
  current = maskChoice(scene);  // as it is now, after this frame's edit
  if (current == kKeyPadding) {
    ImGui::TextDisabled("Padded keys are never attended:");
    for (int j = 0; j < scene.nK(); ++j) {
      bool padded = scene.key_padding[static_cast<std::size_t>(j)] != 0;
      if (j % 4) ImGui::SameLine();
      ImGui::PushID(j);
      if (ImGui::Checkbox(scene.keyTokens()[static_cast<std::size_t>(j)].c_str(), &padded))
        state.edit("key padding", [&](Scene& s) { s.key_padding[static_cast<std::size_t>(j)] = padded ? 1 : 0; });
      ImGui::PopID();
    }
  }
  if (current == kPainted) {
    ImGui::TextDisabled("Click cells: filled = may attend (rows: queries, columns: keys)");
    const float side = ImGui::GetFrameHeight() * 0.8f;
    const int n_q = std::min(scene.nQ(), 32), n_k = std::min(scene.nK(), 32);
    for (int i = 0; i < n_q; ++i) {
      for (int j = 0; j < n_k; ++j) {
        if (j) ImGui::SameLine(0, 2);
        const bool allowed = scene.explicit_mask(i, j) != 0;
        ImGui::PushID(i * 64 + j);
        ImGui::PushStyleColor(ImGuiCol_Button, allowed ? ImVec4(0.3f, 0.6f, 0.9f, 1) : ImVec4(0.25f, 0.25f, 0.25f, 1));
        if (ImGui::Button("##cell", ImVec2(side, side)))
          state.edit("painted mask", [=](Scene& s) { s.explicit_mask(i, j) = allowed ? 0 : 1; });
        ImGui::PopStyleColor();
        ImGui::PopID();
      }
    }
    if (scene.nQ() > 32 || scene.nK() > 32) ImGui::TextDisabled("(the first 32 x 32 cells)");
  }
}

void scaleAndBackendSection(AppState& state) {
  const Scene& scene = state.scene();
  bool override_scale = scene.scale.has_value();
  if (ImGui::Checkbox("Scale override", &override_scale))
    state.edit("scale", [&](Scene& s) {
      if (override_scale)
        s.scale = s.headScale(0);
      else
        s.scale.reset();
    });
  if (scene.scale) {
    ImGui::SameLine();
    float value = *scene.scale;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    const bool changed = ImGui::DragFloat("##scale", &value, 0.005f, 0.0f, 0.0f, "%.4f");
    const bool continuing = continuesGesture(changed);
    if (changed)
      state.edit(
          "scale", [&](Scene& s) { s.scale = value; }, -1, continuing);
  } else {
    ImGui::SameLine();
    ImGui::TextDisabled("(1/sqrt(d_k) = %.4f)", scene.headScale(0));
  }

  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Backend");
  const std::string name = state.backend().name();
  ImGui::SameLine();
  if (ImGui::RadioButton("CPU", name == "cpu")) state.useBackend("cpu");
  ImGui::SameLine();
  if (ImGui::RadioButton("GPU", name == "gpu")) state.useBackend("gpu");
  ImGui::TextWrapped("Running on: %s", state.backend().device().c_str());
}

void presetsSection(AppState& state, ViewState& view) {
  if (ImGui::Button("Worked example")) state.replaceScene("preset", initialScene());
  probeItem("model.preset.worked");
  ImGui::SameLine();
  ImGui::TextDisabled("(seed 001: h = 2, d = 4)");

  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
  ImGui::InputInt("n##random", &view.random_n, 0);
  probeItem("model.random.n");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 3);
  ImGui::InputInt("h##random", &view.random_heads, 0);
  probeItem("model.random.heads");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 3.5f);
  ImGui::InputInt("d##random", &view.random_d_model, 0);
  probeItem("model.random.d_model");
  int seed = static_cast<int>(view.seed);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
  if (ImGui::InputInt("seed", &seed, 0)) view.seed = static_cast<std::uint64_t>(std::max(0, seed));
  ImGui::SameLine();
  if (ImGui::Button("Random scene")) {
    RandomSceneSpec spec;
    spec.n = view.random_n, spec.heads = view.random_heads, spec.d_model = view.random_d_model;
    spec.seed = view.seed;
    state.edit("random scene", [&](Scene& s) { s = makeRandomScene(spec); });
  }
  probeItem("model.preset.random");

  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 5.5f);
  ImGui::InputText("##sentence", &view.sentence);
  ImGui::SameLine();
  if (ImGui::Button("Sentence"))
    state.edit("sentence scene", [&](Scene& s) {
      s = makeSentenceScene(view.sentence, std::max(1, view.random_heads), std::max(1, view.random_d_model), view.seed);
    });

  // Half of n random tokens, then the same again: the probe for induction and duplicate-token heads.
  if (ImGui::Button("Repeated random tokens")) {
    RepeatedTokensSpec spec;
    spec.length = std::max(1, view.random_n / 2);
    spec.vocab = std::max(50, spec.length);
    spec.heads = view.random_heads, spec.d_model = view.random_d_model, spec.seed = view.seed;
    state.edit("repeated tokens scene", [&](Scene& s) { s = makeRepeatedTokensScene(spec); });
  }
  probeItem("model.preset.repeated");
  ImGui::SameLine();
  ImGui::TextDisabled("(n/2 tokens, twice)");
}

}  // namespace

void drawModelPanel(AppState& state, ViewState& view) {
  sectionHeader("Sizes");
  sizesSection(state, view);
  sectionHeader("Mask and scale");
  maskSection(state);
  scaleAndBackendSection(state);
  sectionHeader("Presets");
  presetsSection(state, view);
  showEditError(state);
}

}  // namespace attnscope::app
