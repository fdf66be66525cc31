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
#include "window/subject/model_session.h"
#include "window/subject/subject.h"
#include "window/lesson/lesson.h"
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

// One column of the statistics table: its title (two short lines at most, so that no title needs a hover to be
// read), what it means (its header's hover) and its group: the head column in every group; the scores by
// position; the scores by token, with the type label; the statistics and importance.
struct StatColumn {
  const char* title;
  const char* meaning;
  int group;  // -1 every group, 0 position scores, 1 token scores and type, 2 statistics
};
constexpr StatColumn kStatColumns[] = {
    {"head", "head, counted from 1", -1},
    {"type", "the head-type label: the highest score when at least 0.5; mixed when none is", 1},
    {"row entropy\n(nats)", kEntropyMeaning, 2},
    {"max\nweight", "largest weight", 2},
    {"mean\ndistance", "mean |query - key| distance, weighted", 2},
    {"previous\ntoken", "previous-token score: mean weight on key i - 1", 0},
    {"current\ntoken", "current-token score: mean weight on key i", 0},
    {"first\ntoken", "first-token score: mean weight on key 0", 0},
    {"local", "local score: mean weight within the window around i", 0},
    {"induction", "induction score: weight on the token after an earlier copy of the query's token", 1},
    {"duplicate\ntoken", "duplicate-token score: weight on earlier copies of the query's token", 1},
    {"importance", "output change (L2) with this head zero-ablated", 2},
};
constexpr const char* kGroupNames[] = {"position scores", "token scores", "statistics"};
constexpr int kImportanceColumn = 11;

