// Find heads' "which heads matter": each head's output ablated (zeroed, or replaced by its mean over the positions)
// or patched between the text and a corrupted one, and the change in a metric on the prediction (model/patching.h),
// as a layers x heads map in diverging colours around 0, with a layers x {attention, MLP} strip and (patching) a
// layers x positions map of the residual stream. Ablation shows the metric's change from the clean run;
// patching its normalised value (patched - corrupt) / (clean - corrupt), 1 where the head alone restores the clean
// run. Computed off the UI thread when Run is pressed (ModelSession::patching), with progress and Cancel.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/model/patching.h"
#include "window/subject/model_session.h"
#include "window/view_state.h"
#include "window/runviews/find_heads.h"
#include "window/runviews/layer_head_map.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// FindHeadsState::patch_kind's order.
constexpr const char* kKinds[] = {"ablate: zero", "ablate: mean over positions", "patch clean into corrupt",
                                  "patch corrupt into clean", "ablate: mean over a reference text"};
constexpr int kKindCount = 5;

// A map beside the heads' on their colour scale (-bar_max .. bar_max): `shown` (layers, columns), the raw metric
// `raw(l, c)` on hover; nothing opens on a click.
void drawPartMap(const char* what, const char* id, const Eigen::MatrixXd& shown, int layers,
                 const std::function<std::string(int)>& column_label, const std::function<double(int, int)>& raw,
                 const std::string& metric, bool patching, float bar_max) {
  ImGui::Spacing();
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  textWrappedAtSpaces(what);
  ImGui::PopStyleColor();
  probeItem(std::string(id) + ".label");
  LayerHeadMap map;
  map.id = id, map.layers = layers, map.heads = static_cast<int>(shown.cols());
  map.column_label = column_label;
  map.max_cell_fonts = 3;  // "attn" and "MLP" over their columns
  map.value = [&](int l, int c) -> std::optional<double> {
    if (!std::isfinite(shown(l, c))) return std::nullopt;
    return shown(l, c);
  };
  map.colors = ColorMap::Diverging;
  map.vmin = -bar_max, map.vmax = bar_max;
  map.tooltip = [&](int l, int c) {
    return formatted("layer %d, %s\n%s %.4f (%s %+.4f)", l + 1, column_label(c).c_str(), metric.c_str(), raw(l, c),
                     patching ? "normalised" : "change", shown(l, c));
  };
  drawLayerHeadMap(map);
}

}  // namespace

