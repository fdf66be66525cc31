// The model in the centre pane: the grid, the token strip, one map full-size, progress and the way back.
#include "window/model/model_view.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "attnscope/compute/tiles.h"
#include "window/model/model_grid_renderer.h"
#include "window/model/model_session.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// Row and column highlight of the token hovered in the strip: its query row (what it reads) and its key column
// (who reads it), in two colours that no viridis entry has.
constexpr ImU32 kRowHighlight = IM_COL32(255, 60, 60, 255);
constexpr ImU32 kColumnHighlight = IM_COL32(255, 255, 255, 255);

const char* kWhat = "GPT-2";

// A cell's tooltip: layer and head from 1, the kv head where heads share one, positions from 0 with their tokens.
void cellTooltip(const ModelSession& s, const std::vector<int>& kv, int layer, int head, int i, int j, int pooled) {
  const int n_head = s.checkpoint()->weights.config.n_head;
  const std::vector<std::string>& labels = s.labels();
  ImGui::BeginTooltip();
  ImGui::Text("Layer %d, head %d", layer + 1, head + 1);
  const bool grouped = std::count(kv.begin(), kv.end(), kv[static_cast<std::size_t>(head)]) > 1;
  if (grouped) ImGui::Text("kv head %d (shared)", kv[static_cast<std::size_t>(head)] + 1);
  ImGui::Text("query  %s  (position %d)", labels[static_cast<std::size_t>(i)].c_str(), i);
  ImGui::Text("key    %s  (position %d)", labels[static_cast<std::size_t>(j)].c_str(), j);
  if (j > i)
    ImGui::TextUnformatted("masked (causal: a later token)");
  else
    ImGui::Text("weight %.4f", s.forward().map(layer, head, n_head)(i, j));
  if (pooled > 1) ImGui::TextDisabled("each pixel shows the largest of ~%d x %d cells", pooled, pooled);
  ImGui::EndTooltip();
}