// Per head (one entry each): statistics, head-type scores, and the importance where there is one (a scene's; a
// model's layer has none: no output to ablate). Every column is as wide as its widest value or title line. When
// they do not all fit the pane, a choice shows the statistics or the scores (the head column in both), so that
// what is shown fits without scrolling sideways; only a pane too narrow for either scrolls.
void statsTable(ViewState& view, const std::vector<HeadStats>& stats, const std::vector<HeadTypeScores>& types,
                const std::vector<double>* importance) {
  const int h = static_cast<int>(stats.size());
  const std::vector<std::string>& names = headTypeScoreNames();
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
      case kImportanceColumn:
        return (*importance)[a];
      default:
        return headTypeScore(types[a], names[static_cast<std::size_t>(column - 5)]).value_or(-1.0);
    }
  };
  const ImGuiStyle& style = ImGui::GetStyle();
  const float number_w = ImGui::CalcTextSize("0.000").x;
  auto contentWidth = [&](int c) {
    // A title's widest line, and room for the sort arrow beside it (as ImGui's TableHeader reserves it); the
    // values below.
    const float title = ImGui::CalcTextSize(kStatColumns[c].title).x +
                        (c == 1 ? 0.0f : std::floor(0.65f * ImGui::GetFontSize() + style.FramePadding.x));
    const float values = c == 0 ? ImGui::CalcTextSize("00").x : c == 1 ? ImGui::CalcTextSize("duplicate-token").x : number_w;
    return std::max(title, values);
  };
  auto shown = [&](int c, int group) {
    if (c == kImportanceColumn && !importance) return false;
    return group < 0 || kStatColumns[c].group < 0 || kStatColumns[c].group == group;
  };
  auto tableWidth = [&](int group) {
    float w = 0;
    for (int c = 0; c < 12; ++c)
      if (shown(c, group)) w += contentWidth(c) + 2 * style.CellPadding.x + 1;  // + the inner border
    return w;
  };
  const float avail = ImGui::GetContentRegionAvail().x;
  int group = -1;  // every column
  if (tableWidth(-1) > avail) {
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Columns:");
    for (int g = 0; g < 3; ++g) {
      ImGui::SameLine();
      ImGui::RadioButton(kGroupNames[g], &view.similarity.stats_columns, g);
      probeItem(std::string("similarity.columns.") + std::to_string(g));
    }
    group = std::clamp(view.similarity.stats_columns, 0, 2);
  }
  const bool fits = tableWidth(group) <= avail;
  std::vector<int> columns;
  for (int c = 0; c < 12; ++c)
    if (shown(c, group)) columns.push_back(c);
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Sortable | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_BordersInnerV |
                                (fits ? 0 : ImGuiTableFlags_ScrollX);
  // Height: every row, up to what is left of the pane.
  const float header_h = 2 * ImGui::GetTextLineHeight() + 2 * style.CellPadding.y;
  const float row_h = ImGui::GetTextLineHeightWithSpacing() + 2 * style.CellPadding.y;
  const float table_h = std::min(std::max(ImGui::GetContentRegionAvail().y, header_h + 5 * row_h),
                                 header_h + static_cast<float>(h) * row_h + style.ScrollbarSize + 4);
  // One table per group, so that each keeps its own sort.
  const std::string table_id = group < 0 ? std::string("stats") : std::string("stats.") + kGroupNames[group];
  if (!ImGui::BeginTable(table_id.c_str(), static_cast<int>(columns.size()), flags, ImVec2(0, table_h)))
    return;
  ImGui::TableSetupScrollFreeze(1, 1);
  for (int c : columns) {
    const ImGuiTableColumnFlags sort = c == 0   ? ImGuiTableColumnFlags_DefaultSort
                                       : c == 1 ? ImGuiTableColumnFlags_NoSort
                                       : c >= 5 ? ImGuiTableColumnFlags_PreferSortDescending
                                                : ImGuiTableColumnFlags_None;
    ImGui::TableSetupColumn(kStatColumns[c].title, ImGuiTableColumnFlags_WidthFixed | sort, contentWidth(c));
  }
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers, header_h);
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const int c = columns[k];
    ImGui::TableSetColumnIndex(static_cast<int>(k));
    ImGui::TableHeader(kStatColumns[c].title);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kStatColumns[c].meaning);
    probeItem("similarity.column." + std::to_string(c));
  }
  std::vector<int> rows(static_cast<std::size_t>(h));
  std::iota(rows.begin(), rows.end(), 0);
  if (const ImGuiTableSortSpecs* sort = ImGui::TableGetSortSpecs(); sort && sort->SpecsCount > 0) {
    const int column = columns[static_cast<std::size_t>(sort->Specs[0].ColumnIndex)];
    const bool ascending = sort->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
    std::stable_sort(rows.begin(), rows.end(), [&](int a, int b) {
      return ascending ? value(a, column) < value(b, column) : value(a, column) > value(b, column);
    });
  }
  for (int a : rows) {
    ImGui::TableNextRow();
    for (int c : columns) {
      ImGui::TableNextColumn();
      const double v = value(a, c);
      if (c == 0)
        ImGui::Text("%d", a + 1);
      else if (c == 1)
        ImGui::TextUnformatted(headTypeCell(headTypeLabel(types[static_cast<std::size_t>(a)])));
      else if (c >= 5 && c < kImportanceColumn && v < 0)
        ImGui::TextDisabled("-");  // no query row has such a key (no repeated token, say)
      else if (c == 2) {  // in the heads' titles' rounding (lesson.h)
        ImGui::TextUnformatted(entropyValue(v).c_str());
        probeNote("similarity.entropy." + std::to_string(a), entropyValue(v));
      }
      else
        ImGui::Text("%.3f", v);
    }
  }
  ImGui::EndTable();
  probeItem("similarity.table");
}

