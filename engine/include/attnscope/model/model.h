// A checkpoint folder of any family attnscope reads, chosen by config.json's model_type: GPT-2 (vocab.json +
// merges.txt), the Llama family (llama, mistral, qwen2, qwen3; tokenizer.json) or GPT-NeoX / Pythia (gpt_neox;
// tokenizer.json), and its forward: every family on the one described forward (model/architecture.h).
#pragma once

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "attnscope/model/architecture.h"
#include "attnscope/model/gpt2.h"
#include "attnscope/model/llama.h"
#include "attnscope/model/tokenizer.h"

namespace attnscope::model {

struct Model {
  std::string dir;
  std::string model_type;  // "gpt2" (also when config.json names none), "llama", "mistral", "qwen2", "qwen3",
                           // "gpt_neox"
  Tokenizer tokenizer;
  // GPT-2's own weights (built in place by tests and the bench), the Llama family's, or another described family's.
  std::variant<Gpt2Weights, LlamaWeights, Weights> weights;

  bool isGpt2() const { return std::holds_alternative<Gpt2Weights>(weights); }
  Architecture architecture() const;  // the family's description
  HeadLayout layout() const;
  int maxTokens() const;  // n_positions or max_position_embeddings
};

// DIR/config.json's model_type picks the family (absent: GPT-2, as older GPT-2 configs name none; anything
// else refused naming the field); then that family's files. Token ids must fit vocab_size.
Model loadModel(const std::string& dir, std::size_t budget_bytes = 0);

// The one forward on the model's family.
ForwardResult modelForward(const Model& model, const std::vector<int>& ids, const ForwardOptions& options = {},
                           std::size_t budget_bytes = 0);
// float32 bytes that forward keeps and needs for n tokens (forwardBytes of its description).
std::size_t modelForwardBytes(const Model& model, int n, const ForwardOptions& options);
// Layer `layer` as a scene (a forward with keep_ln1), through the one layer-scene builder.
Scene modelLayerScene(const Model& model, const ForwardResult& forward, int layer, const std::vector<std::string>& tokens,
                      const std::string& description);

}  // namespace attnscope::model
