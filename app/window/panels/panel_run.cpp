// The left pane while a checkpoint run or a saved tensor is the subject (subject/subject.h): what it is (the model card,
// or the tensor's shape), the tokens its maps are over, and the navigator of the one layer and head
// (ModelSession::layer, focus_head) that the grid, the Checkpoint tab, Export and the status bar also read.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "attnscope/model/architecture.h"
#include "attnscope/model/families.h"
#include "window/subject/layer_scene.h"
#include "window/subject/model_session.h"
#include "window/model/model_view.h"
#include "window/runviews/runviews.h"
#include "window/panels/panels.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// Tokens listed in the pane: past this many, a line says how many more (the centre's strip names any of them).
constexpr int kListedTokens = 400;

std::string mebibytes(std::size_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  return mib < 10 ? formatted("%.1f MiB", mib) : formatted("%.0f MiB", mib);
}

// One "name  value" row of a two-column card, the value noted for the tests as "<probe>".
void cardRow(const char* name, const std::string& value, const std::string& probe) {
  ImGui::TableNextRow();
  ImGui::TableSetColumnIndex(0);
  ImGui::TextDisabled("%s", name);
  ImGui::TableSetColumnIndex(1);
  ImGui::TextUnformatted(value.c_str());
  probeItem(probe);
  probeNote(probe, value);
}

void modelCard(const ModelSession& s) {
  const model::Architecture arch = s.checkpoint()->architecture();
  sectionHeader("Model");
  if (!ImGui::BeginTable("##card", 2, ImGuiTableFlags_SizingFixedFit)) return;
  cardRow("family", model::familyDisplayName(s.checkpoint()->model_type), "subject.card.family");
  cardRow("layers", std::to_string(arch.n_layer), "subject.card.layers");
  cardRow("heads", std::to_string(arch.n_head), "subject.card.heads");
  cardRow("KV heads", std::to_string(arch.n_kv_head), "subject.card.kv_heads");
  cardRow("head_dim", std::to_string(arch.head_dim), "subject.card.head_dim");
  // What the files hold (the loader saw every tensor's dtype), then what the engine computes in; config.json's
  // torch_dtype only where it says something else.
  const std::string& stored = s.checkpoint()->weights.stored_dtype;
  const std::string& stated = s.statedDtype();
  cardRow("dtype",
          stored + " on disk, float32 here" +
              (!stated.empty() && stated != stored ? " (config.json says " + stated + ")" : std::string()),
          "subject.card.dtype");
  cardRow("memory",
          mebibytes(model::weightBytes(arch)) + " weights, " + mebibytes(s.forward().buffer.size() * sizeof(float)) +
              " maps",
          "subject.card.memory");
  ImGui::EndTable();
}

void tensorCard(const ModelSession& s) {
  const model::ForwardResult& f = s.forward();
  if (!f.keepsMaps()) {  // a capture (attnscope/arrays/capture.h): queries and keys, no map stored
    sectionHeader("Capture");
    textWrappedAtSpaces(s.title());
    probeItem("subject.tensor.name");
    const std::string shape = formatted("(%d, %d, %d, %d)", f.layout.n_layer, f.layout.n_head, f.n, f.n);
    textWrappedAtSpaces(formatted("queries and keys of %d layers x %d heads (%d KV heads), %d tokens%s: each map "
                                  "computed from them when shown, a layer read when first shown",
                                  f.layout.n_layer, f.layout.n_head, f.layout.n_kv_head, f.n,
                                  s.hasValueNorms() ? ", with values and W_O's rows (value norms)" : ""));
    probeItem("subject.tensor.shape");
    probeNote("subject.tensor.shape", shape);
    return;
  }
  sectionHeader("Saved tensor");
  textWrappedAtSpaces(s.title());
  probeItem("subject.tensor.name");
  const std::string shape = formatted("(%d, %d, %d, %d)", f.layout.n_layer, f.layout.n_head, f.n, f.n);
  textWrappedAtSpaces("shape " + shape + ": layers, heads, queries, keys");
  probeItem("subject.tensor.shape");
  probeNote("subject.tensor.shape", shape);
}

