// Find heads' direct logit attribution: each head's share of one token's logit at one position (head_finding.h's
// logitAttribution, the final norm's scale frozen from this forward), as a layers x heads map in diverging colours
// around 0 (blue lowers the logit, red raises it), with the parts the logit adds up from. Position and target are
// typed (defaults: the last position and its top prediction); off the UI thread (ModelSession::logitAttribution).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "attnscope/model/head_finding.h"
#include "window/subject/model_session.h"
#include "window/view_state.h"
#include "window/runviews/find_heads.h"
#include "window/runviews/layer_head_map.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

double total(const std::vector<double>& parts) { return std::accumulate(parts.begin(), parts.end(), 0.0); }

// "logit 12.34 = heads 3.21 + MLPs 7.90 + embedding 1.10 ...": the parts that add up to the logit.
std::string partsText(const model::LogitAttribution& d) {
  double heads = 0;
  for (const std::vector<double>& layer : d.heads) heads += total(layer);
  std::string text =
      formatted("logit %.3f = heads %.3f + MLPs %.3f + embedding %.3f", d.logit, heads, total(d.mlp), d.embedding);
  if (const double b = total(d.attention_bias); b != 0) text += formatted(" + attention output biases %.3f", b);
  if (d.final_bias != 0) text += formatted(" + final norm bias %.3f", d.final_bias);
  return text + formatted(" (their sum %.3f; the rest is float rounding)", d.sum());
}

}  // namespace

void drawLogitAttributionMap(FindHeadsState& find, ModelViewState& run, ModelSession& s) {
  if (!checkpointMapOffered(s, "Logit attribution", &model::logitAttributionRefusal)) return;
  const int n = s.forward().n;
  if (n == 0) return;
  // Positions from 0, as the token list, the token view, the hovers and the docs count them.
  int at = find.dla_position < 0 || find.dla_position >= n ? n - 1 : find.dla_position;
  if (stepperInt("position", "findheads.dla.position", at, 0, n - 1)) find.dla_position = at;
  const std::string token_line =
      formatted("token %d: '%s'", at, axisLabel(s.labels()[static_cast<std::size_t>(at)]).c_str());
  ImGui::TextDisabled("%s", token_line.c_str());
  probeNote("findheads.dla.token", token_line);
  probeItem("findheads.dla.token");
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("target");
  ImGui::SameLine(ImGui::GetFontSize() * 6.5f);
  std::string typed;
  if (committedText("findheads.dla.target", find.dla_target_text, ImGui::GetFontSize() * 8, typed)) {
    std::string why;
    if (const std::optional<int> id = s.targetId(typed, why)) {
      find.dla_target = *id, find.dla_target_text = typed;
      setFieldError("findheads.dla.target", "");
    } else {
      setFieldError("findheads.dla.target", why);
    }
  }
  showFieldError("findheads.dla.target");
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  textWrappedAtSpaces("target: an id or one token; empty: the top prediction");
  ImGui::PopStyleColor();

  const ModelSession::Attribution* a = s.logitAttribution(at, find.dla_target);
  if (!a) {
    ImGui::TextDisabled(at == n - 1 ? "attributing..." : "attributing (a forward traced at this position)...");
    probeItem("findheads.pending");
    return;
  }
  if (!a->error.empty()) {
    errorText(a->error);
    return;
  }
  const model::LogitAttribution& d = a->dla;
  const std::string title = formatted("Each head's direct share of the logit of '%s' (id %d) at token %d:",
                                      axisLabel(s.tokenLabel(d.target)).c_str(), d.target, d.position);
  textWrappedAtSpaces(title);
  probeItem("findheads.dla.title");
  probeNote("findheads.dla.title", title);
  probeNote("findheads.dla", formatted("%d %d", d.position, d.target));
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  textWrappedAtSpaces(partsText(d));
  ImGui::PopStyleColor();
  probeItem("findheads.dla.parts");

  const int layers = static_cast<int>(d.heads.size()), heads = layers > 0 ? static_cast<int>(d.heads[0].size()) : 0;
  auto share = [&](int l, int h) { return d.heads[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)]; };
  double m = 0;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) m = std::max(m, std::abs(share(l, h)));
  const float bar_max = drawDivergingScale(m);
  LayerHeadMap map;
  map.id = "findheads", map.layers = layers, map.heads = heads;
  map.value = [&](int l, int h) -> std::optional<double> { return share(l, h); };
  map.colors = ColorMap::Diverging;
  map.vmin = -bar_max, map.vmax = bar_max;
  if (s.focused()) map.marked_layer = s.layer, map.marked_head = s.focus_head;
  map.tooltip = [&](int l, int h) {
    return formatted("layer %d, head %d\n%+.4f of the logit\nclick: open its map", l + 1, h + 1, share(l, h));
  };
  map.title = formatted("%s: each head's direct share of the logit of %s at position %d", s.title().c_str(),
                        s.tokenLabel(d.target).c_str(), d.position);
  map.scale_label = "share of the logit";
  map.number_name = "logit_share";
  rememberShown(find, map);
  if (const auto cell = drawLayerHeadMap(map)) openHeadMap(run, s, cell->first, cell->second);

  drawStrongestHeads(run, s, map, "%+.3f", true);  // the heads that move it most, either way
}

}  // namespace attnscope::app
