// A checkpoint folder of any family attnscope reads, chosen by config.json's model_type (the registry,
// model/families.h), loaded into the one Weights, and its forward: every family on the one described forward
// (model/architecture.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attnscope/model/architecture.h"
#include "attnscope/model/forward.h"
#include "attnscope/model/tokenizer.h"

namespace attnscope::model {

struct Model {
  std::string dir;
  std::string model_type;  // config.json's ("gpt2" also when it names none): its row in the registry
  Tokenizer tokenizer;
  Weights weights;  // weights.arch: the family's description

  const Architecture& architecture() const { return weights.arch; }
  HeadLayout layout() const { return weights.arch.layout(); }
  int maxTokens() const { return weights.arch.max_positions; }  // n_positions or max_position_embeddings
};

// DIR/config.json's model_type picks the family (absent: GPT-2, as older GPT-2 configs name none; anything
// else refused naming the field); then that family's files. Token ids must fit vocab_size.
Model loadModel(const std::string& dir, std::size_t budget_bytes = 0);

// The one forward on the model's family (1 <= n <= maxTokens(), ids below vocab_size, the memory within the
// budget: InputError otherwise).
ForwardResult modelForward(const Model& model, const std::vector<int>& ids, const ForwardOptions& options = {},
                           std::size_t budget_bytes = 0);
// The same into `result`, reusing its matrices where the shapes match (the first touch of 4 n^2 bytes per map
// costs page faults that can take longer than the arithmetic).
void modelForwardInto(const Model& model, const std::vector<int>& ids, ForwardResult& result,
                      const ForwardOptions& options = {}, std::size_t budget_bytes = 0);
// The same forward over bare weights (the GPU forward's fallback when its run-time check fails).
void weightsForwardInto(const Weights& weights, const std::vector<int>& ids, ForwardResult& result,
                        const ForwardOptions& options = {}, std::size_t budget_bytes = 0);
// float32 bytes that forward keeps and needs for n tokens (forwardBytes of its description).
std::size_t modelForwardBytes(const Model& model, int n, const ForwardOptions& options);
// Layer `layer` as a scene (a forward with keep_ln1), through the one layer-scene builder: each query head's W_Q
// and b_Q, K/V heads (shared ones as kv_heads), RoPE on the rotary dims, q_norm / k_norm, W_O and b_O, the causal
// or sliding-window mask.
Scene modelLayerScene(const Model& model, const ForwardResult& forward, int layer, const std::vector<std::string>& tokens,
                      const std::string& description);

}  // namespace attnscope::model
