// GPT-2 panel: open a checkpoint folder, type text, see every layer's heads as a layers x heads grid of small
// tiles (hover: layer, head, tokens, weight; click: enlarge), and open any layer as the scene being edited.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <string>

#include "attnscope/export/colormap.h"
#include "attnscope/error.h"
#include "attnscope/model/gpt2.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

// A map's colours at one tile size: blocks x blocks, row-major. Recomputed only when the forward or the size
// changes, so a frame draws rectangles and never rescans n^2 weights per tile.
struct TileColors {
  int blocks = 0;
  std::vector<ImU32> colors;
};

struct Gpt2Session {
  std::string dir;
  std::string text = "The cat sat on the mat.";
  std::string error;
  std::unique_ptr<model::Checkpoint> checkpoint;  // the last folder opened
  model::ForwardResult forward;                   // on `ran_text`, with every layer's ln_1 rows
  std::vector<std::string> labels;
  std::string ran_text;
  int focus_layer = -1, focus_head = -1;  // >= 0: that map enlarged
  int scene_layer = 0;
  std::vector<TileColors> tiles;  // one per map (layer * n_head + head)
  TileColors focus_tile;          // the enlarged map's
};

namespace {

ImU32 toImU32(Rgb8 c) { return IM_COL32(c.r, c.g, c.b, 255); }

void run(Gpt2Session& s) {
  s.error.clear();
  try {
    if (!s.checkpoint || s.checkpoint->dir != s.dir)
      s.checkpoint = std::make_unique<model::Checkpoint>(model::loadCheckpoint(s.dir));
    const std::vector<int> ids = s.checkpoint->tokenizer.encode(s.text);
    if (ids.empty()) throw InputError("text", "at least one token", "an empty text");
    s.forward = model::gpt2Forward(s.checkpoint->weights, ids);
    s.labels.clear();
    for (int id : ids) s.labels.push_back(s.checkpoint->tokenizer.label(id));
    s.ran_text = s.text;
    s.focus_layer = s.focus_head = -1;
    s.tiles.assign(static_cast<std::size_t>(s.forward.maps), TileColors{});
    s.focus_tile = {};
    s.scene_layer = std::min(s.scene_layer, s.checkpoint->weights.config.n_layer - 1);
  } catch (const std::exception& e) {
    s.error = e.what();
    s.forward = {};
    s.tiles.clear();
  }
}

// One causal map (n, n) over the square [p0, p0 + size). Where a pixel covers several cells it shows the
// largest weight under it (as the heads panel does), so a sharp peak survives on a small tile; cells above the
// diagonal are kMaskedColor. `cache` keeps the colours for this size. Returns the hovered cell, or (-1, -1).
std::pair<int, int> drawMap(ImDrawList* list, const Eigen::Ref<const Matrix>& w, ImVec2 p0, float size,
                            TileColors& cache) {
  const int n = static_cast<int>(w.rows());
  const int blocks = std::min(n, std::max(1, static_cast<int>(size)));  // blocks of cells drawn, per side
  if (cache.blocks != blocks) {
    cache.blocks = blocks;
    cache.colors.assign(static_cast<std::size_t>(blocks) * static_cast<std::size_t>(blocks), 0);
    for (int bi = 0; bi < blocks; ++bi) {
      const int i0 = bi * n / blocks, i1 = (bi + 1) * n / blocks;
      for (int bj = 0; bj < blocks; ++bj) {
        const int j0 = bj * n / blocks, j1 = (bj + 1) * n / blocks;
        float top = -1;
        for (int i = i0; i < i1; ++i)
          for (int j = j0; j < std::min(j1, i + 1); ++j) top = std::max(top, w(i, j));
        cache.colors[static_cast<std::size_t>(bi * blocks + bj)] =
            toImU32(top < 0 ? kMaskedColor : colorAt(ColorMap::Viridis, top));
      }
    }
  }
  for (int bi = 0; bi < blocks; ++bi) {
    const float y0 = p0.y + std::floor(static_cast<float>(bi) * size / static_cast<float>(blocks));
    const float y1 = p0.y + std::floor(static_cast<float>(bi + 1) * size / static_cast<float>(blocks));
    for (int bj = 0; bj < blocks; ++bj) {
      const float x0 = p0.x + std::floor(static_cast<float>(bj) * size / static_cast<float>(blocks));
      const float x1 = p0.x + std::floor(static_cast<float>(bj + 1) * size / static_cast<float>(blocks));
      list->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), cache.colors[static_cast<std::size_t>(bi * blocks + bj)]);
    }
  }
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (m.x < p0.x || m.y < p0.y || m.x >= p0.x + size || m.y >= p0.y + size) return {-1, -1};
  return {std::min(n - 1, static_cast<int>((m.y - p0.y) / size * static_cast<float>(n))),
          std::min(n - 1, static_cast<int>((m.x - p0.x) / size * static_cast<float>(n)))};
}

void tooltip(const Gpt2Session& s, int layer, int head, std::pair<int, int> cell) {
  if (cell.first < 0 || !ImGui::IsWindowHovered()) return;
  const int n_head = s.checkpoint->weights.config.n_head;
  const auto [i, j] = cell;
  ImGui::BeginTooltip();
  ImGui::Text("layer %d, head %d", layer + 1, head + 1);  // counted from 1, as the heads panel counts heads
  // positions from 0, with the token beside them (as the heads panel's tooltips and the exports)
  ImGui::Text("query '%s' (position %d)  ->  key '%s' (position %d)", s.labels[static_cast<std::size_t>(i)].c_str(),
              i, s.labels[static_cast<std::size_t>(j)].c_str(), j);
  if (j > i)
    ImGui::TextUnformatted("masked (causal: a later token)");
  else
    ImGui::Text("weight %.4f", s.forward.map(layer, head, n_head)(i, j));
  ImGui::EndTooltip();
}

}  // namespace

