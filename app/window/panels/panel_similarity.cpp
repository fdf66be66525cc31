// Similarity panel: the heads x heads matrix (cosine of flattened weight maps, or Jensen-Shannon divergence),
// optionally in UPGMA cluster order with the dendrogram beside it (the heads grid follows the same order);
// hover names the pair, a click shows the two heads side by side in the heads panel. Below, a table of per-head
// statistics, head-type scores and importance, sortable by any column.
#include <algorithm>
#include <cmath>
#include <string>

#include <numeric>
#include <utility>

#include "attnscope/export/colormap.h"
#include "window/model/model_session.h"
#include "window/model/subject.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// The dendrogram in [x0, x1) beside rows of `cell` pixels from y0: leaves at x1 (height 0), the root's height
// at x0; each merge a vertical line between its children and a horizontal line to each.
void drawDendrogram(ImDrawList* list, const Clustering& c, float x0, float x1, float y0, float cell) {
  const int h = static_cast<int>(c.order.size());
  double top = 0;
  for (const ClusterMerge& m : c.merges) top = std::max(top, m.height);
  if (top <= 0) top = 1;
  std::vector<float> nx(static_cast<std::size_t>(2 * h), x1), ny(static_cast<std::size_t>(2 * h), 0);
  for (int k = 0; k < h; ++k)
    ny[static_cast<std::size_t>(c.order[static_cast<std::size_t>(k)])] = y0 + (k + 0.5f) * cell;
  const ImU32 color = ImGui::GetColorU32(ImGuiCol_Text);
  for (std::size_t k = 0; k < c.merges.size(); ++k) {
    const ClusterMerge& m = c.merges[k];
    const std::size_t a = static_cast<std::size_t>(m.a), b = static_cast<std::size_t>(m.b), id = h + k;
    const float x = x1 - static_cast<float>(m.height / top) * (x1 - x0);
    list->AddLine(ImVec2(x, ny[a]), ImVec2(x, ny[b]), color);
    list->AddLine(ImVec2(x, ny[a]), ImVec2(nx[a], ny[a]), color);
    list->AddLine(ImVec2(x, ny[b]), ImVec2(nx[b], ny[b]), color);
    nx[id] = x;
    ny[id] = (ny[a] + ny[b]) / 2;
  }
}

