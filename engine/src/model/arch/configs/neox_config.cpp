// GPT-NeoX / Pythia's config.json (model_type gpt_neox) as a description, every field the forward depends on
// checked against what transformers' GPTNeoXConfig and GPTNeoXAttention accept, defaulted as they default it:
// rotary_ndims = int(head_size x rotary_pct) rotate (rotate_half on those dims), the rest pass; theta from
// rotary_emb_base (v4) or rope_parameters.rope_theta (v5); use_parallel_residual; LayerNorm with bias.
#include <cmath>
#include <cstdio>
#include <optional>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/family_configs.h"
#include "model/arch/configs/config_fields.h"

namespace attnscope::model {

namespace {

// A fraction in (0, 1], or nullopt when absent.
std::optional<double> fraction(const nlohmann::json& j, const std::string& field, const char* key) {
  if (!has(j, key)) return std::nullopt;
  const nlohmann::json& v = j[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() <= 1))
    throw InputError(field + key, "a number in (0, 1] (the fraction of each head's dims that rotate)", describeJson(v));
  checkFloat32Positive(field + key, v);
  return v.get<double>();
}

// rotary_pct (v4), partial_rotary_factor (v4.5+) or rope_parameters.partial_rotary_factor (v5); where more than one
// is given they agree. Default 0.25 (GPTNeoXConfig's).
double rotaryFraction(const nlohmann::json& j, const std::string& path) {
  const std::optional<double> pct = fraction(j, path + ": ", "rotary_pct");
  const std::optional<double> factor = fraction(j, path + ": ", "partial_rotary_factor");
  std::optional<double> v5;
  if (has(j, "rope_parameters") && j["rope_parameters"].is_object())
    v5 = fraction(j["rope_parameters"], path + ": rope_parameters.", "partial_rotary_factor");
  const std::optional<double> first = pct ? pct : factor ? factor : v5;
  if (!first) return 0.25;
  const auto agree = [&](const std::optional<double>& other, const char* name) {
    if (other && *other != *first)
      throw InputError(path + ": " + name, "the same fraction as the other rotary field (" + describeJson(*first) + ")",
                       describeJson(*other));
  };
  agree(factor, "partial_rotary_factor");
  agree(v5, "rope_parameters.partial_rotary_factor");
  return *first;
}

}  // namespace

Architecture neoxArchitectureFromJson(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path, "a JSON object", describeJson(j));
  if (!j.contains("model_type") || j["model_type"] != "gpt_neox")
    throw InputError(path + ": model_type", "gpt_neox", j.contains("model_type") ? describeJson(j["model_type"]) : "nothing");
  Architecture a;
  a.model_type = "gpt_neox";
  a.hidden = intField(j, path, "hidden_size", 1, 1 << 16);
  a.n_layer = intField(j, path, "num_hidden_layers", 1, 1000);
  a.n_head = intField(j, path, "num_attention_heads", 1, 256);
  a.n_kv_head = a.n_head;  // GPT-NeoX has no grouped-query attention
  if (a.hidden % a.n_head != 0)
    throw InputError(path + ": hidden_size", "a multiple of num_attention_heads (" + std::to_string(a.n_head) + ")",
                     std::to_string(a.hidden));
  a.head_dim = a.hidden / a.n_head;
  a.intermediate = intField(j, path, "intermediate_size", 1, 1 << 20);
  a.vocab_size = intField(j, path, "vocab_size", 1, 10'000'000);
  a.max_positions = intField(j, path, "max_position_embeddings", 1, 1 << 24);
  a.max_positions_field = "max_position_embeddings";

  const double pct = rotaryFraction(j, path);
  a.rotary_dims = static_cast<int>(a.head_dim * pct);  // Python's int(): truncation, as GPTNeoXAttention
  if (a.rotary_dims < 2 || a.rotary_dims % 2 != 0) {
    char got[96];
    std::snprintf(got, sizeof got, "%g, %d of head_dim %d", pct, a.rotary_dims, a.head_dim);
    throw InputError(path + ": rotary_pct", "a fraction giving an even number of rotary dims, at least 2", got);
  }
  // rotary_emb_base (v4) or rope_theta; v5's rope_parameters.rope_theta; default 10000.
  const char* theta_key = has(j, "rotary_emb_base") || !has(j, "rope_theta") ? "rotary_emb_base" : "rope_theta";
  readRope(j, path, theta_key, a.rope_theta, a.rope_scaling);
  (void)ropeInverseFrequencies(a.rope_theta, a.rotary_dims, a.rope_scaling, path + ": rope");  // its own checks

  a.norm = NormKind::LayerNorm;
  a.norm_bias = true;
  a.norm_eps = positiveNumber(j, path + ": ", "layer_norm_eps", 1.0, 1e-5);
  a.residual = boolField(j, path, "use_parallel_residual", true) ? Residual::Parallel : Residual::Sequential;
  a.qkv = QkvStorage::FusedPerHead;
  a.qkv_bias = a.o_bias = boolField(j, path, "attention_bias", true);
  a.mlp = MlpKind::Plain;
  a.mlp_bias = true;  // dense_h_to_4h and dense_4h_to_h are plain nn.Linear
  const nlohmann::json act = has(j, "hidden_act") ? j["hidden_act"] : nlohmann::json("gelu");
  if (act == "gelu") a.activation = Activation::GeluErf;
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") a.activation = Activation::GeluTanh;
  else
    throw InputError(path + ": hidden_act", "gelu, gelu_new, gelu_pytorch_tanh or gelu_fast (the GELUs attnscope implements)",
                     describeJson(act));
  a.tie_word_embeddings = boolField(j, path, "tie_word_embeddings", false);
  a.window.assign(static_cast<std::size_t>(a.n_layer), 0);
  return a;
}

}  // namespace attnscope::model
