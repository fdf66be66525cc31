// The model in the centre pane: the grid, the token strip, one map full-size, progress and the way back.
#include "window/model/model_view.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <variant>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/model/families.h"
#include "attnscope/model/tokenizer.h"
#include "attnscope/scene/scene.h"
#include "window/maps/run_maps.h"
#include "window/subject/layer_scene.h"
#include "window/subject/model_session.h"
#include "window/runviews/runviews.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// Row and column highlight of the token hovered in the strip: its query row (what it reads) and its key column
// (who reads it), in two colours that no viridis entry has.
constexpr ImU32 kRowHighlight = IM_COL32(255, 60, 60, 255);
constexpr ImU32 kColumnHighlight = IM_COL32(255, 255, 255, 255);

// KV-group frames (and their "KV n" labels) in a colour no viridis entry has.
constexpr ImU32 kGroupFrame = IM_COL32(230, 160, 60, 255);

// "weight 0.1234", or in red why it cannot be had (a capture's layer file broken since it was opened).
void weightLine(const model::ForwardResult& f, int layer, int head, int i, int j) {
  try {
    ImGui::Text("weight %.4f", f.weight(layer, head, i, j));
  } catch (const InputError& e) {
    errorText(e.what());
  }
}

// A cell's tooltip: layer and head from 1, the kv head where heads share one (from 1, as the heads panel's
// "KV n"), positions from 0 with their tokens.
void cellTooltip(const ModelSession& s, const std::vector<int>& kv, int layer, int head, int i, int j, int pooled,
                 bool weighted) {
  const std::vector<std::string>& labels = s.labels();
  ImGui::BeginTooltip();
  ImGui::Text("Layer %d, head %d", layer + 1, head + 1);
  const int group = static_cast<int>(std::count(kv.begin(), kv.end(), kv[static_cast<std::size_t>(head)]));
  if (group > 1) ImGui::Text("KV head %d (shared by %d query heads)", kv[static_cast<std::size_t>(head)] + 1, group);
  ImGui::Text("query  %s  (position %d)", labels[static_cast<std::size_t>(i)].c_str(), i);
  ImGui::Text("key    %s  (position %d)", labels[static_cast<std::size_t>(j)].c_str(), j);
  const int window = s.windowOf(layer);
  if (s.layout().causal && j > i)
    ImGui::TextUnformatted("masked (causal: a later token)");
  else if (window > 0 && j <= i - window)
    ImGui::Text("masked (sliding window: the last %d keys)", window);
  else if (!s.layout().keyAllowed(layer, i, j))
    ImGui::TextUnformatted("masked (a padding key)");
  else if (s.forward().reader && !s.forward().reader->ready(layer, head))  // a capture's layer not read yet
    ImGui::TextDisabled("weight: once the layer is read (the map's worker reads it)");
  else
    weightLine(s.forward(), layer, head, i, j);
  if (weighted) ImGui::TextDisabled("drawn times its key's value norm over the layer's largest");
  if (pooled > 1) ImGui::TextDisabled("each pixel shows the largest of ~%d x %d cells", pooled, pooled);
  ImGui::EndTooltip();
}

// The strip right of the grid or the map that the colour bar and its labels take: a gap, the bar (about a font
// wide) and its widest label ("1.00", "row max", "1e-03") with a margin, at least 3.5 fonts.
float modelColorBarWidth(float top, const MapContrast& contrast) {
  const float font = ImGui::GetFontSize(), line = ImGui::GetTextLineHeight();
  return std::floor(std::max(font * 3.5f, line * 0.4f + std::floor(font * 1.05f) + 4 +
                                              colorBarLabelWidth(top, contrast) + line * 0.6f));
}