// The (h, h) matrix `m` (cosine over 0..1, Jensen-Shannon over 0..ln 2, both on viridis as the export draws them)
// in `order`, with the dendrogram of `clustering` beside it when given. Each value is written in its cell when
// "0.00" fits there with room to spare, else the colours alone say it and the hover gives the number; head
// numbers are thinned so that none touches the next. Returns the pair clicked, else (-1, -1).
std::pair<int, int> similarityMatrix(const Matrix& m, bool cosine, const std::vector<int>& order,
                                     const Clustering* clustering, const char* click_hint) {
  const int h = static_cast<int>(m.rows());
  if (h == 0) return {-1, -1};
  const bool dendrogram = clustering && !clustering->order.empty() && h > 1;
  // Weight maps are non-negative, so their cosine lies in 0..1: a sequential scale uses all of its bar.
  const float vmin = 0.0f, vmax = cosine ? 1.0f : static_cast<float>(std::log(2.0));
  drawScaleBar(ImGui::GetWindowDrawList(), ImGui::GetCursorScreenPos(),
               std::min(ImGui::GetContentRegionAvail().x, 14 * ImGui::GetFontSize()), 0.6f * ImGui::GetFontSize(),
               ColorMap::Viridis, vmin, vmax);
  ImGui::Dummy(ImVec2(1, 1.9f * ImGui::GetTextLineHeight()));
  probeRect("similarity.colorbar", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
  const float label_w = ImGui::CalcTextSize("00").x + 0.4f * ImGui::GetFontSize();
  const float dendro_w = dendrogram ? ImGui::GetFontSize() * 2.5f : 0;
  const float avail = ImGui::GetContentRegionAvail().x - label_w - dendro_w - 2;
  const float cell = std::max(4.0f, std::floor(std::min(avail / static_cast<float>(h), ImGui::GetFontSize() * 3.0f)));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 p0(origin.x + dendro_w + label_w, origin.y + ImGui::GetTextLineHeight() + 2);
  ImDrawList* list = ImGui::GetWindowDrawList();
  if (dendrogram) drawDendrogram(list, *clustering, origin.x, origin.x + dendro_w - 4, p0.y, cell);
  const bool values = cell >= ImGui::CalcTextSize("0.00").x + 6;
  // Every `step`-th head numbered (a number's width apart at least), the first always.
  const int step = std::max(1, static_cast<int>(std::ceil((ImGui::CalcTextSize("00").x + 4) / cell)));
  const ImU32 label_color = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  for (int ra = 0; ra < h; ++ra) {
    const int a = order[static_cast<std::size_t>(ra)];
    if (ra % step == 0) {
      const std::string label = std::to_string(a + 1);
      const ImVec2 size = ImGui::CalcTextSize(label.c_str());
      drawProbedText(list, "similarity.rowlabel." + std::to_string(ra),
                     ImVec2(p0.x - size.x - 0.2f * ImGui::GetFontSize(), p0.y + (ra + 0.5f) * cell - size.y * 0.5f),
                     label_color, label.c_str());
      drawProbedText(list, "similarity.collabel." + std::to_string(ra),
                     ImVec2(p0.x + (ra + 0.5f) * cell - size.x * 0.5f, origin.y), label_color, label.c_str());
    }
    for (int rb = 0; rb < h; ++rb) {
      const int b = order[static_cast<std::size_t>(rb)];
      const float v = m(a, b);
      const Rgb8 c = colorAt(ColorMap::Viridis, colorMapParameter(v, vmin, vmax));
      const ImVec2 c0(p0.x + rb * cell, p0.y + ra * cell);
      list->AddRectFilled(c0, ImVec2(c0.x + cell - 1, c0.y + cell - 1), IM_COL32(c.r, c.g, c.b, 255));
      if (values) {
        char text[16];
        std::snprintf(text, sizeof text, "%.2f", std::max(0.0f, v));  // never "-0.00" from rounding
        const ImVec2 size = ImGui::CalcTextSize(text);
        const bool dark = 0.299f * c.r + 0.587f * c.g + 0.114f * c.b < 140;
        const ImVec2 at(c0.x + (cell - 1 - size.x) * 0.5f, c0.y + (cell - 1 - size.y) * 0.5f);
        list->AddText(at, dark ? IM_COL32(255, 255, 255, 255) : IM_COL32(0, 0, 0, 255), text);
        probeFit("similarity.value", at.x >= c0.x && at.x + size.x <= c0.x + cell - 1);
      }
    }
  }
  ImGui::SetCursorScreenPos(p0);
  const bool clicked = ImGui::InvisibleButton("similarity", ImVec2(cell * h, cell * h));
  probeRect("similarity.map", p0, ImVec2(p0.x + cell * h, p0.y + cell * h));
  const bool hovered = ImGui::IsItemHovered();
  probeNote("similarity.values", values ? "in the cells" : "on hover");
  if (!values) ImGui::TextDisabled("Hover a cell for its value.");
  if (hovered) {
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
  ImGui::RadioButton("cosine", &view.similarity.metric, 0);
  ImGui::SameLine();
  ImGui::RadioButton("Jensen-Shannon", &view.similarity.metric, 1);
  ImGui::SameLine();
  ImGui::Checkbox("cluster order", &view.similarity.cluster_order);
  probeItem("similarity.cluster");
  ImGui::TextDisabled(view.similarity.metric == 0 ? "1 = the same attention maps, 0 = no key in common"
                                       : "0 = identical rows; ln 2 = %.3f = disjoint",
                      std::log(2.0));
}

// A checkpoint run's or a tensor's shown layer (ModelSession::layer): its heads' similarity and statistics
// (arrays::analyseTensorLayer, cached per layer). A click opens the first head of the pair full-size.
void modelSimilarity(ViewState& view, ModelSession& s) {
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
  const bool cosine = view.similarity.metric == 0;
  std::vector<int> order(static_cast<std::size_t>(h));
  std::iota(order.begin(), order.end(), 0);
  Clustering clustering;
  if (view.similarity.cluster_order && h > 1) {
    clustering = clusterHeads(a.similarity, cosine ? ClusterMetric::Cosine : ClusterMetric::JensenShannon);
    order = clustering.order;
  }
  const std::pair<int, int> clicked = similarityMatrix(cosine ? a.similarity.cosine : a.similarity.js, cosine, order,
                                                       view.similarity.cluster_order ? &clustering : nullptr,
                                                       "click: show the first head full-size");
  if (clicked.first >= 0) {
    s.focus_head = clicked.first;
    view.run.zoom = CellView{0, 0, static_cast<float>(s.forward().n), static_cast<float>(s.forward().n)};
  }
  ImGui::Spacing();
  textWrappedAtSpaces("Per head of this layer: statistics and head-type scores. Rows with a single allowed key are "
                      "left out. Hover a column's title for what it means; click it to sort.");
  statsTable(view, a.stats, a.scores, nullptr);
}

}  // namespace

void drawSimilarityPanel(AppState& state, ViewState& view) {
  if (ModelSession* run = Subject(state, view).run()) {  // the shown layer of the model or tensor on show
    modelSimilarity(view, *run);
    return;
  }
  if (longScene(state)) {  // O(h^2 n^2): minutes at 32k tokens; the CLI streams it
    longSceneNote(state, "Head similarity, statistics, head types and importance");
    return;
  }
  metricChoice(view);
  const bool cosine = view.similarity.metric == 0;
  if (state.analysisPending()) ImGui::TextDisabled("(updates when the edits pause)");
  const Matrix& m = cosine ? state.result().similarity.cosine : state.result().similarity.js;
  if (m.rows() == 0) return;
  Clustering clustering;
  const std::vector<int> order = headOrder(state, view, &clustering);
  const std::pair<int, int> clicked = similarityMatrix(m, cosine, order, view.similarity.cluster_order ? &clustering : nullptr,
                                                       "click: show them side by side");
  if (clicked.first >= 0) {
    view.heads.compare_a = clicked.first;
    view.heads.compare_b = clicked.second;
    view.heads.focus = -1;
  }
  ImGui::Spacing();
  ImGui::TextWrapped(
      "Per head: statistics, head-type scores and importance (output change with the head "
      "zero-ablated). Rows with a single allowed key (query 0 under a causal mask) are left out. "
      "Hover a column's title for what it means; click it to sort.");
  statsTable(view, state.result().stats, state.headTypes(), &state.importance());
}

}  // namespace attnscope::app
