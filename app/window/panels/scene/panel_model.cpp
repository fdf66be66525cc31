// Model panel: sizes (d_model, heads, d_k, d_v), mask, scale, backend, and the preset scenes.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <string>

#include "attnscope/gpu_backend.h"
#include "attnscope/scene/presets.h"
#include "attnscope/scene/scene_edit.h"
#include "attnscope/compute/tiles.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

constexpr int kMaxRandomTokens = 65536;
// Whether the window keeps this random scene's maps (weights and scores, 8 bytes a cell per head, within
// mapsLimitBytes); past that it holds O(n d) and draws tiles, and the estimate says so.
bool windowKeepsMaps(const RandomSceneSpec& spec) {
  return 8.0 * spec.heads * static_cast<double>(spec.n) * spec.n <= static_cast<double>(mapsLimitBytes());
}  // random and repeated-token presets; the memory budget may refuse less

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
  SceneSize size{scene.d_model, scene.numHeads(), scene.heads[0].dK(), scene.dV(0)};
  const SceneSize before = size;
  stepperInt("d_model", "model.d_model", size.d_model, 1, 4096);
  stepperInt("heads", "model.heads", size.heads, 1, 64);
  stepperInt("d_k", "model.d_k", size.d_k, 1, 1024);
  stepperInt("d_v", "model.d_v", size.d_v, 1, 1024);
  if (size.d_model != before.d_model || size.heads != before.heads || size.d_k != before.d_k || size.d_v != before.d_v)
    state.edit("sizes", [&](Scene& s) { s = resizeScene(s, size, view.presets.fill_seed++); });
  ImGui::TextDisabled("n_q = %d, n_k = %d tokens; sum of d_v = %d", scene.nQ(), scene.nK(), scene.concatWidth());
}

// Grouped-query heads and rotary positions (issue 19): the key/value head count beside the head count, and RoPE.
void groupsAndRopeSection(AppState& state) {
  const int heads = state.scene().numHeads();
  int kv = state.scene().numKvHeads();
  if (stepperInt("kv heads", "model.kv_heads", kv, 1, heads) && kv != state.scene().numKvHeads())
    state.edit("kv heads", [kv](Scene& s) { setKvHeadCount(s, kv); });
  kv = state.scene().numKvHeads();
  if (ImGui::IsItemHovered())  // one line in the panel: the explanation waits in the tooltip
    ImGui::SetTooltip("%s", kv == heads ? "classic multi-head attention: each head its own K and V"
                            : kv == 1   ? "multi-query: every head shares one K and V"
                                        : "grouped-query: query heads share key/value heads");
  ImGui::SameLine();
  bool rope = state.scene().rope.has_value();
  if (ImGui::Checkbox("RoPE", &rope))
    state.edit("rope", [rope](Scene& s) {
      if (!rope) {
        s.rope.reset();
        return;
      }
      const int d_k = s.heads[0].dK();  // dims even, at most the smallest d_k (validateScene names the head)
      s.rope = SceneRope{10000.0, std::max(2, d_k - d_k % 2)};
    });
  probeItem("model.rope");
  if (!state.scene().rope) return;
  int dims = state.scene().rope->dims;
  if (stepperInt("rope dims", "model.rope.dims", dims, 2, 1024)) {
    const int even = dims % 2 ? (dims > state.scene().rope->dims ? dims + 1 : dims - 1) : dims;  // steps of 2
    state.edit("rope dims", [even](Scene& s) { s.rope->dims = even; });
  }
  // Its own line, labelled like the steppers: beside the RoPE box it ran off the pane (gui_clipping's RoPE step).
  double theta = state.scene().rope->theta;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("rope theta");
  ImGui::SameLine(ImGui::GetFontSize() * 6.5f);
  if (numberField("rope theta", "model.rope.theta", theta, 1.0, 1e9, ImGui::GetFontSize() * 6))
    state.edit("rope theta", [theta](Scene& s) { s.rope->theta = theta; });
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
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ImGui::TextWrapped("Click cells: filled = may attend (rows: queries, columns: keys)");
    ImGui::PopStyleColor();
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
  probeItem("model.scale.override");
  if (scene.scale) {
    ImGui::SameLine();
    double value = *scene.scale;
    // Typed, committed on focus loss; validateScene decides what a scale may be (finite, above 0).
    // 1e-6 .. 1e6: scores stay far inside float32 (a scale of 1e30 overflowed them to inf).
    if (numberField("scale", "model.scale", value, 1e-6, 1e6, ImGui::GetFontSize() * 6) &&
        !state.edit("scale", [&](Scene& s) { s.scale = static_cast<float>(value); })) {
      setFieldError("model.scale", state.editError());
      state.clearEditError();
    }
  } else {
    ImGui::SameLine();
    ImGui::TextDisabled("(1/sqrt(d_k) = %.4f)", scene.headScale(0));
    setFieldError("model.scale", "");  // a refusal is about the override's field, gone with it
  }
  showFieldError("model.scale");

  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Backend");
  const std::string name = state.backend().name();
  ImGui::SameLine();
  if (ImGui::RadioButton("CPU", name == "cpu")) state.useBackend("cpu");
  ImGui::SameLine();
  if (ImGui::RadioButton("GPU", name == "gpu")) state.useBackend("gpu");
  probeItem("model.backend.gpu");
  // Mesa's llvmpipe and friends run compute shaders on the CPU, tens of times slower than the CPU backend.
  if (isSoftwareRenderer(state.window_renderer)) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.3f, 1.0f));
    ImGui::TextWrapped(
        "The GPU here is a software renderer (%s): the GPU backend runs on the CPU, slower than "
        "the CPU backend.",
        state.window_renderer.c_str());
    ImGui::PopStyleColor();
    probeItem("model.backend.software");
  }
  ImGui::TextWrapped("Running on: %s", state.backend().device().c_str());
}