// The tokens as "0 The  1 cat ...", wrapped at the pane's edge; a hover names one, a click picks it for the token
// view.
void tokenList(ViewState& view, const ModelSession& s) {
  const std::vector<std::string>& labels = s.labels();
  sectionHeader(formatted("Tokens (%zu)", labels.size()).c_str());
  if (!s.ranText().empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    textWrappedAtSpaces(s.ranText());
    ImGui::PopStyleColor();
    probeItem("subject.text");
    probeNote("subject.text", s.ranText());
  }
  const float right = ImGui::GetWindowContentRegionMax().x + ImGui::GetWindowPos().x;
  const int shown = std::min(static_cast<int>(labels.size()), kListedTokens);
  for (int i = 0; i < shown; ++i) {
    const std::string chip = std::to_string(i) + " " + axisLabel(labels[static_cast<std::size_t>(i)]);
    const float w = ImGui::CalcTextSize(chip.c_str()).x;
    // Beside the last chip while it fits (decided before SameLine, which would otherwise leave the cursor's reach
    // past the pane's edge), else on the next line.
    if (i > 0 && ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w <= right) ImGui::SameLine();
    ImGui::TextUnformatted(chip.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("token %d: '%s'\nclick: its attention in the token view", i,
                                                    labels[static_cast<std::size_t>(i)].c_str());
    probeItem("subject.token." + std::to_string(i));
    if (ImGui::IsItemClicked()) view.tokens.token = i;  // the token view's token
  }
  if (shown < static_cast<int>(labels.size()))
    ImGui::TextDisabled("... and %d more (the strip over the grid names each)",
                        static_cast<int>(labels.size()) - shown);
  probeNote("subject.tokens", std::to_string(labels.size()));
}

// The layer and head on show: the same state the grid's stepper, a tile's click and the Checkpoint tab set.
void navigator(ViewState& view, ModelSession& s) {
  const model::HeadLayout& c = s.forward().layout;
  sectionHeader("Layer and head");
  int layer_shown = s.layer + 1;
  if (stepperInt("layer", "subject.layer", layer_shown, 1, c.n_layer)) s.layer = layer_shown - 1;
  const CellView whole{0, 0, static_cast<float>(s.forward().n), static_cast<float>(s.forward().n)};
  if (s.focused()) {
    int head_shown = s.focus_head + 1;
    if (stepperInt("head", "subject.head", head_shown, 1, c.n_head))
      s.focus_head = head_shown - 1, view.run.zoom = whole;
    if (c.n_kv_head > 0 && c.n_kv_head < c.n_head) {
      ImGui::TextDisabled("KV head %d of %d", c.kvHead(s.focus_head) + 1, c.n_kv_head);
      probeItem("subject.kv_head");
    }
    if (ImGui::Button("Every head of every layer (the grid)")) s.focus_head = -1;
    probeItem("subject.grid");
  } else {
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("head");
    ImGui::SameLine(ImGui::GetFontSize() * 6.5f);
    ImGui::TextDisabled("every head (the grid)");
    probeNote("subject.head", "grid");
    if (ImGui::Button("Open head 1 full-size")) s.focus_head = 0, view.run.zoom = whole;
    probeItem("subject.open_head");
  }
}

}  // namespace

void drawRunPane(AppState& state, ViewState& view, ModelSession& s) {
  const bool tensor = !s.tensorFile().empty();
  probeNote("subject.pane", tensor ? "tensor" : "checkpoint");
  if (s.forward().n == 0) {  // the first forward still running
    textWrappedAtSpaces("Loading " + s.dir + "...");
    drawModelProgress(view, "subject");
    return;
  }
  if (tensor)
    tensorCard(s);
  else
    modelCard(s);
  ImGui::Spacing();
  navigator(view, s);
  if (!tensor && layerSceneUnavailable(s).empty()) {
    const std::string open = "Open layer " + std::to_string(s.layer + 1) + " as the scene";
    if (ImGui::Button(open.c_str())) openModelLayerAsScene(state, view, s.layer);
    probeItem("subject.open_layer");
  }
  ImGui::Spacing();
  drawHeadScoresMap(view, s);
  ImGui::Spacing();
  drawTokenView(view.tokens, view.run.value_norm == 1, s);
  ImGui::Spacing();
  tokenList(view, s);
  ImGui::Spacing();
  // The scene editors have nothing to edit here: say why rather than edit the hidden worked example.
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  textWrappedAtSpaces(tensor
                          ? "The scene editors (Model, Inputs, Projections) are hidden: a saved tensor or a capture "
                            "holds maps or queries and keys only, nothing to edit."
                          : "The scene editors (Model, Inputs, Projections) are hidden: open a layer as the scene "
                            "to edit its weights and inputs.");
  ImGui::PopStyleColor();
  probeItem("subject.editors_hidden");
}

}  // namespace attnscope::app
