// The row profile under an enlarged head: one query's weights over every key as a 1-D plot (max per pixel, so a
// sharp key stays visible among 32k), linear or log, with the top keys listed by token and weight. In a long
// context the row is what a person can read; it is one engine row (weightRows), O(n_k d) to compute.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "attnscope/compute/tiles.h"
#include "attnscope/export/colormap.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {
constexpr int kTopKeys = 8;
constexpr float kLogFloor = 1e-8f;  // the log plot's bottom: weights below it (and masked keys) sit there
}  // namespace

float rowProfileHeight() { return ImGui::GetTextLineHeightWithSpacing() * 9.0f; }

void drawRowProfile(const AppState& state, ViewState& view, int head, ImVec2 p0, float width) {
  const Scene& scene = state.scene();
  const int query = view.profile.query;
  ImGui::SetCursorScreenPos(p0);
  if (state.weightsPending()) {  // a long scene's overview is drawn before its result: the row needs m, l
    ImGui::PushTextWrapPos(p0.x + width);
    ImGui::TextDisabled("Row profile: once the result (each row's max and sum) has landed.");
    ImGui::PopTextWrapPos();
    return;
  }
  if (query < 0 || query >= scene.nQ()) {
    ImGui::PushTextWrapPos(p0.x + width);  // inside the pane: it ran past a narrow one's edge
    ImGui::TextDisabled("Row profile: hover or click a query row of the map to see its weights over every key.");
    ImGui::PopTextWrapPos();
    return;
  }
  // The row, cached by (head, query, revision): the plot redraws every frame, the row is computed once.
  if (view.profile.head != head || view.profile.row_query != query || view.profile.revision != state.revision()) {
    weightRows(scene, state.result(), head, query, query + 1, view.profile.row);  // (1, n_k)
    view.profile.head = head, view.profile.row_query = query, view.profile.revision = state.revision();
  }
  const Matrix& row = view.profile.row;
  const int n_k = static_cast<int>(row.cols());
  ImGui::Text("Row profile: head %d, query %d \"%s\" over %d keys", head + 1, query,
              axisLabel(scene.query_tokens[static_cast<std::size_t>(query)]).c_str(), n_k);
  ImGui::SameLine();
  ImGui::Checkbox("log", &view.profile.log);
  probeItem("profile.log");

  // Inside rowProfileHeight(): the title (1.3 lines), the scale line, the plot, one line of key positions.
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float list_w = std::min(width * 0.38f, ImGui::GetFontSize() * 16);
  const float bottom = p0.y + rowProfileHeight();
  const ImVec2 g0(p0.x, p0.y + line * 2.3f);
  const ImVec2 g1(p0.x + width - list_w - ImGui::GetFontSize(), bottom - line * 1.1f);
  ImDrawList* list = ImGui::GetWindowDrawList();
  list->AddRectFilled(g0, g1, IM_COL32(30, 30, 34, 255));
  list->AddRect(g0, g1, IM_COL32(110, 110, 110, 255));
  probeRect("profile.plot", g0, g1);
  const float top = std::max(row.maxCoeff(), 1e-12f);
  const auto height_of = [&](float w) {
    if (!view.profile.log) return w / top;
    const float lo = std::log10(kLogFloor), hi = std::log10(std::max(top, kLogFloor * 10));
    return (std::log10(std::max(w, kLogFloor)) - lo) / (hi - lo);
  };
  // Few keys (3 px each at least): one bar per key with a gap between neighbours, so two keys never read as one
  // block. Many: one bar per pixel column, the largest weight of the keys it covers.
  const float plot_w = g1.x - g0.x - 2;
  const float key_w = plot_w / static_cast<float>(n_k);
  const auto bar = [&](float x0, float x1, float w) {
    const float h = std::clamp(height_of(w), 0.0f, 1.0f) * (g1.y - g0.y - 2);
    if (h < 0.5f) return;
    const Rgb8 c = colorAt(ColorMap::Viridis, w / top);
    list->AddRectFilled(ImVec2(x0, g1.y - 1 - h), ImVec2(x1, g1.y - 1), IM_COL32(c.r, c.g, c.b, 255));
  };
  if (key_w >= 3) {
    const float gap = std::clamp(std::floor(0.15f * key_w), 1.0f, 6.0f);
    for (int j = 0; j < n_k; ++j) {
      const float x0 = std::floor(g0.x + 1 + static_cast<float>(j) * key_w);
      const float x1 = std::floor(g0.x + 1 + static_cast<float>(j + 1) * key_w);
      bar(x0 + std::floor(gap / 2), x1 - std::ceil(gap / 2), row(0, j));
    }
  } else {
    const int pixels = std::max(1, static_cast<int>(plot_w));
    for (int x = 0; x < pixels; ++x) {
      const int j0 = static_cast<int>(static_cast<long long>(x) * n_k / pixels);
      const int j1 = std::max(j0 + 1, static_cast<int>(static_cast<long long>(x + 1) * n_k / pixels));
      float w = 0;
      for (int j = j0; j < std::min(j1, n_k); ++j) w = std::max(w, row(0, j));
      bar(g0.x + 1 + static_cast<float>(x), g0.x + 2 + static_cast<float>(x), w);
    }
  }
  // The scale above the plot (drawn inside it, it hid the tallest bar); below it, each key under its bar: its
  // token where every token fits its bar, else its position, every k-th (1, 2, 5, 10, 20, ...) so that no two
  // labels touch.
  char scale[64];
  std::snprintf(scale, sizeof scale, view.profile.log ? "bar top: weight %.3g (log scale, from 1e-8)" : "bar top: weight %.3g",
                top);
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  list->AddText(ImVec2(g0.x, p0.y + line * 1.3f), dim, scale);
  const float label_gap = ImGui::GetFontSize() * 0.5f;
  float widest_token = 0;
  for (int j = 0; j < n_k && j < 256; ++j)
    widest_token = std::max(
        widest_token, ImGui::CalcTextSize(axisLabel(scene.keyTokens()[static_cast<std::size_t>(j)]).c_str()).x);
  const bool tokens = n_k <= 256 && widest_token + label_gap <= key_w;
  int stride = 1;
  const float number_w = ImGui::CalcTextSize(std::to_string(n_k - 1).c_str()).x + label_gap;
  for (int k = 0; !tokens && number_w > static_cast<float>(stride) * key_w; ++k)
    stride = k % 3 == 1 ? stride / 2 * 5 : stride * 2;  // 1, 2, 5, 10, 20, 50, ...
  float last_end = -1e9f;
  for (int j = 0; j < n_k; j += stride) {
    const std::string text = tokens ? axisLabel(scene.keyTokens()[static_cast<std::size_t>(j)]) : std::to_string(j);
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    const float x = std::clamp(g0.x + 1 + (static_cast<float>(j) + 0.5f) * key_w - w / 2, g0.x, g1.x - w);
    if (x < last_end + label_gap / 2) continue;  // the clamp at either end may pull one close: left out
    drawProbedText(list, "profile.key." + std::to_string(j), ImVec2(x, g1.y + 1), dim, text.c_str());
    last_end = x + w;
  }
  if (ImGui::IsMouseHoveringRect(g0, g1)) {
    const int j = std::clamp(static_cast<int>((ImGui::GetIO().MousePos.x - g0.x) / (g1.x - g0.x) * n_k), 0, n_k - 1);
    ImGui::SetTooltip("key %d \"%s\"  weight %.4g", j, axisLabel(scene.keyTokens()[static_cast<std::size_t>(j)]).c_str(),
                      row(0, j));
  }

  // The top keys, largest first, as many as fit beside the plot: position (right-aligned), token, weight.
  const float row_h = ImGui::GetTextLineHeight() + ImGui::GetStyle().CellPadding.y * 2;
  const ImVec2 table0(g1.x + ImGui::GetFontSize(), g0.y - line);
  const int fit = static_cast<int>((bottom - table0.y) / row_h) - 1;  // less the header row
  const int k = std::clamp(fit, 1, std::min(kTopKeys, n_k));
  std::vector<int> order(static_cast<std::size_t>(n_k));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) { return row(0, a) > row(0, b); });
  ImGui::SetCursorScreenPos(table0);
  if (ImGui::BeginTable("profile.top", 3, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_NoHostExtendX,
                        ImVec2(list_w, 0))) {
    ImGui::TableSetupColumn("key");
    ImGui::TableSetupColumn("token", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("weight");
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TableHeadersRow();
    ImGui::PopStyleColor();
    const float digits_w = ImGui::CalcTextSize(std::to_string(n_k - 1).c_str()).x;
    for (int t = 0; t < k; ++t) {
      const int j = order[static_cast<std::size_t>(t)];
      const std::string position = std::to_string(j);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::SetCursorPosX(ImGui::GetCursorPosX() + digits_w - ImGui::CalcTextSize(position.c_str()).x);
      ImGui::TextUnformatted(position.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(axisLabel(scene.keyTokens()[static_cast<std::size_t>(j)]).substr(0, 12).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", static_cast<double>(row(0, j)));
    }
    ImGui::EndTable();
  }
  probeItem("profile.top");
}

}  // namespace attnscope::app