// Per head (one entry each): statistics, head-type scores, and the importance where there is one (a scene's; a
// model's layer has none: no output to ablate).
void statsTable(const std::vector<HeadStats>& stats, const std::vector<HeadTypeScores>& types,
                const std::vector<double>* importance) {
  const int h = static_cast<int>(stats.size());
  const std::vector<double> no_importance;
  const std::vector<double>& imp = importance ? *importance : no_importance;
  const std::vector<std::string>& names = headTypeScoreNames();
  // Columns: head, label, entropy, max w, mean dist, the six scores, importance.
  const char* score_titles[] = {"prev", "cur", "first", "local", "induct", "dup"};
  const int columns = 5 + 6 + (importance ? 1 : 0);
  auto value = [&](int head, int column) -> double {
    const std::size_t a = static_cast<std::size_t>(head);
    const HeadStats& s = stats[a];
    switch (column) {
      case 0:
        return head;
      case 1:
        return 0;
      case 2:
        return s.entropy;
      case 3:
        return s.max_weight;
      case 4:
        return s.mean_distance;
      case 11:
        return imp[a];
      default:
        return headTypeScore(types[a], names[static_cast<std::size_t>(column - 5)]).value_or(-1.0);
    }
  };
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Sortable | ImGuiTableFlags_ScrollX |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit |
                                ImGuiTableFlags_BordersInnerV;
  // Every column as wide as its widest value or title, so numbers are never cut; the head column stays put
  // when the table scrolls sideways. Height: every row, up to what is left of the pane.
  const float row_h = ImGui::GetTextLineHeightWithSpacing() + 2 * ImGui::GetStyle().CellPadding.y;
  const float table_h = std::min(std::max(ImGui::GetContentRegionAvail().y, 6 * row_h),
                                 static_cast<float>(h + 1) * row_h + ImGui::GetStyle().ScrollbarSize + 4);
  if (!ImGui::BeginTable("stats", columns, flags, ImVec2(0, table_h))) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  const float number_w = ImGui::CalcTextSize("0.000").x;
  const float type_w = ImGui::CalcTextSize("duplicate-token").x;
  auto setupColumn = [&](const char* title, ImGuiTableColumnFlags extra, float content_w) {
    ImGui::TableSetupColumn(title, ImGuiTableColumnFlags_WidthFixed | extra,
                            std::max(content_w, ImGui::CalcTextSize(title).x + ImGui::GetFontSize()));
  };
  setupColumn("head", ImGuiTableColumnFlags_DefaultSort, ImGui::CalcTextSize("00").x);
  setupColumn("type", ImGuiTableColumnFlags_NoSort, type_w);
  setupColumn("entropy", 0, number_w);
  setupColumn("max w", 0, number_w);
  setupColumn("dist", 0, number_w);
  for (const char* t : score_titles) setupColumn(t, ImGuiTableColumnFlags_PreferSortDescending, number_w);
  if (importance) setupColumn("importance", ImGuiTableColumnFlags_PreferSortDescending, number_w);
  const char* meanings[] = {"head, counted from 1",
                            "the head-type label: the highest score when at least 0.5; mixed when none is",
                            "mean entropy of a query row's weights (nats)",
                            "largest weight",
                            "mean |query - key| distance, weighted",
                            "previous-token score: mean weight on key i - 1",
                            "current-token score: mean weight on key i",
                            "first-token score: mean weight on key 0",
                            "local score: mean weight within the window around i",
                            "induction score: weight on the token after an earlier copy of the query's token",
                            "duplicate-token score: weight on earlier copies of the query's token",
                            "output change (L2) with this head zero-ablated"};
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  for (int c = 0; c < columns; ++c) {
    ImGui::TableSetColumnIndex(c);
    ImGui::TableHeader(ImGui::TableGetColumnName(c));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", meanings[c]);
    probeItem("similarity.column." + std::to_string(c));
  }
  std::vector<int> rows(static_cast<std::size_t>(h));
  for (int a = 0; a < h; ++a) rows[static_cast<std::size_t>(a)] = a;
  if (const ImGuiTableSortSpecs* sort = ImGui::TableGetSortSpecs(); sort && sort->SpecsCount > 0) {
    const int column = sort->Specs[0].ColumnIndex;
    const bool ascending = sort->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
    std::stable_sort(rows.begin(), rows.end(), [&](int a, int b) {
      return ascending ? value(a, column) < value(b, column) : value(a, column) > value(b, column);
    });
  }
  for (int a : rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%d", a + 1);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(headTypeCell(headTypeLabel(types[static_cast<std::size_t>(a)])));
    for (int c = 2; c < columns; ++c) {
      ImGui::TableNextColumn();
      const double v = value(a, c);
      if (c >= 5 && c < 11 && v < 0)
        ImGui::TextDisabled("-");  // no query row has such a key (no repeated token, say)
      else
        ImGui::Text(c == 4 ? "%.2f" : "%.3f", v);
    }
  }
  ImGui::EndTable();
}

