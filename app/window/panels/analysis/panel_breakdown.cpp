// Breakdown panel: why one cell (head, query, key) has its weight, number by number as the Walkthrough shows
// a step: the d_k products q_i[t] k_j[t] as signed bars sorted by size, their sum, the scale, the score, the
// row's softmax (max, each key's exp, the sum, the weight; masked keys marked) and, for small d_model, the input
// products through W_Q and W_K. A click on a heatmap cell picks the cell.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "attnscope/analysis/analysis.h"
#include "attnscope/error.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

const ImVec4 kHeading{0.55f, 0.75f, 1.0f, 1.0f};
constexpr int kMaxShownTerms = 32;      // the largest; the rest are summed in one line
constexpr int kMaxShownInputDims = 16;  // input products shown for d_model up to this

// One signed bar: positive to the right of the centre line in green, negative to the left in red.
void signedBar(const std::string& probe, double value, double largest, float half_w) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  const float centre = p.x + half_w;
  const float len = largest > 0 ? static_cast<float>(std::abs(value) / largest) * half_w : 0.0f;
  ImDrawList* list = ImGui::GetWindowDrawList();
  list->AddLine(ImVec2(centre, p.y), ImVec2(centre, p.y + h), IM_COL32(150, 150, 150, 255));
  const ImVec2 b0(value >= 0 ? centre : centre - len, p.y + 2), b1(value >= 0 ? centre + len : centre, p.y + h - 2);
  list->AddRectFilled(b0, b1, value >= 0 ? IM_COL32(90, 190, 110, 255) : IM_COL32(220, 90, 80, 255));
  probeRect(probe, b0, b1);
  probeRect(probe + ".extent", ImVec2(centre - half_w, p.y + 2), ImVec2(centre + half_w, p.y + h - 2));
  ImGui::Dummy(ImVec2(2 * half_w, h));
}

void inputProducts(const char* title, const Matrix& products, const RowVector& bias, const RowVector& total) {
  // products: (d_model, d_k); a column sums (with the bias) to one entry of q_i or k_j
  ImGui::TextColored(kHeading, "%s", title);
  const int d_k = static_cast<int>(products.cols());
  if (!ImGui::BeginTable(title, d_k + 1, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) return;
  for (int d = 0; d < products.rows(); ++d) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextDisabled("d=%d", d);
    for (int t = 0; t < d_k; ++t) {
      ImGui::TableNextColumn();
      ImGui::Text("%+.3f", products(d, t));
    }
  }
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("bias");
  for (int t = 0; t < d_k; ++t) {
    ImGui::TableNextColumn();
    ImGui::Text("%+.3f", bias[t]);
  }
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted("sum");
  for (int t = 0; t < d_k; ++t) {
    ImGui::TableNextColumn();
    ImGui::Text("%+.3f", total[t]);
  }
  ImGui::EndTable();
}

}  // namespace

