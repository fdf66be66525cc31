// The token view (as BertViz and CircuitsVis show it): one token of the subject, picked by a click in the token
// strip or the token list, and its attention in the shown layer as coloured text over the whole sequence: from
// it (its query row: where it reads) or to it (its key column: who reads it), for one head or the mean of the
// layer's heads. Each token's background is viridis(weight / the largest shown); keys a causal query cannot
// see are grey; a hover gives the numbers.
#include <imgui.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/compute/tiles.h"
#include "attnscope/export/colormap.h"
#include "window/maps/map_sources.h"
#include "window/subject/model_session.h"
#include "window/runviews/runviews.h"
#include "window/runviews/token_view.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

TokenText tokenViewText(const model::ForwardResult& forward, const std::vector<std::string>& labels,
                        const std::string& subject, int layer, const TokenViewState& state,
                        const MapWeighting& weighting) {
  const TokenViewValues v = tokenViewValues(forward, layer, state, weighting);
  TokenText t;
  const std::string heads = state.head < 0 ? "mean of " + std::to_string(forward.layout.n_head) + " heads"
                                           : "head " + std::to_string(state.head + 1);
  t.title = subject + " layer " + std::to_string(layer + 1) + ", " + heads + ": attention " +
            (state.to_it ? "to" : "from") + " token " + std::to_string(state.token) + " '" +
            axisLabel(labels[static_cast<std::size_t>(state.token)]) + "'" +
            (weighting.on ? ", weights x value norms" : "");
  t.scale_label = weighting.on ? "weight x value norm / largest norm" : "attention weight";
  t.value_name = weighting.on ? "weight_x_value_norm" : "weight";
  t.tokens = labels;
  t.values.assign(v.w.begin(), v.w.end());
  t.masked = v.masked;
  t.picked = state.token;
  return t;
}

void drawTokenView(TokenViewState& tokens, bool value_norms, ModelSession& s) {
  sectionHeader("Token view");
  const model::ForwardResult& f = s.forward();
  const std::vector<std::string>& labels = s.labels();
  const int n = f.n;
  if (tokens.token < 0 || tokens.token >= n) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    textWrappedAtSpaces("Click a token (in the strip over the grid, or below) to see its attention as text.");
    ImGui::PopStyleColor();
    return;
  }
  const int token = tokens.token, heads = f.layout.n_head;
  tokens.head = std::clamp(tokens.head, -1, heads - 1);
  textWrappedAtSpaces(formatted("token %d '%s', layer %d", token,
                                axisLabel(labels[static_cast<std::size_t>(token)]).c_str(), s.layer + 1));
  probeNote("tokenview.token", std::to_string(token));
  ImGui::RadioButton("from it (where it reads)", &tokens.to_it, 0);
  probeItem("tokenview.from");
  ImGui::SameLine();
  ImGui::RadioButton("to it (who reads it)", &tokens.to_it, 1);
  probeItem("tokenview.to");
  const std::string shown_head = tokens.head < 0 ? "mean of the layer's " + std::to_string(heads) + " heads"
                                                     : "head " + std::to_string(tokens.head + 1);
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, 16 * ImGui::GetFontSize()));
  if (ImGui::BeginCombo("##token_head", shown_head.c_str())) {
    if (ImGui::Selectable("mean of the layer's heads", tokens.head < 0)) tokens.head = -1;
    for (int h = 0; h < heads; ++h)
      if (ImGui::Selectable(("head " + std::to_string(h + 1)).c_str(), h == tokens.head)) tokens.head = h;
    ImGui::EndCombo();
  }
  probeItem("tokenview.head");

  // Computed off the UI thread when what it shows changes (ModelSession::tokenAttention): a capture's layer is read
  // and its heads' row statistics worked out there, seconds at 128k tokens. Until the new numbers land the last
  // ones stay on show, with a line saying so (a checkpoint's land within a frame or two).
  // Value norms weigh it as they weigh the grid (a checkpoint's or a capture's; a saved tensor has none).
  const bool weighted = value_norms && s.hasValueNorms();
  TokenViewValues& last = s.token_view_shown;  // this subject's last numbers landed, drawn while newer ones compute
  if (const TokenViewValues* landed = s.tokenAttention(s.layer, tokens, weighted)) last = *landed;
  if (s.tokenAttentionPending()) {
    ImGui::TextDisabled("computing the token's attention in layer %d...", s.layer + 1);
    probeItem("tokenview.pending");
  }
  if (!last.error.empty()) {
    errorText(last.error);
    probeItem("tokenview.error");
    return;
  }
  if (last.w.size() != static_cast<std::size_t>(n)) return;  // nothing of this subject has landed yet
  const std::vector<double>& w = last.w;
  const std::vector<char>& masked = last.masked;
  double top = 0;
  for (int k = 0; k < n; ++k)
    if (!masked[static_cast<std::size_t>(k)]) top = std::max(top, w[static_cast<std::size_t>(k)]);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  textWrappedAtSpaces(
      formatted("colour: %s / the largest shown (%.3f); grey: masked (a causal query sees no later key)",
                weighted ? "weight x value norm / the layer's largest norm" : "weight", top));
  probeNote("tokenview.colour", weighted ? "weighted" : "weights");
  ImGui::PopStyleColor();
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  const float pad = 3;
  for (int k = 0; k < n; ++k) {
    const std::string text = axisLabel(labels[static_cast<std::size_t>(k)]);
    const ImVec2 size = ImGui::CalcTextSize(text.c_str());
    const ImVec2 chip(size.x + 2 * pad, size.y + 2);
    // Beside the last chip while it fits, else on the next line (decided before SameLine).
    if (k > 0 && ImGui::GetItemRectMax().x + 2 + chip.x <= right) ImGui::SameLine(0, 2);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const bool hidden = masked[static_cast<std::size_t>(k)] != 0;
    const float t = top > 0 ? static_cast<float>(w[static_cast<std::size_t>(k)] / top) : 0.0f;
    const Rgb8 c = hidden ? kMaskedColor : colorAt(ColorMap::Viridis, colorMapParameter(t, 0.0f, 1.0f));
    list->AddRectFilled(p, ImVec2(p.x + chip.x, p.y + chip.y), IM_COL32(c.r, c.g, c.b, 255));
    const bool dark = 0.299f * c.r + 0.587f * c.g + 0.114f * c.b < 140;
    list->AddText(ImVec2(p.x + pad, p.y + 1), dark ? IM_COL32(255, 255, 255, 255) : IM_COL32(0, 0, 0, 255),
                  text.c_str());
    if (k == token)
      list->AddRect(ImVec2(p.x - 1, p.y - 1), ImVec2(p.x + chip.x + 1, p.y + chip.y + 1), IM_COL32(255, 60, 60, 255));
    ImGui::InvisibleButton(("##tv" + std::to_string(k)).c_str(), chip);
    probeItem("tokenview.chip." + std::to_string(k));
    if (ImGui::IsItemHovered()) {
      if (hidden)
        ImGui::SetTooltip("token %d '%s': not visible (a causal query sees no later key)", k,
                          labels[static_cast<std::size_t>(k)].c_str());
      else
        ImGui::SetTooltip(
            "token %d '%s'\n%s %.4f (%s)\n%s", k, labels[static_cast<std::size_t>(k)].c_str(),
            weighted ? "weight x value norm / largest" : "weight", w[static_cast<std::size_t>(k)], shown_head.c_str(),
            tokens.to_it ? "how much it reads the picked token" : "how much the picked token reads it");
    }
    if (ImGui::IsItemClicked()) tokens.token = k;
  }
}

}  // namespace attnscope::app
