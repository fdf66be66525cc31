// The Open form for arrays files: an attention tensor into the model view, or the user's layer as the scene.
#include "window/model/open_arrays.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <iterator>
#include <memory>

#include "attnscope/arrays/attention_tensor.h"
#include "attnscope/arrays/user_layer.h"
#include "attnscope/error.h"
#include "attnscope/text_bounds.h"
#include "window/subject/model_session.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

constexpr const char* kPopup = "Open arrays file###open_arrays";

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The tensor of `arrays` (read from `path`) named `tensor` (needed where there are several), with the typed tokens;
// throws InputError on a bad tensor or token list.
arrays::AttentionTensor attentionOf(const std::map<std::string, arrays::NamedArray>& arrays, const std::string& path,
                                    const std::optional<std::string>& tensor, const std::string& tokens) {
  if (tokens.empty()) throw InputError("tokens", "one token per position: a JSON list, a token file or words", "none");
  return arrays::attentionTensorFrom(arrays, path, tensor, formTokens(tokens));
}

// The chosen tensor shown in the model view; throws InputError on a bad tensor or token list.
void openAttention(AppState& state, ViewState& view, OpenArraysForm& f) {
  std::optional<std::string> tensor;
  if (f.arrays.size() > 1) tensor = std::next(f.arrays.begin(), f.tensor)->first;
  showAttention(state, view, attentionOf(f.arrays, f.path, tensor, f.tokens), f.path);
}

// The user's layer as the scene (undoable); throws InputError naming the key or field that is wrong.
void openLayer(AppState& state, ViewState& view, OpenArraysForm& f) {
  arrays::UserLayerOptions options;
  options.layout = arrays::parseUserLayout(arrays::userLayoutNames()[static_cast<std::size_t>(f.layout)]);
  options.heads = f.heads;
  options.tokens = formTokens(f.tokens);
  if (f.mask > 0) options.mask = f.mask == 2 ? MaskKind::Causal : MaskKind::None;
  Scene scene = arrays::userLayerScene(f.arrays, f.path, options);
  const int heads = scene.numHeads(), n = scene.nQ();
  if (!state.replaceScene("open layer file", std::move(scene)))
    throw InputError(f.path, "a valid scene", state.editError());
  if (view.run.session) view.run.session->shown = false;  // the centre shows the new scene's heads
  view.heads.focus = -1;
  state.inform("Opened " + f.path + " as a " + arrays::userLayoutNames()[static_cast<std::size_t>(f.layout)] +
               " layer: " + std::to_string(heads) + " heads, " + std::to_string(n) + " tokens (Undo brings back the "
               "scene before)");
}

void radio(const char* label, const std::string& probe, int& value, int choice) {
  if (ImGui::RadioButton(label, value == choice)) value = choice;
  probeItem(probe);
}

}  // namespace

bool isArraysFile(const std::string& path) {
  return endsWith(path, ".npy") || endsWith(path, ".npz") || endsWith(path, ".safetensors");
}

std::vector<std::string> formTokens(const std::string& typed) {
  if (!typed.empty() && typed[0] == '[') return arrays::tokensFromArgument(typed);
  std::error_code ec;
  if (std::filesystem::is_regular_file(typed, ec)) return arrays::readTokenFile(typed);
  return arrays::splitTokenText(typed);
}

void showAttention(AppState& state, ViewState& view, arrays::AttentionTensor tensor, const std::string& path) {
  const model::HeadLayout c = tensor.forward.layout;
  const int n = tensor.forward.n;
  if (!view.run.session) view.run.session = std::make_shared<ModelSession>();
  view.run.session->showTensor(std::move(tensor), path);
  const auto count = [](int k, const char* one, const char* many) { return std::to_string(k) + (k == 1 ? one : many); };
  const std::string as = arrays::isCaptureFolder(path) ? " as a capture: " : " as an attention tensor: ";
  state.inform("Opened " + path + as + count(c.n_layer, " layer", " layers") + " x " +
               count(c.n_head, " head, ", " heads, ") + count(n, " token", " tokens") + " (in the centre)");
}

arrays::AttentionTensor readAttentionFile(const std::string& path, const std::string& tokens,
                                          const std::optional<std::string>& tensor) {
  const std::map<std::string, arrays::NamedArray> all = arrays::readArrays(path);
  if (tensor && all.size() == 1 && all.begin()->first.empty())
    throw InputError("--tensor", "none (" + path + " holds one unnamed array)", quoteFragment(*tensor));
  if (tensor && !all.count(*tensor)) {
    std::string names;
    for (const auto& [name, a] : all) names += (names.empty() ? "" : ", ") + name;
    throw InputError("--tensor", "one of " + names, quoteFragment(*tensor));
  }
  return attentionOf(all, path, tensor, tokens);
}

void openCapture(AppState& state, ViewState& view, const std::string& path) {
  try {
    showAttention(state, view, arrays::readCapture(path), path);
  } catch (const std::exception& e) {
    state.refuse(std::string("Could not open: ") + e.what());
  }
}