void drawGpt2Panel(AppState& state, ViewState& view) {
  if (!view.gpt2) view.gpt2 = std::make_shared<Gpt2Session>();
  Gpt2Session& s = *view.gpt2;
  sectionHeader("GPT-2 checkpoint");
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##gpt2_dir", "folder: config.json, model.safetensors, vocab.json, merges.txt", &s.dir);
  probeItem("gpt2.path");
  ImGui::InputTextMultiline("##gpt2_text", &s.text, ImVec2(-1, ImGui::GetTextLineHeight() * 3.5f));
  probeItem("gpt2.text");
  if (ImGui::Button("Open model and run")) {
    if (s.dir.empty())
      s.error = "checkpoint folder: type the folder's path first (config.json, model.safetensors, vocab.json, "
                "merges.txt)";
    else
      run(s);
  }
  probeItem("gpt2.run");
  if (!s.error.empty()) {
    errorText(s.error);
    probeItem("gpt2.error");
  }
  if (!s.checkpoint || s.forward.n == 0) return;

  const model::Gpt2Config& c = s.checkpoint->weights.config;
  ImGui::Text("%d layers x %d heads, %d tokens", c.n_layer, c.n_head, s.forward.n);
  int layer_shown = s.scene_layer + 1;  // layers counted from 1 in the window
  if (stepperInt("layer", "gpt2.layer", layer_shown, 1, c.n_layer)) s.scene_layer = layer_shown - 1;
  if (ImGui::Button("Open this layer as the scene")) {
    const std::string shown = s.ran_text.size() > 200 ? s.ran_text.substr(0, 200) + "..." : s.ran_text;
    state.replaceScene(
        "open GPT-2 layer",
        model::layerScene(s.checkpoint->weights, s.forward, s.scene_layer, s.labels,
                          "GPT-2 checkpoint " + s.checkpoint->dir + ", layer " + std::to_string(s.scene_layer + 1) +
                              " of " + std::to_string(c.n_layer) + " (from 1), text: \"" + shown + "\""));
    view.focus_head = -1;
  }
  probeItem("gpt2.open_layer");

  ImDrawList* list = ImGui::GetWindowDrawList();
  if (s.focus_layer >= 0) {  // one map enlarged
    if (ImGui::Button("Back to the grid")) s.focus_layer = s.focus_head = -1;
    probeItem("gpt2.back");
    if (s.focus_layer >= 0) {
      ImGui::Text("layer %d, head %d", s.focus_layer + 1, s.focus_head + 1);
      const float size = std::floor(std::min(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y));
      const ImVec2 p0 = ImGui::GetCursorScreenPos();
      const auto cell = drawMap(list, s.forward.map(s.focus_layer, s.focus_head, c.n_head), p0, size, s.focus_tile);
      probeRect("gpt2.focus", p0, ImVec2(p0.x + size, p0.y + size));
      ImGui::Dummy(ImVec2(size, size));
      tooltip(s, s.focus_layer, s.focus_head, cell);
      return;
    }
  }
  // The grid: one row per layer, one column per head; a label column on the left.
  const float label_w = ImGui::CalcTextSize("L00").x + 6;
  const float gap = 3;
  const float tile = std::floor(std::clamp((ImGui::GetContentRegionAvail().x - label_w) / c.n_head - gap, 8.0f, 96.0f));
  ImGui::BeginChild("gpt2_grid", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  list = ImGui::GetWindowDrawList();
  // Head numbers (from 1) above the columns; layer numbers (from 1) beside the rows.
  const ImVec2 header = ImGui::GetCursorScreenPos();
  for (int h = 0; h < c.n_head; ++h)
    list->AddText(ImVec2(header.x + label_w + static_cast<float>(h) * (tile + gap), header.y),
                  ImGui::GetColorU32(ImGuiCol_TextDisabled), ("H" + std::to_string(h + 1)).c_str());
  ImGui::Dummy(ImVec2(1, ImGui::GetTextLineHeight()));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  for (int l = 0; l < c.n_layer; ++l) {
    const float y = origin.y + static_cast<float>(l) * (tile + gap);
    list->AddText(ImVec2(origin.x, y), ImGui::GetColorU32(ImGuiCol_Text), ("L" + std::to_string(l + 1)).c_str());
    for (int h = 0; h < c.n_head; ++h) {
      const ImVec2 p0(origin.x + label_w + static_cast<float>(h) * (tile + gap), y);
      const auto cell =
          drawMap(list, s.forward.map(l, h, c.n_head), p0, tile, s.tiles[static_cast<std::size_t>(l * c.n_head + h)]);
      probeRect("gpt2.tile." + std::to_string(l) + "." + std::to_string(h), p0, ImVec2(p0.x + tile, p0.y + tile));
      if (cell.first >= 0) {
        list->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p0.x + tile + 1, p0.y + tile + 1), IM_COL32_WHITE);
        tooltip(s, l, h, cell);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) && ImGui::IsWindowHovered()) {
          s.focus_layer = l;
          s.focus_head = h;
          s.focus_tile = {};
        }
      }
    }
  }
  ImGui::Dummy(
      ImVec2(label_w + static_cast<float>(c.n_head) * (tile + gap), static_cast<float>(c.n_layer) * (tile + gap)));
  ImGui::EndChild();
}

}  // namespace attnscope::app
