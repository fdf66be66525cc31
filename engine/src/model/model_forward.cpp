// The forward's checks and entry points: any Model's on the one forward (model/arch/forward.cpp),
// attention rollout, a layer opened as a Scene through the one builder (model/arch/layer_scene.cpp).
#include <algorithm>
#include <cmath>
#include <utility>

#include "attnscope/error.h"
#include "attnscope/model/model.h"
#include "attnscope/scene/scene.h"
#include "model/arch/model_view.h"
#include "model/forward_shared.h"
#include "model/arch/stage_timings.h"

namespace attnscope::model {

void checkLayerSceneInput(const ForwardResult& forward, int n_layer, int layer, const std::vector<std::string>& tokens) {
  if (layer < 0 || layer >= n_layer)
    throw InputError("layer", "0 to " + std::to_string(n_layer - 1), std::to_string(layer));
  if (static_cast<int>(forward.ln1.size()) != n_layer)
    throw InputError("forward.ln1", std::to_string(n_layer) + " layers (a forward with keep_ln1)",
                     std::to_string(forward.ln1.size()));
  if (static_cast<int>(tokens.size()) != forward.n)
    throw InputError("tokens", std::to_string(forward.n) + " labels", std::to_string(tokens.size()));
}

void checkForwardInput(const std::vector<int>& ids, int max_tokens, const char* max_name, int vocab_size,
                       std::size_t need_bytes, std::size_t budget_bytes) {
  const int n = static_cast<int>(ids.size());
  if (n < 1 || n > max_tokens)
    throw InputError("tokens", "1 to " + std::to_string(max_tokens) + " (" + max_name + ")", std::to_string(n));
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab_size)
      throw InputError("tokens[" + std::to_string(i) + "]", "an id below vocab_size " + std::to_string(vocab_size),
                       std::to_string(ids[i]));
  const std::size_t budget = budget_bytes ? budget_bytes : defaultMemoryBudget();
  if (need_bytes > budget)
    throw InputError("forward", "at most " + byteString(budget) + " for maps and activations (the memory budget)",
                     byteString(need_bytes) + " for " + std::to_string(n) + " tokens");
}

InputError stageOverflow(int layer, const std::string& stage, long token) {
  // layer: the block's index, named from 1 as everywhere (h.0 is layer 1); -1 before the blocks.
  const std::string where = layer < 0 ? stage : "layer " + std::to_string(layer + 1) + ", " + stage;
  return InputError("forward", "finite activations (float32)",
                    "a non-finite value at " + where + ", token " + std::to_string(token) +
                        " (the weights are finite, but this stage overflows float32)");
}

// (Here, not beside loadModel: the fuzz targets link the loaders without any forward.)
ForwardResult modelForward(const Model& model, const std::vector<int>& ids, const ForwardOptions& options,
                           std::size_t budget_bytes) {
  ForwardResult r;
  modelForwardInto(model, ids, r, options, budget_bytes);
  return r;
}

void modelForwardInto(const Model& model, const std::vector<int>& ids, ForwardResult& result,
                      const ForwardOptions& options, std::size_t budget_bytes) {
  forwardInto(viewOf(model), ids, result, options, budget_bytes);
}

void weightsForwardInto(const Weights& weights, const std::vector<int>& ids, ForwardResult& result,
                        const ForwardOptions& options, std::size_t budget_bytes) {
  forwardInto(viewOf(weights), ids, result, options, budget_bytes);
}

std::size_t modelForwardBytes(const Model& model, int n, const ForwardOptions& options) {
  return forwardBytes(model.architecture(), n, options.keep_ln1, options.maps);
}

Scene modelLayerScene(const Model& model, const ForwardResult& forward, int layer, const std::vector<std::string>& tokens,
                      const std::string& description) {
  return layerSceneOf(viewOf(model), forward, layer, tokens, description);
}

ModelView viewOf(const Model& model) { return viewOf(model.weights); }

Matrix attentionRollout(const ForwardResult& forward, const HeadLayout& c) {
  StageTimings timings("attention rollout");
  const int n = forward.n;
  Matrix rollout = Matrix::Identity(n, n);  // (n, n)
  for (int l = 0; l < c.n_layer; ++l) {
    Matrix a = Matrix::Zero(n, n);
    for (int head = 0; head < c.n_head; ++head) a += forward.map(l * c.n_head + head);  // one map at a time
    a = 0.5f * a / static_cast<float>(c.n_head) + 0.5f * Matrix::Identity(n, n);
    a.array().colwise() /= a.rowwise().sum().array();  // rows sum to 1 (already so, but for rounding)
    rollout = (a * rollout).eval();
  }
  timings.mark("mean over heads, products");
  return rollout;
}

}  // namespace attnscope::model
