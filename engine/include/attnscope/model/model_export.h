// A model's maps as files: the layers x heads grid and the rollout as PNG/SVG figures (the scene exporters'
// layout and renderers), every map as JSON with tokens or as NPY.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/model/gpt2.h"

namespace attnscope::model {

// One panel per (layer, head), layer by layer, n_head panels a row, titled "L0 H0"; causal cells masked.
// layer >= 0: only that layer's heads.
Figure modelGridFigure(const ForwardResult& forward, const Gpt2Config& config, const std::vector<std::string>& tokens,
                       int layer = -1);
// The rollout (n, n) as one map on 0..1; the upper triangle (zero for a causal model) masked.
Figure rolloutFigure(const Matrix& rollout, const std::vector<std::string>& tokens);
// The figure as PNG or SVG bytes (format Png or Svg).
std::string figureBytes(const Figure& figure, ExportFormat format);

// {"format": "attnscope-model-result", "version": 1, "checkpoint", "text", "token_ids", "tokens",
//  "n_layer", "n_head", "layers": [{"layer": L, "heads": [(n, n) per head]}], "rollout": (n, n)}.
// layer >= 0: only that layer in "layers".
nlohmann::ordered_json modelResultJson(const Checkpoint& checkpoint, const std::string& text,
                                       const std::vector<int>& ids, const ForwardResult& forward, const Matrix& rollout,
                                       int layer = -1);
// NPY float32: (layers, heads, n, n), or (heads, n, n) for one layer.
std::string modelResultNpy(const ForwardResult& forward, const Gpt2Config& config, int layer = -1);

}  // namespace attnscope::model