// The colour bar beside the grid or the map, over [p0, p0 + (w, h)) (w: modelColorBarWidth): the contrast's scale
// from the bottom up to `top` (PerHead: each tile's own max, said under the bar).
void modelColorBar(ImVec2 p0, float h, float top, const MapContrast& contrast) {
  const float line = ImGui::GetTextLineHeight();
  const ImVec2 b0(std::floor(p0.x + line * 0.4f), std::floor(p0.y + line * 0.5f));
  const ImVec2 b1(b0.x + std::floor(ImGui::GetFontSize() * 1.05f), std::floor(b0.y + std::min(h - 3 * line, 300.0f)));
  if (b1.y - b0.y < 2 * line) return;
  drawColorBar(ImGui::GetWindowDrawList(), b0, b1, top, contrast);
  probeRect("model.colorbar", b0, b1);
  if (contrast.scale == ColorScale::PerHead)
    ImGui::GetWindowDrawList()->AddText(ImVec2(b0.x, b1.y + line * 0.3f), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                                        "x map\nmax");
}

// The tokens in a strip of equal cells over [x0, x0 + width), read as `words` (ModelSession::words); returns the
// hovered token or -1.
int tokenStrip(const std::vector<std::string>& labels, const std::vector<model::TokenWord>& words, float x0,
               float width) {
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const float y0 = ImGui::GetCursorScreenPos().y, h = line * 1.3f;
  const int n = static_cast<int>(labels.size());
  const float w = width / static_cast<float>(n);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  int hovered = -1;
  if (ImGui::IsWindowHovered() && mouse.y >= y0 && mouse.y < y0 + h && mouse.x >= x0 && mouse.x < x0 + width)
    hovered = std::min(n - 1, static_cast<int>((mouse.x - x0) / w));
  // Each token a cell, in two alternating shades so that narrow cells stay apart.
  for (int t = 0; t < n; ++t) {
    const float a = x0 + static_cast<float>(t) * w, b = a + w;
    const bool on = t == hovered;
    probeRect("model.token." + std::to_string(t), ImVec2(a, y0), ImVec2(b, y0 + h));
    list->AddRectFilled(
        ImVec2(a, y0), ImVec2(std::max(a + 1, b - 1), y0 + h),
        on ? IM_COL32(90, 90, 120, 255) : (t % 2 ? IM_COL32(38, 38, 48, 255) : IM_COL32(52, 52, 64, 255)));
  }
  // The words, each centred over its tokens' cells (kept inside the strip), never shortened to "...": a byte-level
  // tokenizer's pieces read as text ("cats", not "c" "ats"; bytes merged into characters), tokenWords' words.
  // From the left, each that clears the last one drawn, the last word always (those it would overlap give way).
  // Hovering any cell names its token.
  const float pad = line * 0.4f;
  std::vector<std::pair<std::size_t, float>> shown;  // (word, label's left x)
  const auto text_of = [&](std::size_t k) { return axisLabel(words[k].text); };
  const auto text_w = [&](std::size_t k) { return ImGui::CalcTextSize(text_of(k).c_str()).x; };
  const auto left_of = [&](std::size_t k) {
    const float centre = x0 + 0.5f * static_cast<float>(words[k].first + words[k].last + 1) * w;
    return std::clamp(centre - text_w(k) * 0.5f, x0, x0 + width - text_w(k));
  };
  for (std::size_t k = 0; k < words.size(); ++k) {
    const float x = left_of(k);
    if (shown.empty() || x >= shown.back().second + text_w(shown.back().first) + pad) shown.emplace_back(k, x);
  }
  if (!words.empty() && shown.back().first != words.size() - 1) {
    const float x = left_of(words.size() - 1);
    while (!shown.empty() && shown.size() > 1 && shown.back().second + text_w(shown.back().first) + pad > x)
      shown.pop_back();
    shown.emplace_back(words.size() - 1, x);
  }
  list->PushClipRect(ImVec2(x0, y0), ImVec2(x0 + width, y0 + h), true);
  for (const auto& [k, x] : shown) {
    // Probed as its first token's text, and each further token of the word as named by it.
    const model::TokenWord& word = words[k];
    drawProbedText(list, "model.tokentext." + std::to_string(word.first), ImVec2(x, y0 + line * 0.15f),
                   ImGui::GetColorU32(ImGuiCol_Text), text_of(k).c_str());
    for (int t = word.first + 1; t <= word.last; ++t)
      probeRect("model.tokentext." + std::to_string(t), ImVec2(x, y0), ImVec2(x + text_w(k), y0 + h));
    probeNote("model.word." + std::to_string(word.first), word.text);
  }
  list->PopClipRect();
  probeRect("model.strip", ImVec2(x0, y0), ImVec2(x0 + width, y0 + h));
  ImGui::Dummy(ImVec2(width, h + 2));
  if (hovered >= 0) {
    ImGui::BeginTooltip();
    ImGui::Text("%s  (position %d)", labels[static_cast<std::size_t>(hovered)].c_str(), hovered);
    for (const model::TokenWord& word : words)
      if (word.first <= hovered && hovered <= word.last && word.last > word.first)
        ImGui::TextDisabled("a piece of '%s' (tokens %d-%d)", axisLabel(word.text).c_str(), word.first, word.last);
    ImGui::TextDisabled("red: the row it reads from; white: the column of those that read it");
    ImGui::TextDisabled("click: its attention as text in the left pane's token view");
    ImGui::EndTooltip();
  }
  return hovered;
}

