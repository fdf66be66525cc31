// "Find heads": one layers x heads map of the subject (the first plot of TransformerLens's head detector and
// ARENA's induction map), chosen in a list: a head-type score for every head, what later heads read from a picked
// head (composition, composition_map.cpp), or each head's share of a predicted logit (logit_map.cpp). The
// head-type scores come off the UI thread (ModelSession::headScores), viridis over 0..1, undefined scores in the
// masked grey; a click on a cell or a listed head opens that head's map in the centre.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnscope/model/head_finding.h"
#include "window/subject/model_session.h"
#include "window/runviews/runviews.h"
#include "window/runviews/layer_head_map.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

constexpr int kListed = 5;  // the strongest heads listed under the map

// The list's entries: the head-type scores, then composition through the query, key and value, then attribution.
std::vector<std::string> mapChoices() {
  std::vector<std::string> choices;
  for (const std::string& name : headTypeScoreNames()) choices.emplace_back(headTypeText(name));
  choices.insert(choices.end(),
                 {"composition: query", "composition: key", "composition: value", "direct logit attribution",
                  "which heads matter"});
  return choices;
}

void drawScoreMap(ViewState& view, ModelSession& s, const std::string& name) {
  const ModelSession::HeadScores* scores = s.headScores();
  if (!scores) {
    ImGui::TextDisabled("scoring every head...");
    probeItem("findheads.pending");
    return;
  }
  const int layers = static_cast<int>(scores->size()), heads = layers > 0 ? static_cast<int>((*scores)[0].size()) : 0;
  if (layers == 0 || heads == 0) return;
  auto score = [&](int l, int h) {
    return headTypeScore((*scores)[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)], name);
  };
  const float font = ImGui::GetFontSize();
  drawScaleBar(ImGui::GetWindowDrawList(), ImGui::GetCursorScreenPos(),
               std::min(ImGui::GetContentRegionAvail().x, 12 * font), 0.6f * font, ColorMap::Viridis, 0.0f, 1.0f);
  ImGui::Dummy(ImVec2(1, 1.9f * ImGui::GetTextLineHeight()));
  LayerHeadMap map;
  map.id = "findheads", map.layers = layers, map.heads = heads, map.value = score;
  if (s.focused()) map.marked_layer = s.layer, map.marked_head = s.focus_head;
  map.tooltip = [&](int l, int h) {
    if (const std::optional<double> v = score(l, h))
      return formatted("layer %d, head %d\n%s score %.3f\nclick: open its map", l + 1, h + 1, headTypeText(name), *v);
    return formatted("layer %d, head %d\nno %s score: no query row has such a key\nclick: open its map", l + 1, h + 1,
                     headTypeText(name));
  };
  map.title = s.title() + " " + headTypeText(name) + " score";
  map.scale_label = std::string(headTypeText(name)) + " score";
  map.number_name = "score";
  rememberShown(view.find, map);
  if (const auto cell = drawLayerHeadMap(map)) openHeadMap(view.run, s, cell->first, cell->second);

  // The strongest heads, in words, each a click away.
  if (!drawStrongestHeads(view.run, s, map, "%.3f", false))
    textWrappedAtSpaces(std::string("No head has a ") + headTypeText(name) +
                        " score on this text: no token repeats. Try repeated random tokens.");
}

}  // namespace

void openHeadMap(ModelViewState& run, ModelSession& s, int layer, int head) {
  s.layer = layer;
  s.focus_head = head;
  s.shown = true;
  run.rollout = 0;  // the heads, not the rollout
  run.zoom = CellView{0, 0, static_cast<float>(s.forward().n), static_cast<float>(s.forward().n)};
}

bool drawStrongestHeads(ModelViewState& run, ModelSession& s, const LayerHeadMap& map, const char* value_format,
                        bool by_magnitude) {
  std::vector<std::pair<double, int>> ranked;  // (value, layer * heads + head)
  for (int l = 0; l < map.layers; ++l)
    for (int h = 0; h < map.heads; ++h)
      if (const std::optional<double> v = map.value(l, h)) ranked.emplace_back(*v, l * map.heads + h);
  const auto key = [by_magnitude](double v) { return by_magnitude ? std::abs(v) : v; };
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const auto& x, const auto& y) { return key(x.first) > key(y.first); });
  if (ranked.empty()) return false;
  ranked.resize(std::min<std::size_t>(ranked.size(), kListed));
  std::vector<std::string> texts;
  for (const auto& [v, index] : ranked)
    texts.push_back(formatted("layer %d, head %d: ", index / map.heads + 1, index % map.heads + 1) +
                    formatted(value_format, v));
  ImGui::TextDisabled("strongest:");
  if (const std::optional<int> k = drawRankedButtons(map.id, texts)) {
    const int index = ranked[static_cast<std::size_t>(*k)].second;
    openHeadMap(run, s, index / map.heads, index % map.heads);
  }
  return true;
}

void drawHeadScoresMap(ViewState& view, ModelSession& s) {
  const std::vector<std::string> choices = mapChoices();
  const int scores = static_cast<int>(headTypeScoreNames().size());
  sectionHeader("Find heads");
  view.find.score = std::clamp(view.find.score, 0, static_cast<int>(choices.size()) - 1);
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("direct logit attribution").x + 3 * ImGui::GetFontSize());
  // Tall enough for every choice: a list that scrolls hides the last ones below its edge.
  if (ImGui::BeginCombo("map", choices[static_cast<std::size_t>(view.find.score)].c_str(),
                        ImGuiComboFlags_HeightLarge)) {
    // Logit attribution is a decoder's: offered greyed out, with the reason on hover, for an encoder.
    const std::string no_dla = s.checkpoint() ? model::logitAttributionRefusal(*s.checkpoint()) : "";
    for (int k = 0; k < static_cast<int>(choices.size()); ++k) {
      if (k == scores) ImGui::Separator();
      const bool refused = (k == scores + 3 || k == scores + 4) && !no_dla.empty();  // both need a decoder
      if (ImGui::Selectable(choices[static_cast<std::size_t>(k)].c_str(), k == view.find.score,
                            refused ? ImGuiSelectableFlags_Disabled : 0))
        view.find.score = k;
      probeItem("findheads.score." + std::to_string(k));
      if (refused) probeNote("findheads.dla_refused", no_dla);
      if (refused && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", no_dla.c_str());
    }
    ImGui::EndCombo();
  }
  probeItem("findheads.score");
  if (view.find.score < scores)
    drawScoreMap(view, s, headTypeScoreNames()[static_cast<std::size_t>(view.find.score)]);
  else if (view.find.score < scores + 3)
    drawCompositionMap(view.find, view.run, s, view.find.score - scores);
  else if (view.find.score == scores + 3)
    drawLogitAttributionMap(view.find, view.run, s);
  else
    drawPatchingMap(view.find, view.run, s);
}

}  // namespace attnscope::app
