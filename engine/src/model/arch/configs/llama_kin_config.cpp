// Phi-3 (phi3), OLMo 2 (olmo2) and Mixtral (mixtral) config.json as descriptions. Each is the Llama family's
// fields (read and checked by llamaConfigFromJson, as Mistral for Phi-3 and Mixtral: sliding_window on every
// layer when set; as Llama for OLMo 2), defaulted as transformers' Phi3Config, Olmo2Config and MixtralConfig
// default them, plus what is new:
//   Phi-3: fused qkv_proj (q | k | v) and gate_up_proj (gate rows, then up rows: Phi3MLP's chunk(2)); no biases;
//          partial_rotary_factor (rotary_ndims = int(head_dim x factor), rotate_half on those dims).
//   OLMo 2: no pre norms, post_attention_layernorm and post_feedforward_layernorm on the sublayers' outputs;
//          q_norm / k_norm RMSNorm over the whole projected q and k, before RoPE.
//   Mixtral: Mistral's attention; block_sparse_moe with num_local_experts experts, num_experts_per_tok per token.
#include <cstdio>
#include <optional>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/family_configs.h"
#include "model/arch/configs/config_fields.h"

namespace attnscope::model {

namespace {

// Phi-3's partial_rotary_factor, or v5's rope_parameters.partial_rotary_factor (they agree where both are given);
// 1.0 (Phi3Config's default) when absent.
double rotaryFactor(const nlohmann::json& j, const std::string& path) {
  std::optional<double> top, v5;
  const auto read = [&](const nlohmann::json& o, const std::string& field) -> std::optional<double> {
    if (!has(o, "partial_rotary_factor")) return std::nullopt;
    const nlohmann::json& v = o["partial_rotary_factor"];
    if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() <= 1))
      throw InputError(field, "a number in (0, 1] (the fraction of each head's dims that rotate)", describeJson(v));
    checkFloat32Positive(field, v);
    return v.get<double>();
  };
  top = read(j, path + ": partial_rotary_factor");
  if (has(j, "rope_parameters") && j["rope_parameters"].is_object())
    v5 = read(j["rope_parameters"], path + ": rope_parameters.partial_rotary_factor");
  if (top && v5 && *top != *v5)
    throw InputError(path + ": rope_parameters.partial_rotary_factor",
                     "the same fraction as partial_rotary_factor (" + describeJson(*top) + ")", describeJson(*v5));
  return top ? *top : v5 ? *v5 : 1.0;
}

bool v5Theta(const nlohmann::json& j) {
  return has(j, "rope_parameters") && j["rope_parameters"].is_object() && has(j["rope_parameters"], "rope_theta");
}

}  // namespace

Architecture llamaKinArchitectureFromJson(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path, "a JSON object", describeJson(j));
  const nlohmann::json type = j.contains("model_type") ? j["model_type"] : nlohmann::json();
  if (!type.is_string() || !(type == "phi3" || type == "olmo2" || type == "mixtral"))
    throw InputError(path + ": model_type", "phi3, olmo2 or mixtral", describeJson(type));
  const std::string t = type.get<std::string>();
  if (t == "olmo2" && boolField(j, path, "attention_bias", false))
    throw InputError(path + ": attention_bias", "false (OLMo 2 checkpoints have no attention biases)", "true");
  // The shared fields through the Llama family's reader, as the family whose attention each one's is.
  nlohmann::json as = j;
  as["model_type"] = t == "olmo2" ? "llama" : "mistral";
  if (t == "phi3") as.erase("attention_bias");  // Phi3Attention's projections never have biases
  Architecture a = describeLlama(llamaConfigFromJson(as, path));
  a.model_type = t;
  a.norm_eps = positiveNumber(j, path + ": ", "rms_norm_eps", 1.0, 1e-5);  // all three default to 1e-5
  if (t == "mixtral" && !has(j, "rope_theta") && !v5Theta(j)) a.rope_theta = 1e6;  // MixtralConfig's default

  if (t == "phi3") {
    a.qkv = QkvStorage::FusedBlocks;
    a.fused_gate_up = true;
    const double factor = rotaryFactor(j, path);
    a.rotary_dims = static_cast<int>(a.head_dim * factor);  // Python's int(): truncation
    if (a.rotary_dims < 2 || a.rotary_dims % 2 != 0) {
      char got[96];
      std::snprintf(got, sizeof got, "%g, %d of head_dim %d", factor, a.rotary_dims, a.head_dim);
      throw InputError(path + ": partial_rotary_factor", "a fraction giving an even number of rotary dims, at least 2",
                       got);
    }
    (void)ropeInverseFrequencies(a.rope_theta, a.rotary_dims, a.rope_scaling, path + ": rope");  // its own checks
  } else if (t == "olmo2") {
    a.qk_norm_whole = true;
    a.post_norms = true;
  } else {
    a.n_experts = intField(j, path, "num_local_experts", 1, 1024, 8);
    a.experts_per_tok = intField(j, path, "num_experts_per_tok", 1, a.n_experts, 2);
    if (a.experts_per_tok > a.n_experts)
      throw InputError(path + ": num_experts_per_tok",
                       "1 to num_local_experts (" + std::to_string(a.n_experts) + ")",
                       std::to_string(a.experts_per_tok));
  }
  return a;
}

}  // namespace attnscope::model