// "Open as scene" for layer `layer` (from 0): a button, or, where the forward kept no layer inputs, the button
// disabled with the reason on hover.
void openLayerButton(AppState& state, ViewState& view, const std::string& label, int layer, const char* probe) {
  const std::string why_not = layerSceneUnavailable(*view.run.session);
  ImGui::BeginDisabled(!why_not.empty());
  if (ImGui::Button(label.c_str())) openModelLayerAsScene(state, view, layer);
  ImGui::EndDisabled();
  probeItem(probe);
  if (!why_not.empty()) probeNote(std::string(probe) + ".why_not", why_not);
  if (!why_not.empty() && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("%s", why_not.c_str());
}

// The switches of the run's views, on the line of the grid's (or the map's) buttons while they fit: the rollout in
// place of the heads, and value-norm weighting of the heads' maps (a checkpoint's, or a capture's with v and W_O: a
// saved tensor has no values).
void viewToggles(ViewState& view, const ModelSession& s) {
  bool on = view.run.rollout == 1;
  if (ImGui::Checkbox("rollout", &on)) view.run.rollout = on ? 1 : 0;
  probeItem("model.view.rollout");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the attention rollout of every layer, in place of the heads");
  if (!s.hasValueNorms()) return;
  valueNormSwitch(view, "model.view.value_norm", "model.value_norm_note", "the layer's largest",
                  view.run.rollout == 1);
}

// The weighting the heads' maps are drawn with: value norms (the checkpoint's, or the capture's own) while the
// switch is on and the subject has them, else none.
// The window's GPU backend chosen: a run's maps not kept are recomputed on the GPU (RunTiles).
bool onGpu(const AppState& state) { return state.backend().name() == "gpu"; }

MapWeighting mapWeighting(const ViewState& view, const ModelSession& s) {
  return {view.run.value_norm == 1 && s.hasValueNorms(), s.sharedCheckpoint()};
}

void gridView(AppState& state, ViewState& view, ModelSession& s) {
  const model::HeadLayout& c = s.layout();
  const model::ForwardResult& f = s.forward();
  const int n = f.n;
  const float line = ImGui::GetTextLineHeight();
  const float label_w = std::floor(ImGui::CalcTextSize("L00").x + line * 0.5f), gap = 2;  // whole pixels
  const std::vector<int> kv = kvHeadOfEachHead(view);
  const int kv_heads = kv.empty() ? 0 : kv.back() + 1;
  const bool grouped = kv_heads < c.n_head;
  const float thick = std::max(1.0f, std::floor(line / 14));  // the frame's width: 1 px at scale 1 (line 15-16)
  // Grouped heads: between KV groups and between layers a gap (with `gap`) just wide enough for two frames (each
  // `thick` and a pixel clear of its tiles) and a pixel between them: the tiles take the rest of the pane.
  const float group_gap = grouped ? 2 * (1 + thick) + 1 - gap : 0;

  // Opening a layer as the scene: a stepper and a button on one line.
  int layer_shown = s.layer + 1;  // layers counted from 1 in the window
  if (stepperInt("layer", "model.layer", layer_shown, 1, c.n_layer)) s.layer = layer_shown - 1;
  ImGui::SameLine();
  openLayerButton(state, view, "Open layer " + std::to_string(s.layer + 1) + " as scene", s.layer, "model.open_layer");
  ImGui::SameLine();
  viewToggles(view, s);
  // The grid's tiles still computing on its worker (scripts wait: until no model.grid_pending): as of last
  // frame's syncGrid (this frame's comes below, once the tile size is known), or a new forward.
  if (s.renderer->gridPending(s.revision())) {
    ImGui::SameLine();
    ImGui::TextDisabled("grid %d/%d layers", s.renderer->gridLayersShown(), c.n_layer);
    probeItem("model.grid_pending");
  }
  // A map that could not be drawn (its layer unreadable: masked grey) or a GPU that fell back to the CPU.
  if (const std::string problem = s.renderer->gridProblem(); !problem.empty()) {
    errorText(problem);
    probeItem("model.grid_problem");
  }
  probeNote("model.grid_gpu_tiles", std::to_string(s.renderer->gridGpuTiles()));

  drawContrastControl(view.contrast);
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const float bar_top = s.renderer->gridTop(view.contrast) > 0 ? s.renderer->gridTop(view.contrast) : 1.0f;
  const float bar_w = modelColorBarWidth(bar_top, view.contrast);  // the colour bar's strip, right of the grid
  const ImVec2 bar_at(ImGui::GetCursorScreenPos().x + avail.x - bar_w, ImGui::GetCursorScreenPos().y);
  avail.x -= bar_w;
  modelColorBar(bar_at, avail.y, bar_top, view.contrast);
  // The room the grid has (strip, header and tiles), for the tests of how much of it the grid fills.
  probeRect("model.area", ImGui::GetCursorScreenPos(),
            ImVec2(ImGui::GetCursorScreenPos().x + avail.x, ImGui::GetCursorScreenPos().y + avail.y));
  // The strip and the header below it, each an item followed by the style's spacing.
  const float spacing = ImGui::GetStyle().ItemSpacing.y;
  const float strip_h = line * 1.3f + 2 + spacing, header_h = (grouped ? 2 * line + 4 : line) + 2 + spacing;
  // Tiles fill the pane both ways (a 28 x 16 grid in a tall pane gets wide tiles, not 11 px squares beside an
  // empty band), their sides at most 2:1 so that a map still reads as a map.
  const float frame_out = grouped ? 1 + thick : 0;  // the last group's frame, outside its tiles
  const float fit_w = std::floor((avail.x - label_w - frame_out - group_gap * static_cast<float>(kv_heads - 1)) /
                                     static_cast<float>(c.n_head) -
                                 gap);
  const float fit_h =
      std::floor((avail.y - strip_h - header_h - group_gap * 0.5f) / static_cast<float>(c.n_layer) - gap - group_gap);
  const int tile_w = static_cast<int>(std::clamp(std::min(fit_w, 2 * fit_h), 4.0f, 256.0f));
  const int tile_h = static_cast<int>(std::clamp(std::min(fit_h, 2 * fit_w), 4.0f, 256.0f));
  const float step = static_cast<float>(tile_w) + gap, row_step = static_cast<float>(tile_h) + gap + group_gap;
  s.renderer->syncGrid(s.sharedForward(), c.n_layer, c.n_head, s.revision(), tile_w, tile_h,
                       mapWeighting(view, s), onGpu(state));
  const int layers_shown = s.renderer->gridLayersShown();
  // Column x of head h (from the grid's left edge) and the grid's width.
  auto column = [&](int h) {
    return label_w + static_cast<float>(h) * step + group_gap * static_cast<float>(kv[static_cast<std::size_t>(h)]);
  };
  const float grid_w = column(c.n_head - 1) + step;

  const ImVec2 start = ImGui::GetCursorScreenPos();
  const int token = tokenStrip(s.labels(), s.words(), start.x + label_w, grid_w - label_w - gap);
  if (token >= 0 && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) view.tokens.token = token;  // the token view's
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ImVec2 header = ImGui::GetCursorScreenPos();
  // Labels thinned so that none overlaps another (labelledPositions): the first and the last always.
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  if (grouped) {  // "KV n" above each group's heads, on a bracket the width of the group (every group's bracket)
    const auto first_of = [&](int g) { return static_cast<int>(std::find(kv.begin(), kv.end(), g) - kv.begin()); };
    const float kv_w = ImGui::CalcTextSize(("KV " + std::to_string(kv_heads)).c_str()).x + line * 0.5f;
    const float group_step = kv_heads > 1 ? column(first_of(1)) - column(first_of(0)) : step;  // groups are equal
    const std::vector<int> kv_labelled = labelledPositions(0, kv_heads - 1, group_step, kv_w, [&](int g) {
      return header.x + column(first_of(g));
    });
    for (int g = 0; g < kv_heads; ++g) {
      const int first = first_of(g);
      const int last = static_cast<int>(kv.rend() - std::find(kv.rbegin(), kv.rend(), g)) - 1;
      const float x0 = header.x + column(first), x1 = header.x + column(last) + static_cast<float>(tile_w);
      if (std::find(kv_labelled.begin(), kv_labelled.end(), g) != kv_labelled.end())
        drawProbedText(list, "model.kvtext." + std::to_string(g), ImVec2(x0, header.y), kGroupFrame,
                       ("KV " + std::to_string(g + 1)).c_str());
      list->AddLine(ImVec2(x0, header.y + line + 1), ImVec2(x1, header.y + line + 1), kGroupFrame);
      probeRect("model.kvlabel." + std::to_string(g), ImVec2(x0, header.y), ImVec2(x1, header.y + line + 2));
    }
  }
  const float heads_y = header.y + (grouped ? line + 4 : 0);
  const float head_w = ImGui::CalcTextSize(("H" + std::to_string(c.n_head)).c_str()).x + line * 0.4f;
  for (const int h : labelledPositions(0, c.n_head - 1, step, head_w, [&](int h) { return header.x + column(h); }))
    drawProbedText(list, "model.headlabel." + std::to_string(h), ImVec2(header.x + column(h), heads_y), dim,
                   ("H" + std::to_string(h + 1)).c_str());
  ImGui::Dummy(ImVec2(1, header_h - spacing));  // header_h counts the spacing after the item
  const ImVec2 origin(std::floor(ImGui::GetCursorScreenPos().x),
                      std::floor(ImGui::GetCursorScreenPos().y + group_gap * 0.5f));
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const float tw = static_cast<float>(tile_w), th = static_cast<float>(tile_h);
  const float cell_x = tw / static_cast<float>(n), cell_y = th / static_cast<float>(n);  // pixels per cell
  const std::vector<int> layer_labelled = labelledPositions(
      0, c.n_layer - 1, row_step, line, [&](int l) { return origin.y + static_cast<float>(l) * row_step; });
  for (int l = 0; l < c.n_layer; ++l) {
    const float y = origin.y + static_cast<float>(l) * row_step;
    // The layer on show (ModelSession::layer), when labelled, in the frames' colour.
    const ImU32 label_color = l == s.layer ? kGroupFrame : ImGui::GetColorU32(ImGuiCol_Text);
    if (std::find(layer_labelled.begin(), layer_labelled.end(), l) != layer_labelled.end())
      drawProbedText(list, "model.layerlabel." + std::to_string(l), ImVec2(origin.x, y), label_color,
                     ("L" + std::to_string(l + 1)).c_str());
    for (int h = 0; h < c.n_head; ++h) {
      const ImVec2 p0(origin.x + column(h), y), p1(p0.x + tw, p0.y + th);
      s.renderer->drawTile(list, l, h, p0, view.contrast);
      if (l >= layers_shown)  // not computed yet: dimmed (the previous picture, or grey)
        list->AddRectFilled(p0, p1, IM_COL32(20, 20, 24, 160));
      probeRect("model.tile." + std::to_string(l) + "." + std::to_string(h), p0, p1);
      if (token >= 0) {  // the hovered token's row and column, at least a pixel wide
        const float ay = std::floor(static_cast<float>(token) * cell_y),
                    by = std::max(ay + 1, std::floor(static_cast<float>(token + 1) * cell_y));
        const float ax = std::floor(static_cast<float>(token) * cell_x),
                    bx = std::max(ax + 1, std::floor(static_cast<float>(token + 1) * cell_x));
        list->AddRect(ImVec2(p0.x, p0.y + ay), ImVec2(p1.x, p0.y + by), kRowHighlight);
        list->AddRect(ImVec2(p0.x + ax, p0.y), ImVec2(p0.x + bx, p1.y), kColumnHighlight);
      }
      if (ImGui::IsWindowHovered() && mouse.x >= p0.x && mouse.x < p1.x && mouse.y >= p0.y && mouse.y < p1.y) {
        list->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), IM_COL32_WHITE);
        const int i = std::min(n - 1, static_cast<int>((mouse.y - p0.y) / cell_y));
        const int j = std::min(n - 1, static_cast<int>((mouse.x - p0.x) / cell_x));
        const int blocks = std::min(n, std::max(tile_w, tile_h));  // as the renderer pools
        cellTooltip(s, kv, l, h, i, j, (n + blocks - 1) / blocks, mapWeighting(view, s).on);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
          s.layer = l, s.focus_head = h;
          view.run.zoom = CellView{0, 0, static_cast<float>(n), static_cast<float>(n)};
        }
      }
    }
    // The query heads of one kv head inside one frame, `thick` whole pixels wide (2 at ATTNSCOPE_UI_SCALE=2) and
    // a pixel clear of their tiles (none for GPT-2: each head is its own group). Its lines lie in the gaps, so no
    // tile pixel is covered.
    if (grouped)
      for (int h = 0; h < c.n_head;) {
        int end = h + 1;
        while (end < c.n_head && kv[static_cast<std::size_t>(end)] == kv[static_cast<std::size_t>(h)]) ++end;
        const float out = 1 + thick;
        const ImVec2 f0(origin.x + column(h) - out, y - out), f1(origin.x + column(end - 1) + tw + out, y + th + out);
        for (int k = 0; k < static_cast<int>(thick); ++k) {  // ImGui draws a 1-px rect on the pixels just inside
          const float in = static_cast<float>(k);
          list->AddRect(ImVec2(f0.x + in, f0.y + in), ImVec2(f1.x - in, f1.y - in), kGroupFrame);
        }
        probeRect("model.kvframe." + std::to_string(l) + "." + std::to_string(kv[static_cast<std::size_t>(h)]), f0, f1);
        h = end;
      }
  }
  const float grid_h = row_step * static_cast<float>(c.n_layer);
  probeRect("model.grid", origin, ImVec2(origin.x + grid_w, origin.y + grid_h));
  ImGui::Dummy(ImVec2(grid_w, grid_h));
}