// The (h, h) matrix `m` (cosine on the diverging map over -1..1, else Jensen-Shannon viridis over 0..ln 2) in
// `order`, with the dendrogram of `clustering` beside it when given; hover names the pair. Returns the pair
// clicked, else (-1, -1).
std::pair<int, int> similarityMatrix(const Matrix& m, bool cosine, const std::vector<int>& order,
                                     const Clustering* clustering, const char* click_hint) {
  const int h = static_cast<int>(m.rows());
  if (h == 0) return {-1, -1};
  const bool dendrogram = clustering && !clustering->order.empty() && h > 1;
  // The export's colour maps (export_layout.h): cosine on the diverging map over -1..1, Jensen-Shannon viridis
  // over 0..ln 2, with the same scale as a bar above the matrix.
  const ColorMap map = cosine ? ColorMap::Diverging : ColorMap::Viridis;
  const float vmin = cosine ? -1.0f : 0.0f, vmax = cosine ? 1.0f : static_cast<float>(std::log(2.0));
  drawScaleBar(ImGui::GetWindowDrawList(), ImGui::GetCursorScreenPos(),
               std::min(ImGui::GetContentRegionAvail().x, 14 * ImGui::GetFontSize()), 0.6f * ImGui::GetFontSize(), map,
               vmin, vmax);
  ImGui::Dummy(ImVec2(1, 1.9f * ImGui::GetTextLineHeight()));
  probeRect("similarity.colorbar", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
  const float dendro_w = dendrogram ? ImGui::GetFontSize() * 2.5f : 0;
  const float avail = ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 2 - dendro_w;
  const float cell = std::max(6.0f, std::min(avail / static_cast<float>(h), ImGui::GetFontSize() * 3.0f));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 p0(origin.x + dendro_w + ImGui::GetFontSize() * 1.8f, origin.y + ImGui::GetTextLineHeight());
  ImDrawList* list = ImGui::GetWindowDrawList();
  if (dendrogram) drawDendrogram(list, *clustering, origin.x, origin.x + dendro_w - 4, p0.y, cell);
  // Values in the cells, in either order: "0.93" where it fits, else ".93" (cosine of weights is 0..1).
  const bool values = cell > ImGui::CalcTextSize(".00").x + 2;
  const bool leading_zero = cell > ImGui::CalcTextSize("-0.00").x + 2;
  for (int ra = 0; ra < h; ++ra) {
    const int a = order[static_cast<std::size_t>(ra)];
    if (cell > ImGui::GetFontSize() || ra % 4 == 0) {
      const std::string label = std::to_string(a + 1);
      list->AddText(ImVec2(origin.x + dendro_w, p0.y + (ra + 0.5f) * cell - ImGui::GetTextLineHeight() * 0.5f),
                    ImGui::GetColorU32(ImGuiCol_TextDisabled), label.c_str());
      list->AddText(ImVec2(p0.x + (ra + 0.5f) * cell - ImGui::CalcTextSize(label.c_str()).x * 0.5f, origin.y),
                    ImGui::GetColorU32(ImGuiCol_TextDisabled), label.c_str());
    }
    for (int rb = 0; rb < h; ++rb) {
      const int b = order[static_cast<std::size_t>(rb)];
      const float v = m(a, b);
      const Rgb8 c = colorAt(map, colorMapParameter(v, vmin, vmax));
      const ImVec2 c0(p0.x + rb * cell, p0.y + ra * cell);
      list->AddRectFilled(c0, ImVec2(c0.x + cell - 1, c0.y + cell - 1), IM_COL32(c.r, c.g, c.b, 255));
      if (values) {
        char text[16];
        std::snprintf(text, sizeof text, "%.2f", v);
        const char* shown = !leading_zero && text[0] == '0' ? text + 1 : text;
        const bool dark = 0.299f * c.r + 0.587f * c.g + 0.114f * c.b < 140;
        list->AddText(ImVec2(c0.x + (cell - ImGui::CalcTextSize(shown).x) * 0.5f,
                             c0.y + (cell - ImGui::GetTextLineHeight()) * 0.5f),
                      dark ? IM_COL32(255, 255, 255, 255) : IM_COL32(0, 0, 0, 255), shown);
      }
    }
  }
  ImGui::SetCursorScreenPos(p0);
  const bool clicked = ImGui::InvisibleButton("similarity", ImVec2(cell * h, cell * h));
  probeRect("similarity.map", p0, ImVec2(p0.x + cell * h, p0.y + cell * h));
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int a = order[static_cast<std::size_t>(std::clamp(static_cast<int>((mouse.y - p0.y) / cell), 0, h - 1))];
    const int b = order[static_cast<std::size_t>(std::clamp(static_cast<int>((mouse.x - p0.x) / cell), 0, h - 1))];
    ImGui::SetTooltip("Head %d vs head %d\n%s %.4f\n%s", a + 1, b + 1, cosine ? "cosine" : "JS divergence", m(a, b),
                      click_hint);
    if (clicked) return {a, b};
  }
  return {-1, -1};
}

