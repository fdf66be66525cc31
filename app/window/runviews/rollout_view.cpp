// The attention rollout of the run as a view of the centre pane (the CLI's `model --rollout-out`): one (n, n)
// map, query tokens down, key tokens across (labelled where they fit), in the window's contrast; a decoder's keys after
// the query grey. Past 256 tokens each drawn block is the mean of the cells it covers (tiles.h's pooledRange).
#include <imgui.h>

#include <algorithm>
#include <string>

#include "attnscope/compute/tiles.h"
#include "attnscope/export/colormap.h"
#include "window/subject/model_session.h"
#include "window/runviews/runviews.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {
constexpr int kMaxBlocks = 256;  // drawn blocks a side at most

// The (n, n) rollout `r` as (blocks, blocks): each block the mean of the allowed cells it covers (a causal
// query's later keys are not), masked where it covers none.
void poolRollout(const Matrix& r, bool causal, int blocks, Matrix& shown, MaskMatrix& masked) {
  const int n = static_cast<int>(r.rows());
  for (int by = 0; by < blocks; ++by) {
    const auto [i0, i1] = pooledRange(by, blocks, n);
    for (int bx = 0; bx < blocks; ++bx) {
      const auto [j0, j1] = pooledRange(bx, blocks, n);
      double sum = 0;
      int count = 0;
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < std::min(j1, causal ? i + 1 : j1); ++j) sum += r(i, j), ++count;
      shown(by, bx) = count > 0 ? static_cast<float>(sum / count) : 0.0f;
      masked(by, bx) = count == 0;
    }
  }
}

}  // namespace

void drawRolloutView(ModelViewState& run, MapContrast& contrast, ModelSession& s) {
  if (ImGui::Button("Back to the heads")) run.rollout = 0;
  probeItem("model.view.heads");
  textWrappedAtSpaces(
      "Attention rollout (Abnar and Zuidema, 2020): per layer the mean of its heads, half and half "
      "with the residual's identity, multiplied through every layer: how much each token's last "
      "representation draws on each input token.");
  const Matrix* r = s.rollout();
  if (!r) {
    ImGui::TextDisabled("computing the rollout...");
    probeItem("model.rollout.pending");
    return;
  }
  drawContrastControl(contrast);
  const int n = static_cast<int>(r->rows());
  const bool causal = s.forward().layout.causal;
  const int blocks = std::min(n, kMaxBlocks);
  // The blocks' values (means of the cells each covers, the allowed ones only) and which are masked: pooled
  // once per rollout (O(n^2)), not every frame.
  struct Pooled {
    unsigned revision = 0;
    Matrix shown;
    MaskMatrix masked;
  };
  static Pooled pooled;
  if (pooled.revision != s.revision() + 1 || pooled.shown.rows() != blocks) {
    pooled.shown.resize(blocks, blocks);
    pooled.masked.resize(blocks, blocks);
    pooled.revision = s.revision() + 1;
    poolRollout(*r, causal, blocks, pooled.shown, pooled.masked);
  }
  const Matrix& shown = pooled.shown;
  const MaskMatrix& masked = pooled.masked;
  // Each drawn value over its top: 1, the map's max (shared or per-head: one map), or its row's max.
  float map_top = 0;
  for (int by = 0; by < blocks; ++by)
    for (int bx = 0; bx < blocks; ++bx)
      if (!masked(by, bx)) map_top = std::max(map_top, shown(by, bx));
  // Query tokens left of the map, key tokens under it (thinned to fit, as the heads' maps label theirs).
  const std::vector<std::string>& labels = s.labels();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeight(), bar_w = std::floor(ImGui::GetFontSize() * 3.5f);
  const float label_w = queryLabelWidth(labels);
  const float guess = std::max(1.0f, std::min(avail.x - bar_w - label_w, avail.y - line) / static_cast<float>(n));
  const bool turned = keyLabelsTurned(labels, guess);
  const float key_h = keyLabelHeight(labels, turned);
  const float side = std::floor(std::max(2.0f * blocks, std::min(avail.x - bar_w - label_w, avail.y - line - key_h)));
  const float cell = side / static_cast<float>(blocks);
  const ImVec2 p0(ImGui::GetCursorScreenPos().x + label_w, ImGui::GetCursorScreenPos().y);
  drawAxisLabels(labels, labels, CellView{0, 0, static_cast<float>(n), static_cast<float>(n)}, p0,
                 ImVec2(p0.x + side, p0.y + side), side / static_cast<float>(n), label_w, turned);
  ImDrawList* list = ImGui::GetWindowDrawList();
  for (int by = 0; by < blocks; ++by) {
    float row_top = 0;
    for (int bx = 0; bx < blocks; ++bx)
      if (!masked(by, bx)) row_top = std::max(row_top, shown(by, bx));
    const float top = contrast.scale == ColorScale::Fixed    ? 1.0f
                      : contrast.scale == ColorScale::RowMax ? row_top
                                                                  : map_top;
    for (int bx = 0; bx < blocks; ++bx) {
      const Rgb8 c =
          masked(by, bx) ? kMaskedColor : colorAt(ColorMap::Viridis, contrastT(contrast, shown(by, bx), top));
      const ImVec2 a(std::floor(p0.x + bx * cell), std::floor(p0.y + by * cell));
      const ImVec2 b(std::floor(p0.x + (bx + 1) * cell), std::floor(p0.y + (by + 1) * cell));
      list->AddRectFilled(a, b, IM_COL32(c.r, c.g, c.b, 255));
    }
  }
  drawColorBar(list, ImVec2(p0.x + side + line * 0.6f, p0.y),
               ImVec2(p0.x + side + line * 0.6f + bar_w * 0.3f, p0.y + std::min(side, 300.0f)),
               contrast.scale == ColorScale::Fixed || contrast.scale == ColorScale::RowMax ? 1.0f : map_top,
               contrast);
  ImGui::SetCursorScreenPos(p0);
  ImGui::InvisibleButton("model.rollout.map", ImVec2(side, side));
  probeItem("model.rollout.map");
  const bool hovered = ImGui::IsItemHovered();
  ImGui::SetCursorScreenPos(ImVec2(p0.x - label_w, p0.y + side));
  ImGui::Dummy(ImVec2(label_w + side, key_h));  // the key labels' room
  probeNote("model.rollout.blocks", std::to_string(blocks));
  if (hovered) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int by = std::clamp(static_cast<int>((mouse.y - p0.y) / cell), 0, blocks - 1);
    const int bx = std::clamp(static_cast<int>((mouse.x - p0.x) / cell), 0, blocks - 1);
    const int i = pooledRange(by, blocks, n).first, j = pooledRange(bx, blocks, n).first;
    if (blocks == n)
      ImGui::SetTooltip("query %d '%s', key %d '%s'\nrollout %s", i, labels[static_cast<std::size_t>(i)].c_str(), j,
                        labels[static_cast<std::size_t>(j)].c_str(),
                        masked(by, bx) ? "masked (a later key)" : formatted("%.4f", shown(by, bx)).c_str());
    else
      ImGui::SetTooltip("queries from %d, keys from %d: mean rollout %.4f", i, j, shown(by, bx));
  }
}

}  // namespace attnscope::app