void focusView(AppState& state, ViewState& view, ModelSession& s) {
  const model::HeadLayout& c = s.layout();
  const int n = s.forward().n, l = s.layer, h = s.focus_head;
  if (ImGui::Button("Back to the grid")) s.focus_head = -1;
  probeItem("model.back_to_grid");
  ImGui::SameLine();
  openLayerButton(state, view, "Open layer " + std::to_string(l + 1) + " as scene", l, "model.focus.open_layer");
  ImGui::SameLine();
  viewToggles(view, s);
  if (!s.focused()) return;
  const std::vector<int> kv = kvHeadOfEachHead(view);
  if (c.n_kv_head < c.n_head)
    ImGui::Text("Layer %d, head %d, KV head %d  (wheel: zoom, drag: pan)", l + 1, h + 1,
                kv[static_cast<std::size_t>(h)] + 1);
  else
    ImGui::Text("Layer %d, head %d  (wheel: zoom, drag: pan)", l + 1, h + 1);
  if (s.renderer->mapPending(l * c.n_head + h, s.revision())) {  // the map's tiles come off the UI thread (scripts: until no model.map_pending)
    ImGui::SameLine();
    ImGui::TextDisabled("computing the map...");
    probeItem("model.map_pending");
  }
  if (const std::string problem = s.renderer->mapProblem(); !problem.empty()) {
    errorText(problem);
    probeItem("model.map_problem");
  }
  probeNote("model.map_gpu_tiles", std::to_string(s.renderer->mapGpuTiles()));

  const std::vector<std::string>& labels = s.labels();
  CellView& z = view.run.zoom;
  const float all = static_cast<float>(n);
  const float zw = std::min(z.col1 - z.col0, all), zh = std::min(z.row1 - z.row0, all);
  z.col0 = std::clamp(z.col0, 0.0f, all - zw), z.row0 = std::clamp(z.row0, 0.0f, all - zh);
  z.col1 = z.col0 + zw, z.row1 = z.row0 + zh;
  const float line = ImGui::GetTextLineHeight();
  drawContrastControl(view.contrast);
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const float bar_w = modelColorBarWidth(s.renderer->mapTop(view.contrast), view.contrast);  // the colour bar's strip
  avail.x -= bar_w;
  const float label_w = std::min(queryLabelWidth(labels), 8 * line);
  float cell = std::min((avail.x - label_w) / zw, (avail.y - 1.2f * line) / zh);
  const bool turned = keyLabelsTurned(labels, cell);
  cell = mapCell(avail.x - label_w, avail.y - keyLabelHeight(labels, turned), zw, zh);
  const ImVec2 c0 = ImGui::GetCursorScreenPos();
  const ImVec2 m0(std::floor(c0.x + label_w), std::floor(c0.y));
  const ImVec2 m1(std::floor(m0.x + cell * zw), std::floor(m0.y + cell * zh));
  ImDrawList* list = ImGui::GetWindowDrawList();
  s.renderer->drawMap(list, s.sharedForward(), l * c.n_head + h, s.revision(), m0, m1, z, view.contrast,
                      mapWeighting(view, s), onGpu(state));
  probeRect("model.map", m0, m1);
  modelColorBar(ImVec2(m1.x + line * 0.5f, m0.y), m1.y - m0.y + line * 2, s.renderer->mapTop(view.contrast), view.contrast);
  drawAxisLabels(labels, labels, z, m0, m1, cell, label_w, turned);

  ImGui::SetCursorScreenPos(m0);
  ImGui::InvisibleButton("model_map", ImVec2(std::max(1.0f, m1.x - m0.x), std::max(1.0f, m1.y - m0.y)));
  const ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 0.0f)) {
    const float dx = io.MouseDelta.x / cell, dy = io.MouseDelta.y / cell;
    z.col0 -= dx, z.col1 -= dx, z.row0 -= dy, z.row1 -= dy;
  }
  if (ImGui::IsItemHovered()) {
    const float col = z.col0 + (io.MousePos.x - m0.x) / cell, row = z.row0 + (io.MousePos.y - m0.y) / cell;
    if (io.MouseWheel != 0) {  // zoom about the cell under the mouse, between 4 cells and the whole map
      const float factor = std::pow(0.85f, io.MouseWheel);
      const float w = std::clamp(zw * factor, std::min(4.0f, all), all);
      const float fx = (col - z.col0) / zw, fy = (row - z.row0) / zh;
      z = CellView{col - fx * w, row - fy * w, col - fx * w + w, row - fy * w + w};
    }
    const int i = static_cast<int>(std::floor(row)), j = static_cast<int>(std::floor(col));
    if (i >= 0 && i < n && j >= 0 && j < n) {
      const ImVec2 q0(m0.x + (static_cast<float>(j) - z.col0) * cell, m0.y + (static_cast<float>(i) - z.row0) * cell);
      list->AddRect(q0, ImVec2(q0.x + cell, q0.y + cell), IM_COL32_WHITE, 0, 0, 2.0f);
      cellTooltip(s, kv, l, h, i, j, 1, mapWeighting(view, s).on);
    }
  }
}

}  // namespace