void drawPatchingMap(FindHeadsState& find, ModelViewState& run, ModelSession& s) {
  if (!checkpointMapOffered(s, "Which heads matter", &model::patchRefusal)) return;
  const float font = ImGui::GetFontSize();
  find.patch_kind = std::clamp(find.patch_kind, 0, kKindCount - 1);
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, 16 * font));
  if (ImGui::BeginCombo("##patch_kind", kKinds[find.patch_kind])) {
    for (int k = 0; k < kKindCount; ++k) {
      if (ImGui::Selectable(kKinds[k], k == find.patch_kind)) find.patch_kind = k;
      probeItem("findheads.patch.kind." + std::to_string(k));
    }
    ImGui::EndCombo();
  }
  probeItem("findheads.patch.kind");
  const auto field = [&](const char* label, const char* probe, std::string& text) {
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(label);
    ImGui::SameLine(font * 5.5f);
    std::string typed;
    if (committedText(probe, text, std::min(ImGui::GetContentRegionAvail().x, 16 * font), typed)) text = typed;
  };
  field("metric", "findheads.patch.metric", find.patch_metric);
  const bool patching = find.patch_kind == 2 || find.patch_kind == 3, referenced = find.patch_kind == 4;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("position");
  ImGui::SameLine(font * 5.5f);
  ImGui::SetNextItemWidth(5 * font);
  ImGui::InputInt("##patch_position", &find.patch_position, 0);
  find.patch_position = std::max(find.patch_position, -1);
  probeItem("findheads.patch.position");
  ImGui::SameLine();
  ImGui::TextDisabled(find.patch_position < 0 ? "the last token (-1); loss: every position"
                                              : "from 0; loss: from it on");
  if (patching) field("corrupt", "findheads.patch.corrupt", find.patch_corrupt);
  if (referenced) field("reference", "findheads.patch.reference", find.patch_reference);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  textWrappedAtSpaces(patching ? "metric: logit-diff:A,B, logprob:T or loss (A, B, T ids or one-token texts); "
                                 "corrupt: a text of as many tokens as the subject's"
                               : "metric: logit-diff:A,B, logprob:T or loss (A, B, T ids or one-token texts)");
  ImGui::PopStyleColor();
  if (ImGui::Button("Run")) ++find.patch_runs, find.patch_revision = s.revision();
  probeItem("findheads.patch.run");
  if (find.patch_runs == 0) {
    ImGui::TextDisabled("each head reruns the model from its layer on");
    return;
  }
  if (find.patch_revision != s.revision()) {  // seconds to minutes of work: never started by a new text alone
    ImGui::TextDisabled("the text changed: Run measures it");
    probeItem("findheads.patch.stale");
    return;
  }
  const ModelSession::Patching* p =
      s.patching({find.patch_kind, find.patch_metric, patching ? find.patch_corrupt : "",
                  referenced ? find.patch_reference : "", find.patch_position, find.patch_runs});
  if (!p) {
    const auto [done, total] = s.patchingDone();
    ImGui::SameLine();
    ImGui::TextDisabled("%d / %d interventions...", done, total);
    probeItem("findheads.pending");
    ImGui::SameLine();
    if (ImGui::SmallButton("Cancel")) s.cancelPatching();
    probeItem("findheads.patch.cancel");
    return;
  }
  if (!p->error.empty()) {
    errorText(p->error);
    probeItem("findheads.patch.error");
    return;
  }
  const model::PatchMaps& maps = p->maps;
  // What each cell shows: ablation the metric's change from the clean run, patching the normalised value.
  const Eigen::MatrixXd shown = patching ? maps.normalised(maps.heads) : Eigen::MatrixXd(maps.heads.array() - maps.clean);
  const int layers = static_cast<int>(shown.rows()), heads = static_cast<int>(shown.cols());
  const std::string metric =
      model::patchMetricText(maps.metric) +
      (maps.metric.position < 0 ? ""
       : maps.metric.kind == model::PatchMetric::Kind::Loss ? formatted(" from position %d", maps.metric.position)
                                                             : formatted(" at position %d", maps.metric.position));
  const std::string title =
      patching ? formatted("%s, %s: clean %.4f, corrupt %.4f; each head (patched - corrupt) / (clean - corrupt)",
                           maps.kind.c_str(), metric.c_str(), maps.clean, maps.corrupt)
               : formatted("%s, %s: %.4f; each head's change of it", maps.kind.c_str(), metric.c_str(), maps.clean);
  textWrappedAtSpaces(title);
  probeItem("findheads.patch.title");
  probeNote("findheads.patch.title", title);
  // The layers' parts (attention: all heads at once; MLP) and, patching, the residual stream at each position, on
  // the heads' colour scale: one bar for the three maps.
  const auto shownOf = [&](const Eigen::MatrixXd& values) -> Eigen::MatrixXd {
    return patching ? maps.normalised(values) : Eigen::MatrixXd(values.array() - maps.clean);
  };
  Eigen::MatrixXd parts(layers, 2);
  parts << shownOf(maps.layers), shownOf(maps.mlp);
  const Eigen::MatrixXd residual = patching ? shownOf(maps.residual) : Eigen::MatrixXd();
  double m = 0;
  for (const Eigen::MatrixXd* values : std::initializer_list<const Eigen::MatrixXd*>{&shown, &parts, &residual})
    for (Eigen::Index k = 0; k < values->size(); ++k)
      if (std::isfinite(values->data()[k])) m = std::max(m, std::abs(values->data()[k]));
  const float bar_max = drawDivergingScale(m);
  LayerHeadMap map;
  map.id = "findheads", map.layers = layers, map.heads = heads;
  map.value = [&](int l, int h) -> std::optional<double> {
    if (!std::isfinite(shown(l, h))) return std::nullopt;  // clean == corrupt: nothing to normalise by
    return shown(l, h);
  };
  map.colors = ColorMap::Diverging;
  map.vmin = -bar_max, map.vmax = bar_max;
  if (s.focused()) map.marked_layer = s.layer, map.marked_head = s.focus_head;
  map.tooltip = [&](int l, int h) {
    return formatted("layer %d, head %d\n%s %.4f (%s)\nclick: open its map", l + 1, h + 1, metric.c_str(),
                     maps.heads(l, h), patching ? formatted("normalised %+.3f", shown(l, h)).c_str()
                                                : formatted("%+.4f", shown(l, h)).c_str());
  };
  map.title = s.title() + ": " + title;
  map.scale_label = patching ? "normalised metric" : "change of the metric";
  map.number_name = patching ? "normalised" : "change";
  rememberShown(find, map);
  if (const auto cell = drawLayerHeadMap(map)) openHeadMap(run, s, cell->first, cell->second);
  drawStrongestHeads(run, s, map, "%+.3f", true);
  drawPartMap("each layer's attention (every head at once) and MLP", "findheads.parts", parts, layers,
              [](int c) { return std::string(c == 0 ? "attn" : "MLP"); },
              [&](int l, int c) { return c == 0 ? maps.layers(l, 0) : maps.mlp(l, 0); }, metric, patching, bar_max);
  if (patching) {
    const std::vector<std::string>& tokens = s.labels();
    drawPartMap("the residual stream entering each layer, at each position", "findheads.residual", residual, layers,
                [&](int c) {
                  const std::string& t = c < static_cast<int>(tokens.size()) ? tokens[static_cast<std::size_t>(c)] : "";
                  return t.size() > 6 ? t.substr(0, 5) + "~" : t;
                },
                [&](int l, int c) { return maps.residual(l, c); }, metric, patching, bar_max);
  }
}

}  // namespace attnscope::app
