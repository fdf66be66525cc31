// Find heads' composition map: pick a head (the writer) and see, for every head of every later layer, how much
// its query, key or value reads what the writer writes (Elhage et al. 2021's composition score, from the weights
// alone: ModelSession::composition, head_finding.h's compositionScores), and the model's strongest pairs. Scores
// lie in 0..1 but are small: two independent random matrices score about b = 1 / sqrt(d_model) (for A, M with one
// of them rotation-invariant, E ||A M||^2 = ||A||^2 ||M||^2 / d_model), so every head of a random model scores
// ~b. By default the colours are centred on b: white at b, blue below it (noise), red above it up to the larger
// of the top score and 2b; the bar and the tooltips say b. Or viridis from 0 to the largest shown. Heads not
// after the writer have no score (masked grey).
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "window/subject/model_session.h"
#include "window/view_state.h"
#include "window/runviews/find_heads.h"
#include "window/runviews/layer_head_map.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

void drawCompositionMap(FindHeadsState& find, ModelViewState& run, ModelSession& s, int mode) {
  static constexpr const char* kReads[] = {"query", "key", "value"};
  const char* reads = kReads[std::clamp(mode, 0, 2)];
  if (!s.checkpoint()) {
    textWrappedAtSpaces("Composition is read from a checkpoint's weights: a saved tensor holds maps only.");
    probeItem("findheads.unavailable");
    return;
  }
  const ModelSession::CompositionResult* result = s.composition();
  if (!result) {
    // Some 3e11 multiply-adds for 448 heads of d = 1024 (about 20 s on two cores): say how far it is.
    const int percent = static_cast<int>(100.0f * s.compositionDone());
    ImGui::TextDisabled("composing every pair of heads... %d%%", percent);
    probeItem("findheads.pending");
    probeNote("findheads.pending.percent", std::to_string(percent));
    return;
  }
  if (!result->error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
    textWrappedAtSpaces("Composition: " + result->error);
    ImGui::PopStyleColor();
    probeItem("findheads.error");
    return;
  }
  const model::Composition& c = result->scores;
  const std::vector<double>& scores = mode == 0 ? c.q : mode == 1 ? c.k : c.v;
  if (find.comp_layer < 0 || find.comp_head < 0)  // the head on show, else the first
    find.comp_layer = s.focused() ? s.layer : 0, find.comp_head = s.focused() ? s.focus_head : 0;
  const int la = std::clamp(find.comp_layer, 0, c.n_layer - 1), ha = std::clamp(find.comp_head, 0, c.n_head - 1);
  find.comp_layer = la, find.comp_head = ha;

  double top = 0;
  for (int lb = la + 1; lb < c.n_layer; ++lb)
    for (int hb = 0; hb < c.n_head; ++hb) top = std::max(top, c.at(scores, la, ha, lb, hb));
  textWrappedAtSpaces(
      formatted("What later heads read from layer %d, head %d through their %s (click a head to "
                "pick it instead):",
                la + 1, ha + 1, reads));
  probeItem("findheads.writer");
  probeNote("findheads.writer.head", formatted("%d %d", la, ha));
  const float font = ImGui::GetFontSize();
  const float vmax = top > 0 ? static_cast<float>(top) : 1.0f;
  const int d_model = s.checkpoint()->architecture().hidden;
  const double baseline = d_model > 0 ? 1.0 / std::sqrt(static_cast<double>(d_model)) : 0.0;
  const bool centred = find.comp_baseline && baseline > 0;
  ImGui::Checkbox("centre the colours on the random baseline", &find.comp_baseline);
  probeItem("findheads.baseline");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Two random matrices score about 1/sqrt(d_model) = %.3f: white there, blue below, red above",
                      baseline);
  // Centred: the score's place on a diverging bar, 0 -> 0 (blue), b -> 0.5 (white), upper -> 1 (red), linear on
  // each side; upper = max(top, 2b), so that a score just over b is not drawn as strong.
  const double upper = std::max(top, 2 * baseline);
  const auto place = [&](double v) { return v <= baseline ? 0.5 * v / baseline : 0.5 + 0.5 * (v - baseline) / (upper - baseline); };
  const ImVec2 bar0 = ImGui::GetCursorScreenPos();
  const float bar_w = std::min(ImGui::GetContentRegionAvail().x, 12 * font);
  // The centred bar in scores: 0, the baseline in the middle (white), the top; the exported figure's bar too.
  const std::array<std::string, 3> centred_labels = {"0", formatted("random %.3g", baseline), formatted("%.3g", upper)};
  if (centred) {
    drawScaleBar(ImGui::GetWindowDrawList(), bar0, bar_w, 0.6f * font, ColorMap::Diverging, centred_labels);
    probeNote("findheads.baseline", formatted("%.6g", baseline));
    probeNote("findheads.upper", formatted("%.6g", upper));
  } else {
    drawScaleBar(ImGui::GetWindowDrawList(), bar0, bar_w, 0.6f * font, ColorMap::Viridis, 0.0f, vmax);
  }
  ImGui::Dummy(ImVec2(1, 1.9f * ImGui::GetTextLineHeight()));
  probeNote("findheads.vmax", formatted("%.6g", vmax));

  LayerHeadMap map;
  map.id = "findheads", map.layers = c.n_layer, map.heads = c.n_head;
  map.value = [&](int l, int h) -> std::optional<double> {
    if (l <= la) return std::nullopt;
    return c.at(scores, la, ha, l, h);
  };
  if (centred) map.colors = ColorMap::Diverging, map.place = place;
  map.vmax = centred ? 1.0f : vmax;
  map.marked_layer = la, map.marked_head = ha;
  map.tooltip = [&](int l, int h) {
    if (l <= la)
      return formatted(
          "layer %d, head %d: not after layer %d, so it cannot read it\nclick: show what later heads "
          "read from this head",
          l + 1, h + 1, la + 1);
    const double v = c.at(scores, la, ha, l, h);
    return formatted(
        "layer %d, head %d reads layer %d, head %d\nthrough its %s: %.3f, %.1fx the random baseline %.3f "
        "(1/sqrt(%d))\nclick: show what later heads read from this head",
        l + 1, h + 1, la + 1, ha + 1, reads, v, baseline > 0 ? v / baseline : 0.0, baseline, d_model);
  };
  map.title = formatted("%s: what later heads read from layer %d, head %d through their %s (composition)",
                        s.title().c_str(), la + 1, ha + 1, reads);
  map.scale_label = centred ? "composition score (white: the random baseline)" : "composition score";
  map.number_name = "composition";
  if (centred) map.bar_labels.assign(centred_labels.begin(), centred_labels.end());
  rememberShown(find, map);
  if (const auto cell = drawLayerHeadMap(map)) find.comp_layer = cell->first, find.comp_head = cell->second;
  if (la == c.n_layer - 1) {
    textWrappedAtSpaces("Layer " + std::to_string(la + 1) +
                        " is the last: no later head reads it. Pick a head of an earlier layer.");
  }
  const std::string open = formatted("Open layer %d, head %d's map", la + 1, ha + 1);
  if (ImGui::SmallButton(open.c_str())) openHeadMap(run, s, la, ha);
  probeItem("findheads.open_writer");

  // The model's strongest pairs for this mode; a click picks the writer.
  const std::vector<ModelSession::HeadPair>& pairs =
      result->strongest[static_cast<std::size_t>(std::clamp(mode, 0, 2))];
  if (pairs.empty()) return;
  std::vector<std::string> texts;
  for (const ModelSession::HeadPair& p : pairs)
    texts.push_back(formatted("L%d H%d -> L%d H%d: %.3f", p.la + 1, p.ha + 1, p.lb + 1, p.hb + 1, p.score));
  ImGui::TextDisabled("strongest pairs:");
  if (const std::optional<int> k = drawRankedButtons("findheads", texts)) {
    const ModelSession::HeadPair& p = pairs[static_cast<std::size_t>(*k)];
    find.comp_layer = p.la, find.comp_head = p.ha;
  }
}

}  // namespace attnscope::app