std::vector<int> kvHeadOfEachHead(const ViewState& view) {
  if (!view.run.session || view.run.session->forward().n == 0) return {};
  const model::HeadLayout& layout = view.run.session->layout();
  std::vector<int> kv(static_cast<std::size_t>(layout.n_head));
  for (int h = 0; h < layout.n_head; ++h) kv[static_cast<std::size_t>(h)] = layout.kvHead(h);
  return kv;
}

void drawModelProgress(ViewState& view, const char* probe) {
  if (!view.run.session || !view.run.session->running()) return;
  ModelSession& s = *view.run.session;
  int done = s.layersDone(), total = s.layersTotal();
  std::string text = total > 0 ? "layer " + std::to_string(done) + " of " + std::to_string(total)
                               : std::string("loading the checkpoint...");
  if (const auto [sent, weights] = s.uploadDone(); weights > 0 && sent < weights) {  // the first run on the GPU
    text = "weights to the GPU: " + byteString(sent) + " of " + byteString(weights);
    done = static_cast<int>(1000.0 * static_cast<double>(sent) / static_cast<double>(weights)), total = 1000;
  }
  const float cancel_w = ImGui::CalcTextSize("Cancel").x + 2 * ImGui::GetStyle().FramePadding.x;
  ImGui::ProgressBar(total > 0 ? static_cast<float>(done) / static_cast<float>(total) : 0.0f,
                     ImVec2(ImGui::GetContentRegionAvail().x - cancel_w - ImGui::GetStyle().ItemSpacing.x, 0),
                     text.c_str());
  probeItem(std::string(probe) + ".progress");
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) s.cancel();
  probeItem(std::string(probe) + ".cancel");
}

