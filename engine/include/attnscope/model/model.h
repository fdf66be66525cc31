// A checkpoint folder of any family attnscope reads, chosen by config.json's model_type: GPT-2 (vocab.json +
// merges.txt) or the Llama family (llama, mistral, qwen2, qwen3; tokenizer.json), and its forward.
#pragma once

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "attnscope/model/gpt2.h"
#include "attnscope/model/llama.h"
#include "attnscope/model/tokenizer.h"

namespace attnscope::model {

struct Model {
  std::string dir;
  std::string model_type;  // "gpt2" (also when config.json names none), "llama", "mistral", "qwen2", "qwen3"
  Tokenizer tokenizer;
  std::variant<Gpt2Weights, LlamaWeights> weights;

  bool isGpt2() const { return std::holds_alternative<Gpt2Weights>(weights); }
  HeadLayout layout() const;
  int maxTokens() const;  // n_positions or max_position_embeddings
};

// DIR/config.json's model_type picks the family (absent: GPT-2, as older GPT-2 configs name none; anything
// else refused naming the field); then that family's files. Token ids must fit vocab_size.
Model loadModel(const std::string& dir, std::size_t budget_bytes = 0);

// The family's forward. Of `options`, a Llama-family forward takes keep_ln1 (what a layer scene starts from) and
// progress; the rest apply to GPT-2 only.
ForwardResult modelForward(const Model& model, const std::vector<int>& ids, const ForwardOptions& options = {},
                           std::size_t budget_bytes = 0);

}  // namespace attnscope::model
