// Llama-family checkpoints (Hugging Face folders of model_type llama, mistral, qwen2 and qwen3): config.json
// checked, weights read from model.safetensors or the shards of model.safetensors.index.json, and the forward
// (RMSNorm, RoPE, grouped-query attention, SwiGLU) keeping every layer's per-head maps or, past the maps limit,
// what tiles recompute them from.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnscope/compute/rope.h"
#include "attnscope/model/architecture.h"
#include "attnscope/model/gpt2.h"
#include "attnscope/scene/scene.h"
#include "attnscope/types.h"

namespace attnscope::model {

struct LlamaConfig {
  std::string model_type;  // "llama", "mistral", "qwen2" or "qwen3"
  int n_layer = 0, n_head = 0, n_kv_head = 0, head_dim = 0;
  int hidden = 0, intermediate = 0, vocab_size = 0, max_positions = 0;
  double rms_norm_eps = 1e-6, rope_theta = 10000;
  RopeScaling rope_scaling;
  bool qkv_bias = false;  // q_proj, k_proj, v_proj carry a bias (Qwen2 always; attention_bias elsewhere)
  bool o_bias = false;    // o_proj carries a bias (attention_bias in Llama and Qwen3)
  bool qk_norm = false;   // Qwen3: q_norm and k_norm, RMSNorm over head_dim, before RoPE
  bool tie_word_embeddings = false;
  // Per layer, the keys a query sees: 0 = every earlier key; W = the last W keys, itself included
  // (key j for query i when i - W < j <= i, as transformers' sliding_window_causal_mask_function).
  std::vector<int> window;

  int qDim() const { return n_head * head_dim; }
  int kvDim() const { return n_kv_head * head_dim; }
  HeadLayout layout() const {
    HeadLayout l(n_layer, n_head, n_kv_head);
    l.window = window;
    return l;
  }
};

// config.json's fields checked (`path` starts every error): model_type one of the four; the sizes present and
// positive; num_attention_heads a multiple of num_key_value_heads; head_dim even; hidden_act silu; rope_scaling
// null, default, linear or llama3; sliding_window as the family switches it on. The fuzzer calls the
// FromJson form on parsed bytes.
LlamaConfig llamaConfigFromJson(const nlohmann::json& j, const std::string& path);
LlamaConfig loadLlamaConfig(const std::string& path);
bool isLlamaFamily(const std::string& model_type);

// The loaded weights (the described form, model/architecture.h) and the config they were read for.
struct LlamaWeights : Weights {
  LlamaConfig config;
};

// The config as the one forward's description: RMSNorm, RoPE on every dim, separate q/k/v, SwiGLU.
Architecture describeLlama(const LlamaConfig& config);

// float32 bytes the loaded weights take (lm_head is checked but not loaded: the maps do not need logits).
std::size_t llamaWeightBytes(const LlamaConfig& config);

// Reads DIR/model.safetensors, or the shards DIR/model.safetensors.index.json's weight_map names: every tensor
// the config implies present in the file the index names, F32/F16/BF16 with its shape; the float32 weights
// checked against `budget_bytes` (0 = defaultMemoryBudget()) before any is read.
LlamaWeights loadLlamaWeights(const std::string& dir, const LlamaConfig& config, std::size_t budget_bytes = 0);

// float32 bytes the forward keeps and its activations need for n tokens: the maps while `maps` keeps them
// (forwardKeepsMaps), else per layer Q, K once per kv head and m, l per query head, O(n (q_dim + kv_dim)); with
// keep_ln1, also each layer's input_layernorm output, n_layer x (n, hidden).
std::size_t llamaForwardBytes(const LlamaConfig& config, int n, bool keep_ln1 = false,
                              MapPolicy maps = MapPolicy::Auto);

// The forward in float32 on the CPU: x = embed[ids]; per layer x += o_proj(attn(rms(x))), x += down(silu(gate
// rms(x)) * up rms(x)); then the final norm into ForwardResult::hidden. Positions 0..n-1. 1 <= n <=
// max_position_embeddings, ids < vocab_size, memory within the budget (InputError otherwise).
// keep_ln1: ForwardResult::ln1 keeps each layer's input_layernorm output (n, hidden), what a layer scene starts from.
// `progress`, as ForwardOptions::progress: called after each layer with the layers done; false stops
// (ForwardCancelled). `maps`, as ForwardOptions::maps: past the limit attention runs flash-style, no map written.
ForwardResult llamaForward(const LlamaWeights& weights, const std::vector<int>& ids, std::size_t budget_bytes = 0,
                           bool keep_ln1 = false, const std::function<bool(int layers_done)>& progress = {},
                           MapPolicy maps = MapPolicy::Auto);

// Layer `layer`'s attention as a scene (the one builder, model/arch/layer_scene.cpp) over forward.ln1[layer] (a
// forward with keep_ln1): each query head's W_Q (hidden, head_dim) and b_Q; with fewer key/value heads than query
// heads, "kv_heads" holding each K/V head's W_K, W_V and biases; rope (theta, dims = head_dim, the config's
// scaling); Qwen3's q_norm and k_norm; W_O = o_proj^T with its bias; the causal mask, or the layer's sliding window
// as an explicit mask; scale 1/sqrt(head_dim). Both backends compute the forward's maps from it.
Scene llamaLayerScene(const LlamaWeights& weights, const ForwardResult& forward, int layer,
                      const std::vector<std::string>& tokens, const std::string& description);

}  // namespace attnscope::model
