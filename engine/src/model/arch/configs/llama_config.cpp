// config.json of the Llama family (llama, mistral, qwen2, qwen3), every field the forward depends on checked
// against what transformers' LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config accept, and defaulted as
// they default it. One line per refusal: "DIR/config.json: FIELD: expected ..., got ...".
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/family_configs.h"
#include "model/arch/configs/config_fields.h"

namespace attnscope::model {

namespace {

constexpr std::size_t kMaxLlamaConfigBytes = std::size_t{1} << 20;  // real ones are under 4 KB

// Each layer's window (0: full causal). Mistral: sliding_window for every layer when set. Qwen2 and Qwen3: only
// with use_sliding_window, on the layers layer_types marks "sliding_attention" (by default those from
// max_window_layers on), as Qwen2Config builds layer_types. Llama has no window.
std::vector<int> windows(const nlohmann::json& j, const std::string& path, const std::string& type, int n_layer) {
  std::vector<int> w(static_cast<std::size_t>(n_layer), 0);
  if (type == "llama") return w;
  if (type == "mistral") {
    if (has(j, "sliding_window")) std::fill(w.begin(), w.end(), intField(j, path, "sliding_window", 1, 1 << 30));
    return w;
  }
  if (!boolField(j, path, "use_sliding_window", false)) return w;
  const int size = intField(j, path, "sliding_window", 1, 1 << 30);
  if (has(j, "layer_types")) {
    const nlohmann::json& types = j["layer_types"];
    if (!types.is_array() || types.size() != static_cast<std::size_t>(n_layer))
      throw InputError(path + ": layer_types", "a list of num_hidden_layers (" + std::to_string(n_layer) + ") names",
                       describeJson(types));
    for (int l = 0; l < n_layer; ++l) {
      const nlohmann::json& t = types[static_cast<std::size_t>(l)];
      if (t != "full_attention" && t != "sliding_attention")
        throw InputError(path + ": layer_types[" + std::to_string(l) + "]", "full_attention or sliding_attention",
                         describeJson(t));
      if (t == "sliding_attention") w[static_cast<std::size_t>(l)] = size;
    }
    return w;
  }
  const int first = intField(j, path, "max_window_layers", 0, 1000, 28);  // Qwen2Config's default
  for (int l = first; l < n_layer; ++l) w[static_cast<std::size_t>(l)] = size;
  return w;
}

bool isLlamaType(const std::string& t) { return t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3"; }

}  // namespace

LlamaConfig loadLlamaConfig(const std::string& path) {
  return llamaConfigFromJson(readJsonFile(path, kMaxLlamaConfigBytes), path);
}

LlamaConfig llamaConfigFromJson(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path, "a JSON object", describeJson(j));
  LlamaConfig c;
  const nlohmann::json type = j.contains("model_type") ? j["model_type"] : nlohmann::json();
  if (!type.is_string() || !isLlamaType(type.get<std::string>()))
    throw InputError(path + ": model_type", "llama, mistral, qwen2 or qwen3", describeJson(type));
  c.model_type = type.get<std::string>();
  c.hidden = intField(j, path, "hidden_size", 1, 1 << 16);
  c.n_layer = intField(j, path, "num_hidden_layers", 1, 1000);
  c.n_head = intField(j, path, "num_attention_heads", 1, 256);
  c.n_kv_head = intField(j, path, "num_key_value_heads", 1, 256, c.n_head);  // absent: one per query head
  if (c.n_head % c.n_kv_head != 0)
    throw InputError(path + ": num_attention_heads",
                     "a multiple of num_key_value_heads (" + std::to_string(c.n_kv_head) + ")", std::to_string(c.n_head));
  if (has(j, "head_dim")) {
    c.head_dim = intField(j, path, "head_dim", 2, 1 << 14);
  } else if (c.hidden % c.n_head != 0) {
    throw InputError(path + ": hidden_size", "a multiple of num_attention_heads (" + std::to_string(c.n_head) +
                                                 ") when head_dim is not given", std::to_string(c.hidden));
  } else {
    c.head_dim = c.hidden / c.n_head;
  }
  if (c.head_dim % 2 != 0)  // RoPE turns pairs (t, t + head_dim / 2)
    throw InputError(path + ": head_dim", "an even number (RoPE rotates pairs of dimensions)", std::to_string(c.head_dim));
  c.intermediate = intField(j, path, "intermediate_size", 1, 1 << 20);
  c.vocab_size = intField(j, path, "vocab_size", 1, 10'000'000);
  c.max_positions = intField(j, path, "max_position_embeddings", 1, 1 << 24);
  c.rms_norm_eps = positiveNumber(j, path + ": ", "rms_norm_eps", 1.0, 1e-6);
  readRope(j, path, "rope_theta", c.rope_theta, c.rope_scaling);
  (void)ropeInverseFrequencies(c.rope_theta, c.head_dim, c.rope_scaling, path + ": rope");  // its own checks
  if (has(j, "hidden_act") && j["hidden_act"] != "silu")
    throw InputError(path + ": hidden_act", "silu (the SwiGLU MLP)", describeJson(j["hidden_act"]));
  if (boolField(j, path, "mlp_bias", false))
    throw InputError(path + ": mlp_bias", "false (none of the four families has MLP biases, and attnscope reads none)",
                     "true");
  const bool attention_bias = boolField(j, path, "attention_bias", false);
  c.qkv_bias = c.model_type == "qwen2" || (attention_bias && c.model_type != "mistral");
  c.o_bias = attention_bias && (c.model_type == "llama" || c.model_type == "qwen3");
  c.qk_norm = c.model_type == "qwen3";
  c.tie_word_embeddings = boolField(j, path, "tie_word_embeddings", false);
  c.window = windows(j, path, c.model_type, c.n_layer);
  return c;
}

Architecture describeLlama(const LlamaConfig& c) {
  Architecture a;
  a.model_type = c.model_type;
  a.n_layer = c.n_layer, a.n_head = c.n_head, a.n_kv_head = c.n_kv_head, a.head_dim = c.head_dim;
  a.hidden = c.hidden, a.intermediate = c.intermediate, a.vocab_size = c.vocab_size, a.max_positions = c.max_positions;
  a.max_positions_field = "max_position_embeddings";
  a.norm = NormKind::RmsNorm;
  a.norm_eps = c.rms_norm_eps;
  a.residual = Residual::Sequential;
  a.rotary_dims = c.head_dim;  // every dim of every head
  a.rope_theta = c.rope_theta;
  a.rope_scaling = c.rope_scaling;
  a.qk_norm = c.qk_norm;
  a.qkv = QkvStorage::Separate;
  a.qkv_bias = c.qkv_bias;
  a.o_bias = c.o_bias;
  a.mlp = MlpKind::Gated;
  a.activation = Activation::Silu;
  a.tie_word_embeddings = c.tie_word_embeddings;
  a.window = c.window;
  return a;
}

}  // namespace attnscope::model