void drawModelView(AppState& state, ViewState& view) {
  ModelSession& s = *view.run.session;
  if (s.forward().n > 0) {
    const model::HeadLayout& c = s.layout();
    ImGui::AlignTextToFramePadding();
    if (!s.tensorFile().empty())  // short: a file name can be long, and the button back sits on this line
      ImGui::Text("%s: %d x %d heads, %d tokens", s.title().c_str(), c.n_layer, c.n_head, s.forward().n);
    else if (c.n_kv_head < c.n_head)
      ImGui::Text("%s: %d layers x %d heads in %d KV groups, %d tokens", s.title().c_str(), c.n_layer, c.n_head,
                  c.n_kv_head, s.forward().n);
    else
      ImGui::Text("%s: %d layers x %d heads, %d tokens", s.title().c_str(), c.n_layer, c.n_head, s.forward().n);
    probeText("model.header", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
    // The button names the subject it switches to (the scene is kept while the model is on show): at the line's
    // end when it fits beside the header, else on a line of its own, never over the header's text.
    const std::string name = sceneName(state, view);
    const Scene& scene = state.scene();
    const std::string to_scene =
        (name == "scene" ? std::string("Show the scene") : "Show " + name) + " (" + std::to_string(scene.nQ()) +
        " tokens, " + std::to_string(scene.numHeads()) + (scene.numHeads() == 1 ? " head)" : " heads)");
    const float button_w = ImGui::CalcTextSize(to_scene.c_str()).x + 2 * ImGui::GetStyle().FramePadding.x;
    const float right = ImGui::GetWindowContentRegionMax().x - button_w;
    ImGui::SameLine();
    if (ImGui::GetCursorPosX() + ImGui::GetStyle().ItemSpacing.x <= right)
      ImGui::SameLine(right);
    else
      ImGui::NewLine();
    if (ImGui::Button(to_scene.c_str())) s.shown = false;
    probeItem("model.to_scene");
    probeText("model.to_scene.label", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
  }
  drawModelProgress(view, "model");
  if (!s.error.empty() && !s.running()) {
    if (s.cancelled)
      ImGui::TextDisabled("%s", s.error.c_str());
    else
      errorText(s.error);
  }
  if (!s.shown || s.forward().n == 0) return;
  if (!s.renderer) s.renderer = std::make_unique<RunMaps>();
  // The run's views: its heads (the grid, or one map full-size) or its rollout (runviews/rollout_view.cpp).
  if (view.run.rollout == 1) {
    drawRolloutView(view.run, view.contrast, s);
    return;
  }
  if (s.focused())
    focusView(state, view, s);
  else
    gridView(state, view, s);
}

void drawBackToModel(ViewState& view) {
  if (!view.run.session || view.run.session->forward().n == 0) return;
  const model::HeadLayout& c = view.run.session->layout();
  const std::string label = "Back to the model (" + view.run.session->title() + ", " +
                            std::to_string(c.n_layer) + " x " + std::to_string(c.n_head) + " heads)";
  if (ImGui::Button(label.c_str())) view.run.session->shown = true;
  probeItem("model.back");
}

}  // namespace attnscope::app