// The tokens in a strip of equal cells over [x0, x0 + width); returns the hovered token or -1.
int tokenStrip(const std::vector<std::string>& labels, float x0, float width) {
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const float y0 = ImGui::GetCursorScreenPos().y, h = line * 1.3f;
  const int n = static_cast<int>(labels.size());
  const float w = width / static_cast<float>(n);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  int hovered = -1;
  if (ImGui::IsWindowHovered() && mouse.y >= y0 && mouse.y < y0 + h && mouse.x >= x0 && mouse.x < x0 + width)
    hovered = std::min(n - 1, static_cast<int>((mouse.x - x0) / w));
  for (int t = 0; t < n; ++t) {
    const float a = x0 + static_cast<float>(t) * w, b = a + w;
    const bool on = t == hovered;
    probeRect("model.token." + std::to_string(t), ImVec2(a, y0), ImVec2(b, y0 + h));
    list->AddRectFilled(ImVec2(a, y0), ImVec2(std::max(a + 1, b - 1), y0 + h),
                        on ? IM_COL32(90, 90, 120, 255) : IM_COL32(45, 45, 55, 255));
    const std::string label = axisLabel(labels[static_cast<std::size_t>(t)]);
    const float tw = ImGui::CalcTextSize(label.c_str()).x;
    if (tw + 4 <= w) list->AddText(ImVec2(a + (w - tw) * 0.5f, y0 + line * 0.15f), ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
  }
  probeRect("model.strip", ImVec2(x0, y0), ImVec2(x0 + width, y0 + h));
  ImGui::Dummy(ImVec2(width, h + 2));
  if (hovered >= 0) {
    ImGui::BeginTooltip();
    ImGui::Text("%s  (position %d)", labels[static_cast<std::size_t>(hovered)].c_str(), hovered);
    ImGui::TextDisabled("red: the row it reads from; white: the column of those that read it");
    ImGui::EndTooltip();
  }
  return hovered;
}

void gridView(AppState& state, ViewState& view, ModelSession& s) {
  const model::Gpt2Config& c = s.checkpoint()->weights.config;
  const model::ForwardResult& f = s.forward();
  const int n = f.n;
  const float line = ImGui::GetTextLineHeight();
  const float label_w = std::floor(ImGui::CalcTextSize("L00").x + line * 0.5f), gap = 2;  // whole pixels

  // Opening a layer as the scene: a stepper and a button on one line.
  int layer_shown = s.scene_layer + 1;  // layers counted from 1 in the window
  if (stepperInt("layer", "model.layer", layer_shown, 1, c.n_layer)) s.scene_layer = layer_shown - 1;
  ImGui::SameLine();
  if (ImGui::Button("Open as scene")) openModelLayerAsScene(state, view, s.scene_layer);
  probeItem("model.open_layer");

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float strip_h = line * 1.3f + 2, header_h = line + 2;
  const float fit = std::min((avail.x - label_w) / static_cast<float>(c.n_head),
                             (avail.y - strip_h - header_h) / static_cast<float>(c.n_layer));
  const int tile = static_cast<int>(std::clamp(std::floor(fit - gap), 4.0f, 256.0f));
  const float step = static_cast<float>(tile) + gap;
  s.renderer->syncGrid(f, c.n_layer, c.n_head, s.revision(), tile);

  const ImVec2 start = ImGui::GetCursorScreenPos();
  const int token = tokenStrip(s.labels(), start.x + label_w, step * static_cast<float>(c.n_head) - gap);
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ImVec2 header = ImGui::GetCursorScreenPos();
  for (int h = 0; h < c.n_head; ++h)
    list->AddText(ImVec2(header.x + label_w + static_cast<float>(h) * step, header.y),
                  ImGui::GetColorU32(ImGuiCol_TextDisabled), ("H" + std::to_string(h + 1)).c_str());
  ImGui::Dummy(ImVec2(1, header_h));
  const ImVec2 origin(std::floor(ImGui::GetCursorScreenPos().x), std::floor(ImGui::GetCursorScreenPos().y));
  const std::vector<int> kv = kvHeadOfEachHead(view);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const float t = static_cast<float>(tile), cell = t / static_cast<float>(n);
  for (int l = 0; l < c.n_layer; ++l) {
    const float y = origin.y + static_cast<float>(l) * step;
    list->AddText(ImVec2(origin.x, y), ImGui::GetColorU32(ImGuiCol_Text), ("L" + std::to_string(l + 1)).c_str());
    for (int h = 0; h < c.n_head; ++h) {
      const ImVec2 p0(origin.x + label_w + static_cast<float>(h) * step, y), p1(p0.x + t, p0.y + t);
      s.renderer->drawTile(list, l, h, p0);
      probeRect("model.tile." + std::to_string(l) + "." + std::to_string(h), p0, p1);
      if (token >= 0) {  // the hovered token's row and column, at least a pixel wide
        const float a = std::floor(static_cast<float>(token) * cell), b = std::max(a + 1, std::floor((token + 1) * cell));
        list->AddRect(ImVec2(p0.x, p0.y + a), ImVec2(p1.x, p0.y + b), kRowHighlight);
        list->AddRect(ImVec2(p0.x + a, p0.y), ImVec2(p0.x + b, p1.y), kColumnHighlight);
      }
      if (ImGui::IsWindowHovered() && mouse.x >= p0.x && mouse.x < p1.x && mouse.y >= p0.y && mouse.y < p1.y) {
        list->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), IM_COL32_WHITE);
        const int i = std::min(n - 1, static_cast<int>((mouse.y - p0.y) / cell));
        const int j = std::min(n - 1, static_cast<int>((mouse.x - p0.x) / cell));
        cellTooltip(s, kv, l, h, i, j, n > tile ? (n + tile - 1) / tile : 1);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
          s.focus_layer = l, s.focus_head = h;
          view.model_zoom = CellView{0, 0, static_cast<float>(n), static_cast<float>(n)};
        }
      }
    }
    // Heads sharing a kv head framed together (none for GPT-2: each head is its own group).
    for (int h = 0; h < c.n_head;) {
      int end = h + 1;
      while (end < c.n_head && kv[static_cast<std::size_t>(end)] == kv[static_cast<std::size_t>(h)]) ++end;
      if (end - h > 1)
        list->AddRect(ImVec2(origin.x + label_w + static_cast<float>(h) * step - gap, y - gap),
                      ImVec2(origin.x + label_w + static_cast<float>(end) * step - 1, y + t + gap),
                      IM_COL32(230, 160, 60, 255));
      h = end;
    }
  }
  probeRect("model.grid", origin, ImVec2(origin.x + label_w + step * static_cast<float>(c.n_head),
                                         origin.y + step * static_cast<float>(c.n_layer)));
  ImGui::Dummy(ImVec2(label_w + step * static_cast<float>(c.n_head), step * static_cast<float>(c.n_layer)));
}