void beginOpenArrays(AppState& state, ViewState& view, const std::string& path,
                     std::optional<std::map<std::string, arrays::NamedArray>> read) {
  try {
    auto form = std::make_shared<OpenArraysForm>();
    form->path = path;
    form->arrays = read ? std::move(*read) : arrays::readArrays(path);
    if (form->arrays.empty()) throw InputError(path, "at least one array", "none");
    form->detected_attention = form->as_attention = arrays::looksLikeAttention(form->arrays);
    if (view.run.open_arrays) {  // keep what was typed last time: the same tokens and layout are likely again
      form->tokens = view.run.open_arrays->tokens;
      form->layout = view.run.open_arrays->layout;
      form->heads = view.run.open_arrays->heads;
      form->mask = view.run.open_arrays->mask;
    }
    form->pending = true;
    view.run.open_arrays = std::move(form);
  } catch (const std::exception& e) {
    state.refuse(std::string("Could not open: ") + e.what());
  }
}

void drawOpenArraysForm(AppState& state, ViewState& view) {
  if (!view.run.open_arrays) return;
  OpenArraysForm& f = *view.run.open_arrays;
  if (f.pending) ImGui::OpenPopup(kPopup), f.pending = false;
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowPos(ImVec2(display.x * 0.5f, display.y * 0.45f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(std::min(display.x - 40, ImGui::GetFontSize() * 36), 0));
  // Opaque: through the style's 94% background the heatmaps' numbers under the form showed.
  ImVec4 background = ImGui::GetStyleColorVec4(ImGuiCol_PopupBg);
  background.w = 1.0f;
  ImGui::PushStyleColor(ImGuiCol_PopupBg, background);
  const bool open = ImGui::BeginPopupModal(kPopup, nullptr, ImGuiWindowFlags_NoSavedSettings);
  ImGui::PopStyleColor();
  if (!open) return;
  probeItem("open.form");
  probeRect("open.window", ImGui::GetWindowPos(),
            ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x, ImGui::GetWindowPos().y + ImGui::GetWindowSize().y));
  textWrappedAtSpaces(f.path + " holds " + std::to_string(f.arrays.size()) +
                      (f.arrays.size() == 1 ? " array." : " arrays."));
  textWrappedAtSpaces(f.detected_attention
                          ? "By its content an attention tensor (a float array of rank 3 or 4 with square last dims)."
                          : "By its content a layer's state dict (named projection weights and biases).");
  probeItem("open.detected");
  int as = f.as_attention ? 0 : 1;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Read as");
  ImGui::SameLine();
  radio("attention tensor", "open.as.attention", as, 0);
  ImGui::SameLine();
  radio("layer (state dict)", "open.as.layer", as, 1);
  f.as_attention = as == 0;

  if (f.as_attention) {
    if (f.arrays.size() > 1) {  // which tensor: one radio button a stored array
      ImGui::TextUnformatted("Tensor");
      int i = 0;
      for (const auto& [name, a] : f.arrays) {
        radio(arrays::arrayLabel(name, a).c_str(), "open.tensor." + std::to_string(i), f.tensor, i);
        ++i;
      }
    }
  } else {
    ImGui::TextUnformatted("Layout (the keys each reads: docs/formats.md)");
    const std::vector<std::string>& names = arrays::userLayoutNames();
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (i > 0) ImGui::SameLine();
      radio(names[i].c_str(), "open.layout." + names[i], f.layout, static_cast<int>(i));
    }
    stepperInt("heads", "open.heads", f.heads, 1, 64);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Mask");
    ImGui::SameLine();
    radio("the layout's own", "open.mask.default", f.mask, 0);
    ImGui::SameLine();
    radio("none", "open.mask.none", f.mask, 1);
    ImGui::SameLine();
    radio("causal", "open.mask.causal", f.mask, 2);
  }
  // What the tokens must be, before Open can fail on them: one a position of the chosen tensor.
  if (f.as_attention && !f.arrays.empty()) {
    const arrays::NamedArray& chosen =
        std::next(f.arrays.begin(), std::clamp(f.tensor, 0, static_cast<int>(f.arrays.size()) - 1))->second;
    if (chosen.shape.size() >= 2) {
      const std::int64_t n = chosen.shape.back();
      textWrappedAtSpaces("Tokens: " + std::to_string(n) + " needed, one a position of the " + std::to_string(n) +
                          " x " + std::to_string(n) + " maps");
      probeItem("open.tokens_needed");
      probeNote("open.tokens_needed", std::to_string(n));
    }
  }
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##open_tokens", "tokens: [\"a\", \"b\"], a token file (one a line), or words", &f.tokens);
  probeItem("open.tokens");

  bool close = false;
  if (ImGui::Button("Open")) {
    try {
      f.as_attention ? openAttention(state, view, f) : openLayer(state, view, f);
      close = true;
    } catch (const std::exception& e) {
      // The form stays, with what was typed; the scene and the model view are untouched. The engine names the
      // CLI's options ("--tokens"); the form's fields have the same names without the dashes.
      f.error = e.what();
      if (f.error.rfind("--", 0) == 0) f.error.erase(0, 2);
    }
  }
  probeItem("open.confirm");
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) close = true;
  probeItem("open.cancel");
  if (!f.error.empty()) {
    errorText(f.error);
    probeItem("open.error");
  }
  if (close) {
    f.error.clear();
    f.arrays.clear();  // the arrays may be large; the typed fields stay for the next Open
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

}  // namespace attnscope::app
