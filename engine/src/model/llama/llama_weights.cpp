// The Llama family's weights (llama, mistral, qwen2, qwen3) through the one loader (model/arch/loader.cpp): its
// config described (llama_config.cpp), its tensors read through its name table. Its forward and layer scene are
// the one forward's (model_forward.cpp's entry points).
#include "attnscope/model/llama.h"

namespace attnscope::model {

std::size_t llamaWeightBytes(const LlamaConfig& c) {
  const std::size_t d = static_cast<std::size_t>(c.hidden), q = static_cast<std::size_t>(c.qDim()),
                    kv = static_cast<std::size_t>(c.kvDim()), inter = static_cast<std::size_t>(c.intermediate);
  const std::size_t per_layer = 2 * d + (q + 2 * kv) * (d + 1) + 2 * static_cast<std::size_t>(c.head_dim) +
                                d * q + d + 3 * inter * d;
  return 4 * (static_cast<std::size_t>(c.vocab_size) * d + static_cast<std::size_t>(c.n_layer) * per_layer + d);
}

LlamaWeights loadLlamaWeights(const std::string& dir, const LlamaConfig& c, std::size_t budget_bytes) {
  LlamaWeights w;
  static_cast<Weights&>(w) = loadWeights(dir, describeLlama(c), budget_bytes);
  w.config = c;
  return w;
}

}  // namespace attnscope::model