// The metric and the order, shared by a scene's and a model's matrix.
void metricChoice(ViewState& view) {
  ImGui::RadioButton("cosine", &view.metric, 0);
  ImGui::SameLine();
  ImGui::RadioButton("Jensen-Shannon", &view.metric, 1);
  ImGui::SameLine();
  ImGui::Checkbox("cluster order", &view.cluster_order);
  probeItem("similarity.cluster");
  ImGui::TextDisabled(view.metric == 0 ? "1 = identical attention maps, 0 = no overlap"
                                       : "0 = identical rows; ln 2 = %.3f = disjoint",
                      std::log(2.0));
}

// A checkpoint run's or a tensor's shown layer (ModelSession::layer): its heads' similarity and statistics
// (arrays::analyseTensorLayer, cached per layer). A click opens the first head of the pair full-size.
void modelSimilarity(ViewState& view) {
  ModelSession& s = *view.model;
  if (s.forward().n == 0) {
    textWrappedAtSpaces("The model is still running: its layers' similarity comes when it lands.");
    return;
  }
  const int h = s.layout().n_head;
  const std::string subject =
      formatted("%s, layer %d: its %d heads' maps compared", s.title().c_str(), s.layer + 1, h);
  textWrappedAtSpaces(subject);
  probeNote("similarity.subject", subject);
  metricChoice(view);
  const arrays::TensorLayerAnalysis& a = s.tensorAnalysis(s.layer);
  const bool cosine = view.metric == 0;
  std::vector<int> order(static_cast<std::size_t>(h));
  std::iota(order.begin(), order.end(), 0);
  Clustering clustering;
  if (view.cluster_order && h > 1) {
    clustering = clusterHeads(a.similarity, cosine ? ClusterMetric::Cosine : ClusterMetric::JensenShannon);
    order = clustering.order;
  }
  const std::pair<int, int> clicked = similarityMatrix(cosine ? a.similarity.cosine : a.similarity.js, cosine, order,
                                                       view.cluster_order ? &clustering : nullptr,
                                                       "click: show the first head full-size");
  if (clicked.first >= 0) {
    s.focus_head = clicked.first;
    view.model_zoom = CellView{0, 0, static_cast<float>(s.forward().n), static_cast<float>(s.forward().n)};
  }
  ImGui::Spacing();
  textWrappedAtSpaces("Per head of this layer: statistics and head-type scores. Rows with a single allowed key are "
                      "left out. Hover a column's title for what it means; click it to sort.");
  statsTable(a.stats, a.scores, nullptr);
}

}  // namespace

void drawSimilarityPanel(AppState& state, ViewState& view) {
  if (subjectKind(view) != SubjectKind::Scene) {  // the shown layer of the model or tensor on show
    modelSimilarity(view);
    return;
  }
  if (longScene(state)) {  // O(h^2 n^2): minutes at 32k tokens; the CLI streams it
    longSceneNote(state, "Head similarity, statistics, head types and importance");
    return;
  }
  metricChoice(view);
  const bool cosine = view.metric == 0;
  if (state.analysisPending()) ImGui::TextDisabled("(updates when the edits pause)");
  const Matrix& m = cosine ? state.result().similarity.cosine : state.result().similarity.js;
  if (m.rows() == 0) return;
  Clustering clustering;
  const std::vector<int> order = headOrder(state, view, &clustering);
  const std::pair<int, int> clicked = similarityMatrix(m, cosine, order, view.cluster_order ? &clustering : nullptr,
                                                       "click: show them side by side");
  if (clicked.first >= 0) {
    view.compare_a = clicked.first;
    view.compare_b = clicked.second;
    view.focus_head = -1;
  }
  ImGui::Spacing();
  ImGui::TextWrapped(
      "Per head: statistics, head-type scores and importance (output change with the head "
      "zero-ablated). Rows with a single allowed key (query 0 under a causal mask) are left out. "
      "Hover a column's title for what it means; click it to sort.");
  statsTable(state.result().stats, state.headTypes(), &state.importance());
}

}  // namespace attnscope::app