void focusView(AppState& state, ViewState& view, ModelSession& s) {
  const model::Gpt2Config& c = s.checkpoint()->weights.config;
  const int n = s.forward().n, l = s.focus_layer, h = s.focus_head;
  if (ImGui::Button("Back to the grid")) s.focus_layer = s.focus_head = -1;
  probeItem("model.back_to_grid");
  ImGui::SameLine();
  if (ImGui::Button(("Open layer " + std::to_string(l + 1) + " as scene").c_str())) openModelLayerAsScene(state, view, l);
  probeItem("model.focus.open_layer");
  if (s.focus_layer < 0) return;
  ImGui::Text("Layer %d, head %d  (wheel: zoom, drag: pan)", l + 1, h + 1);

  const std::vector<std::string>& labels = s.labels();
  CellView& z = view.model_zoom;
  const float all = static_cast<float>(n);
  const float zw = std::min(z.col1 - z.col0, all), zh = std::min(z.row1 - z.row0, all);
  z.col0 = std::clamp(z.col0, 0.0f, all - zw), z.row0 = std::clamp(z.row0, 0.0f, all - zh);
  z.col1 = z.col0 + zw, z.row1 = z.row0 + zh;
  const float line = ImGui::GetTextLineHeight();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float label_w = std::min(queryLabelWidth(labels), 8 * line);
  float cell = std::min((avail.x - label_w) / zw, (avail.y - 1.2f * line) / zh);
  const bool turned = keyLabelsTurned(labels, cell);
  cell = std::max(0.01f, std::min((avail.x - label_w) / zw, (avail.y - keyLabelHeight(labels, turned)) / zh));
  const ImVec2 c0 = ImGui::GetCursorScreenPos();
  const ImVec2 m0(std::floor(c0.x + label_w), std::floor(c0.y));
  const ImVec2 m1(std::floor(m0.x + cell * zw), std::floor(m0.y + cell * zh));
  ImDrawList* list = ImGui::GetWindowDrawList();
  s.renderer->drawMap(list, s.forward(), l * c.n_head + h, s.revision(), m0, m1, z);
  probeRect("model.map", m0, m1);
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
      cellTooltip(s, kvHeadOfEachHead(view), l, h, i, j, 1);
    }
  }
}

}  // namespace

bool modelShown(const ViewState& view) {
  return view.model && view.model->shown && (view.model->forward().n > 0 || view.model->running());
}

std::vector<int> kvHeadOfEachHead(const ViewState& view) {
  // Hook for grouped-query checkpoints: when the engine reads kv heads, head h's group comes from the config.
  const int heads = view.model && view.model->checkpoint() ? view.model->checkpoint()->weights.config.n_head : 0;
  std::vector<int> kv(static_cast<std::size_t>(heads));
  for (int h = 0; h < heads; ++h) kv[static_cast<std::size_t>(h)] = h;
  return kv;
}

void drawModelProgress(ViewState& view, const char* probe) {
  if (!view.model || !view.model->running()) return;
  ModelSession& s = *view.model;
  const int done = s.layersDone(), total = s.layersTotal();
  const std::string text = total > 0 ? "layer " + std::to_string(done) + " of " + std::to_string(total)
                                     : std::string("loading the checkpoint...");
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
  ModelSession& s = *view.model;
  if (s.forward().n > 0) {
    const model::Gpt2Config& c = s.checkpoint()->weights.config;
    ImGui::AlignTextToFramePadding();
    ImGui::Text("%s: %d layers x %d heads, %d tokens", kWhat, c.n_layer, c.n_head, s.forward().n);
    const char* back = "Scene's heads";
    ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowContentRegionMax().x - ImGui::CalcTextSize(back).x -
                                                          2 * ImGui::GetStyle().FramePadding.x));
    if (ImGui::Button(back)) s.shown = false;
    probeItem("model.to_scene");
  }
  drawModelProgress(view, "model");
  if (!s.error.empty() && !s.running()) {
    if (s.cancelled)
      ImGui::TextDisabled("%s", s.error.c_str());
    else
      errorText(s.error);
  }
  if (!s.shown || s.forward().n == 0) return;
  if (!s.renderer) s.renderer = std::make_unique<ModelGridRenderer>();
  if (s.focus_layer >= 0)
    focusView(state, view, s);
  else
    gridView(state, view, s);
}

void drawBackToModel(ViewState& view) {
  if (!view.model || view.model->forward().n == 0) return;
  const model::Gpt2Config& c = view.model->checkpoint()->weights.config;
  const std::string label = "Back to the model (" + std::string(kWhat) + ", " + std::to_string(c.n_layer) + " x " +
                            std::to_string(c.n_head) + " heads)";
  if (ImGui::Button(label.c_str())) view.model->shown = true;
  probeItem("model.back");
}

void openModelLayerAsScene(AppState& state, ViewState& view, int layer) {
  ModelSession& s = *view.model;
  const model::Checkpoint& ck = *s.checkpoint();
  const std::string text = s.ranText().size() > 200 ? s.ranText().substr(0, 200) + "..." : s.ranText();
  state.replaceScene("open GPT-2 layer",
                     model::layerScene(ck.weights, s.forward(), layer, s.labels(),
                                       "GPT-2 checkpoint " + ck.dir + ", layer " + std::to_string(layer + 1) + " of " +
                                           std::to_string(ck.weights.config.n_layer) + " (from 1), text: \"" + text +
                                           "\""));
  view.focus_head = -1;
  s.shown = false;
}

}  // namespace attnscope::app