void drawBreakdownPanel(AppState& state, ViewState& view) {
  const Scene& scene = state.scene();
  if (view.breakdown.head < 0) {
    ImGui::TextWrapped(
        "Click a cell of a heatmap: this panel shows how its weight is made, from the products of "
        "q and k to the softmax of its row.");
    return;
  }
  CellBreakdown b;
  try {
    b = scoreBreakdown(scene, state.result(), view.breakdown.head, view.breakdown.query, view.breakdown.key);
  } catch (const InputError& e) {
    ImGui::TextWrapped("The picked cell is no longer in the scene (%s). Click another.", e.what());
    return;
  }
  const std::string& q_token = scene.query_tokens[static_cast<std::size_t>(b.query)];
  const std::string& k_token = scene.keyTokens()[static_cast<std::size_t>(b.key)];
  // Wrapped: with 3-digit positions (n = 1024) it ran off the pane (gui_big_scene's Cell tab).
  ImGui::PushStyleColor(ImGuiCol_Text, kHeading);
  textWrappedAtSpaces(formatted("Head %d, query '%s' (position %d), key '%s' (position %d)", b.head + 1,
                                q_token.c_str(), b.query, k_token.c_str(), b.key));
  ImGui::PopStyleColor();
  probeItem("breakdown.cell." + std::to_string(b.head) + "." + std::to_string(b.query) + "." + std::to_string(b.key));

  ImGui::TextColored(kHeading, "1. q_i . k_j: the %zu products q_i[t] k_j[t], largest first", b.terms.size());
  double largest = 0;
  for (const ScoreTerm& t : b.terms) largest = std::max(largest, std::abs(t.product));
  // The bars start after the widest product line, so they never cover its numbers.
  float text_w = 0;
  for (std::size_t n = 0; n < b.terms.size() && n < static_cast<std::size_t>(kMaxShownTerms); ++n) {
    const ScoreTerm& t = b.terms[n];
    const std::string line = formatted("t=%-3d %+.4f = %+.2f x %+.2f", t.t, t.product, b.q[t.t], b.k[t.t]);
    text_w = std::max(text_w, ImGui::CalcTextSize(line.c_str()).x);
  }
  text_w += ImGui::GetStyle().WindowPadding.x + ImGui::GetFontSize();
  const float half_w = std::max(
      ImGui::GetFontSize(), std::min(ImGui::GetFontSize() * 5, (ImGui::GetContentRegionAvail().x - text_w) / 2 - 4));
  double rest = 0;
  for (std::size_t n = 0; n < b.terms.size(); ++n) {
    const ScoreTerm& t = b.terms[n];
    if (static_cast<int>(n) >= kMaxShownTerms) {
      rest += t.product;
      continue;
    }
    ImGui::Text("t=%-3d %+.4f = %+.2f x %+.2f", t.t, t.product, b.q[t.t], b.k[t.t]);
    ImGui::SameLine(text_w);
    signedBar("breakdown.bar" + std::to_string(n), t.product, largest, half_w);
  }
  if (b.terms.size() > static_cast<std::size_t>(kMaxShownTerms))
    ImGui::Text("%zu smaller terms sum to %+.4f", b.terms.size() - kMaxShownTerms, rest);
  ImGui::Text("sum q_i . k_j = %.6f", b.dot);

  ImGui::TextColored(kHeading, "2. The score");
  if (b.masked)
    ImGui::Text("masked: this key may not be attended (score -inf, weight 0)");
  else
    textWrappedAtSpaces(formatted("score = %.6f x scale %.6f = %.6f   (engine: %.6f)", b.dot, b.scale, b.score,
                                  b.engine_score ? static_cast<double>(*b.engine_score) : b.score));

  ImGui::TextColored(kHeading, "3. Softmax of the row (query '%s')", q_token.c_str());
  ImGui::Text("max over the unmasked keys = %.6f", b.row_max);
  if (ImGui::BeginTable("softmax", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("key");
    ImGui::TableSetupColumn("score");
    ImGui::TableSetupColumn("exp(score - max)");
    ImGui::TableSetupColumn("weight");
    ImGui::TableHeadersRow();
    for (const SoftmaxEntry& e : b.row) {
      ImGui::TableNextRow();
      if (e.key == b.key) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(60, 90, 140, 255));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(scene.keyTokens()[static_cast<std::size_t>(e.key)].c_str());
      if (e.masked) {
        ImGui::TableNextColumn();
        ImGui::TextDisabled("masked");
        ImGui::TableNextColumn();
        ImGui::TextDisabled("0");
        ImGui::TableNextColumn();
        ImGui::TextDisabled("0");
        continue;
      }
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", e.score);
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", e.exp);
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", e.weight);
    }
    ImGui::EndTable();
  }
  textWrappedAtSpaces(formatted("sum of exp = %.6f;  weight = exp / sum = %.6f   (engine: %.6f)", b.exp_sum,
                                b.weight, static_cast<double>(b.engine_weight)));
  probeItem("breakdown.weight");

  const bool rotated = b.q_before_rope.size() > 0;
  if (rotated) {  // RoPE: q_i and k_j as projected, then turned by their positions (what the dot products use)
    ImGui::PushStyleColor(ImGuiCol_Text, kHeading);  // wrapped: on one line it ran off the pane (gui_clipping)
    textWrappedAtSpaces(formatted("RoPE: q_i at position %d and k_j at position %d, before and after rotation",
                                  b.query_position, b.key_position));
    ImGui::PopStyleColor();
    std::string q0 = "q before:", q1 = "q after: ", k0 = "k before:", k1 = "k after: ";
    for (Eigen::Index t = 0; t < b.q.size(); ++t) {
      q0 += formatted(" %+.3f", static_cast<double>(b.q_before_rope[t]));
      q1 += formatted(" %+.3f", static_cast<double>(b.q[t]));
      k0 += formatted(" %+.3f", static_cast<double>(b.k_before_rope[t]));
      k1 += formatted(" %+.3f", static_cast<double>(b.k[t]));
    }
    for (const std::string* line : {&q0, &q1, &k0, &k1}) textWrappedAtSpaces(*line);
    probeItem("breakdown.rope");
  }
  if (b.query_products.size() > 0 && scene.d_model <= kMaxShownInputDims) {
    ImGui::TextColored(kHeading, "4. Where q_i and k_j come from (inputs x W)");
    // The products sum to the bare projection: before q_norm / k_norm when the scene has them, else before RoPE.
    const RowVector& q_sum = b.q_projected.size() ? b.q_projected : rotated ? b.q_before_rope : b.q;
    const RowVector& k_sum = b.k_projected.size() ? b.k_projected : rotated ? b.k_before_rope : b.k;
    inputProducts("x_i[d] W_Q[d][t]", b.query_products, b.query_bias, q_sum);
    inputProducts("x_j[d] W_K[d][t]", b.key_products, b.key_bias, k_sum);
  }
}

}  // namespace attnscope::app
