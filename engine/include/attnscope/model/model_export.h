// A model's maps as files: the layers x heads grid and the rollout as PNG/SVG figures (the scene exporters'
// layout and renderers), every map as JSON with tokens or as NPY.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/model/model.h"
#include "attnscope/scene/scene_json.h"

namespace attnscope::model {

// Per layer (n_head, n) factors on each map's columns: head h's map of layer l becomes w_ij * scales[l](h, j)
// (value-norm weighting: valueNorms, model/head_finding.h). Null: the weights as they are.
using KeyScales = std::vector<Matrix>;

// One panel per (layer, head), layer by layer, n_head panels a row, the rows named "L1".. at the left and the
// columns "H1".. on top (a grid too tall to keep a layer a row wraps, each panel then titled "L1 H1"; every
// panel's HeatmapPanel::title is "L1 H1" either way); causal cells masked (none for
// an encoder, layout.causal false), and the cells a layer's sliding window (layout.window) hides.
// layer >= 0: only that layer's heads, titled "Head 1", wrapped into an about square grid (ceil(sqrt(n_head))
// columns: 16 heads 4 x 4). `name` ("GPT-2", "qwen3"; "" for none) leads the title: "GPT-2 layer 6: attention
// weights, 12 heads", "GPT-2: attention weights, 12 layers x 12 heads". Coloured under `contrast` (setContrast, export_layout.h); its tops are of
// the panels' values: the maps' cells, or, when the forward kept no maps, the pooled pixels' means.
// `scales` (value-norm weighting, KeyScales above): the maps weighted (weightedMap), the title's "attention
// weights" then "attention weights x value norms", the bar "weight x value norm" from 0 to the largest norm of
// the layers drawn (under a Fixed contrast; its top a weight of 1 on that key).
Figure modelGridFigure(const ForwardResult& forward, const HeadLayout& layout, const std::vector<std::string>& tokens,
                       int layer = -1, const MapContrast& contrast = {}, const std::string& name = "",
                       const KeyScales* scales = nullptr, const FigureSize& size = {});
// The rollout (n, n) as one map on 0..1 (or under `contrast`, its PerHead top the map's max); the upper triangle
// (zero for a causal model) masked, nothing for an encoder (causal false). Titled "<name> attention rollout".
Figure rolloutFigure(const Matrix& rollout, const std::vector<std::string>& tokens, bool causal = true,
                     const MapContrast& contrast = {}, const std::string& name = "");
// Bytes a grid figure of `panels` maps of (n, n) holds before it is drawn (each panel's copy of its map, its mask
// and its row and column labels, `token_bytes` of text each), from the shape alone; and a figure's image once
// laid out (the canvas, 3 bytes a pixel, and the encoded image, at most as large again): the budget checks.
std::size_t gridFigureBytes(std::int64_t panels, std::int64_t n, std::size_t token_bytes);
std::size_t figureImageBytes(const Figure& figure);
// The figure as PNG or SVG bytes (format Png or Svg).
std::string figureBytes(const Figure& figure, ExportFormat format);
// Png or Svg from the path's extension; InputError(field, "a path ending in .png or .svg", the path) otherwise.
ExportFormat figureFormat(const std::string& field, const std::string& path);

// A layers x heads map of one number per head (the window's Find heads: a head-type score, composition with a
// picked head, direct logit attribution), as it is drawn and as numbers. `shown` (layers, heads): the value each
// cell is coloured by on `map` from vmin to vmax; `numbers`: the scores themselves (NaN where a head has none,
// drawn masked). `bar_labels`: the colour bar's left, middle and right labels ("" : vmin, the middle, vmax).
struct LayerHeadValues {
  std::string title;        // "GPT-2 previous-token score"
  std::string scale_label;  // "previous-token score"
  std::string number_name;  // the CSV's value column: "score", "composition", "logit"
  Matrix shown, numbers;
  ColorMap map = ColorMap::Viridis;
  float vmin = 0, vmax = 1;
  std::vector<std::string> bar_labels;
};
// The figure: rows "Layer" (L1..), columns "Head" (H1..), heads with no number in the masked grey.
Figure layerHeadFigure(const LayerHeadValues& values);
// The numbers as CSV, `layer,head,<number_name>` (both from 1, as the window names them), one row a head, empty
// where a head has none; or as NPY, (layers, heads) float32, NaN there.
std::string layerHeadCsv(const LayerHeadValues& values);
std::string layerHeadNpy(const LayerHeadValues& values);

// Head `head` of `layer`'s map, each column j times (*scales)[layer](head, j) when scales is given.
Matrix weightedMap(const ForwardResult& forward, int layer, int head, const KeyScales* scales);

// {"format": "attnscope-model-result", "version": 1, "checkpoint", "model_type", "text", "token_ids", "tokens",
//  "n_layer", "n_head", "n_kv_head", "layers": [{"layer": L, "kv_head": [per head, from 1], "heads": [(n, n) per
//  head]}], "rollout": (n, n)}.
// With `scales`, "weighting": "value-norm" and the maps weighted (weightedMap; the rollout stays the weights'),
// else "weighting": "weight".
// layer >= 0: only that layer in "layers". `streamed`: the maps and the rollout go there as placeholders
// (formatJsonTo writes them; forward and rollout must outlive it) instead of into the tree.
nlohmann::ordered_json modelResultJson(const Model& model, const std::string& text, const std::vector<int>& ids,
                                       const ForwardResult& forward, const Matrix& rollout, int layer = -1,
                                       JsonMatrices* streamed = nullptr, const KeyScales* scales = nullptr);
// NPY float32: (layers, heads, n, n), or (heads, n, n) for one layer; whole, or handed to `sink` a map at a time.
// With `scales`, the maps weighted (weightedMap).
std::string modelResultNpy(const ForwardResult& forward, const HeadLayout& layout, int layer = -1,
                           const KeyScales* scales = nullptr);
void writeModelResultNpy(const ForwardResult& forward, const HeadLayout& layout, int layer,
                         const std::function<void(std::string_view)>& sink, const KeyScales* scales = nullptr);
// At most the bytes of that output (JSON, or NPY when `npy`) for n tokens, from the shapes alone: checked
// against the budget before the forward runs. text_bytes: the text's length.
std::size_t modelResultBytes(const HeadLayout& layout, int n, int layer, bool npy, std::size_t text_bytes);

}  // namespace attnscope::model