void presetsSection(AppState& state, ViewState& view) {
  if (ImGui::Button("Worked example")) state.replaceScene("preset", initialScene());
  probeItem("model.preset.worked");
  ImGui::SameLine();
  ImGui::TextDisabled("(seed 001: h = 2, d = 4)");
  probeItem("model.preset.worked.label");  // somewhere to click that is no field

  // Sizes of the random presets, each refused visibly outside what makeRandomScene takes.
  const float w = ImGui::GetFontSize() * 4;
  auto labelled = [&](const char* text) {
    ImGui::SameLine();
    ImGui::TextUnformatted(text);
    ImGui::SameLine();
  };
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("n");
  ImGui::SameLine();
  intField("n (tokens)", "model.random.n", view.presets.random_n, 1, kMaxRandomTokens, w);
  labelled("h");
  intField("h (heads)", "model.random.heads", view.presets.random_heads, 1, 64, w * 0.75f);
  labelled("d");
  intField("d (d_model)", "model.random.d_model", view.presets.random_d_model, 1, 4096, w);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("seed");
  ImGui::SameLine();
  intField("seed", "model.random.seed", view.presets.seed, 0, 2147483647, w * 1.6f);
  ImGui::SameLine();
  RandomSceneSpec random;
  random.n = view.presets.random_n, random.heads = view.presets.random_heads, random.d_model = view.presets.random_d_model;
  random.seed = static_cast<std::uint64_t>(view.presets.seed);
  if (ImGui::Button("Random scene")) {
    // Refused in one line past the memory budget before anything is made (the window keeps every map).
    state.edit("random scene", [&](Scene& s) {
      checkRandomSceneBudget(random, windowKeepsMaps(random));
      s = makeRandomScene(random);
    });
  }
  probeItem("model.preset.random");
  // The estimate before it computes: the scene and its result with every (n, n) map the window keeps.
  if (random.n >= 1 && random.heads >= 1) {
    const std::string estimate = formatted(
        "est. %.1f MiB", static_cast<double>(estimateRandomScene(random, windowKeepsMaps(random)).total()) / (1 << 20));
    // Beside the button while it fits (a pane with a scrollbar is narrower), else under it.
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(estimate.c_str()).x <= right)
      ImGui::SameLine();
    ImGui::TextDisabled("%s", estimate.c_str());
    probeItem("model.random.estimate");
  }
  for (const char* field : {"model.random.n", "model.random.heads", "model.random.d_model", "model.random.seed"})
    showFieldError(field);

  // The sentence in a box that wraps at spaces (a one-line field cut it at the pane's edge), its button under it.
  wrappedTextInput("##sentence", view.presets.sentence, ImVec2(-1, ImGui::GetTextLineHeight() * 2 + ImGui::GetStyle().FramePadding.y * 2));
  probeItem("model.sentence");
  if (ImGui::Button("Sentence"))
    state.edit("sentence scene", [&](Scene& s) {
      s = makeSentenceScene(view.presets.sentence, view.presets.random_heads, view.presets.random_d_model,
                            static_cast<std::uint64_t>(view.presets.seed));
    });
  probeItem("model.preset.sentence");

  // Half of n random tokens, then the same again: the probe for induction and duplicate-token heads.
  if (ImGui::Button("Repeated random tokens")) {
    RepeatedTokensSpec spec;
    spec.length = std::max(1, view.presets.random_n / 2);
    spec.vocab = std::max(50, spec.length);
    spec.heads = view.presets.random_heads, spec.d_model = view.presets.random_d_model;
    spec.seed = static_cast<std::uint64_t>(view.presets.seed);
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
  groupsAndRopeSection(state);
  sectionHeader("Mask and scale");
  maskSection(state);
  scaleAndBackendSection(state);
  sectionHeader("Presets");
  presetsSection(state, view);
  showEditError(state, "model");
}

}  // namespace attnscope::app
