// Each family's config reader (model/arch/configs/): config.json's fields checked against what transformers'
// config class accepts, defaulted as it defaults them, and described as an Architecture. One line per refusal:
// "PATH: FIELD: expected ..., got ...". The family registry (model/families.h) picks the reader by model_type; the
// fuzzers and the readers' own tests call them directly, on parsed bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnscope/compute/rope.h"
#include "attnscope/model/architecture.h"

namespace attnscope::model {

// --- GPT-2 (arch/configs/gpt2_config.cpp)
struct Gpt2Config {
  int n_layer = 0, n_head = 0, n_embd = 0, n_positions = 0, vocab_size = 0;
  float layer_norm_epsilon = 1e-5f;
  int headDim() const { return n_embd / n_head; }
};

// Reads and checks config.json (`path` names it in errors): the six fields present, positive, n_embd a
// multiple of n_head, n_head at most 64 (a scene's limit); activation_function, when given, GPT-2's tanh GELU.
// config.json's fields checked; `name` (the path) starts every error. loadGpt2Config reads the file through
// readJsonFile (at most 1 MiB, nested at most 64 deep); the fuzzer calls gpt2ConfigFromJson on parsed bytes.
Gpt2Config gpt2ConfigFromJson(const nlohmann::json& j, const std::string& name);
Gpt2Config loadGpt2Config(const std::string& path);

// GPT-2's config as the one forward's description: LayerNorm, learned positions, fused Conv1D c_attn, GELU (tanh).
Architecture describeGpt2(const Gpt2Config& config);

// --- The Llama family: llama, mistral, qwen2, qwen3 (arch/configs/llama_config.cpp)
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
// The config as the one forward's description: RMSNorm, RoPE on every dim, separate q/k/v, SwiGLU.
Architecture describeLlama(const LlamaConfig& config);

// --- The other families, read straight into a description
// GPT-NeoX / Pythia's config.json (model_type gpt_neox) checked, one line per refusal naming `path` and the field:
// hidden_size a multiple of num_attention_heads; rotary_pct (or partial_rotary_factor, or v5's rope_parameters)
// in (0, 1] giving an even number of rotary dims; rotary_emb_base / rope_theta; use_parallel_residual;
// layer_norm_eps; hidden_act gelu (erf), gelu_new / gelu_pytorch_tanh (tanh) or relu-free; attention_bias.
Architecture neoxArchitectureFromJson(const nlohmann::json& j, const std::string& path);

// Gemma's config.json (model_type gemma, gemma2, gemma3_text, or gemma3 with its text_config), checked, one line
// per refusal naming `path` and the field: head_dim, hidden_activation (GeGLU), query_pre_attn_scalar, the soft
// caps, sliding_window with layer_types / sliding_window_pattern, rope_theta / rope_local_base_freq / rope_scaling
// or v5's rope_parameters (per layer type for Gemma 3), torch_dtype for the embedding's scale.
Architecture gemmaArchitectureFromJson(const nlohmann::json& j, const std::string& path);
// Phi-3 (phi3), OLMo 2 (olmo2) and Mixtral (mixtral) config.json checked (model/arch/configs/llama_kin_config.cpp), one
// line per refusal naming `path` and the field: the Llama family's fields, and Phi-3's partial_rotary_factor (an
// even number of rotary dims), Mixtral's num_local_experts and num_experts_per_tok (1 to num_local_experts), OLMo 2
// without attention biases.
Architecture llamaKinArchitectureFromJson(const nlohmann::json& j, const std::string& path);
// BERT's and RoBERTa's config.json (model_type bert, roberta; arch/configs/bert_config.cpp) checked, one line per refusal
// naming `path` and the field: position_embedding_type absolute only, type_vocab_size >= 1, is_decoder false,
// hidden_act gelu (erf) or a tanh GELU, layer_norm_eps; RoBERTa's pad_token_id leaving positions.
Architecture encoderArchitectureFromJson(const nlohmann::json& j, const std::string& path);

}  // namespace attnscope::model
