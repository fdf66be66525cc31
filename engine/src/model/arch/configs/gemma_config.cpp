// Gemma's config.json (model_type gemma, gemma2, gemma3_text, and gemma3 whose text_config holds the text model) as
// a description, each field checked against what transformers' GemmaConfig / Gemma2Config / Gemma3TextConfig and
// their modeling_*.py accept, defaulted as those classes default it: RMSNorm (1 + w); embeddings times sqrt(hidden)
// cast to the model's dtype (GemmaModel's `normalizer`, Gemma3TextScaledWordEmbedding's embed_scale); head_dim from
// the config; GeGLU on hidden_activation (absent: gelu_pytorch_tanh, as GemmaMLP); Gemma 2: scores scaled by
// query_pre_attn_scalar^-1/2, attn_logit_softcapping, sandwich norms, even layers sliding; Gemma 3: per-head q_norm
// and k_norm, every sliding_window_pattern-th layer global, local layers on rope_local_base_freq.
#include <cmath>
#include <string>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/family_configs.h"
#include "model/arch/configs/config_fields.h"

namespace attnscope::model {

namespace {

// v == text, without json's operator== (whose inlined comparison GCC 12 flags with a false -Warray-bounds).
bool isText(const nlohmann::json& v, const char* text) {
  return v.is_string() && v.get_ref<const std::string&>() == text;
}

// transformers' defaults per family (the config classes' __init__ arguments).
struct GemmaDefaults {
  int vocab, hidden, inter, layers, heads, kv_heads, head_dim, positions;
  double theta, query_pre_attn_scalar, attn_softcap, final_softcap;  // 0: none
};
constexpr GemmaDefaults kGemma1 = {256000, 3072, 24576, 28, 16, 16, 256, 8192, 1e4, 0, 0, 0};
constexpr GemmaDefaults kGemma2 = {256000, 2304, 9216, 26, 8, 4, 256, 8192, 1e4, 256, 50, 30};
constexpr GemmaDefaults kGemma3 = {262208, 2304, 9216, 26, 8, 4, 256, 131072, 1e6, 256, 0, 0};

// A soft cap: null is "none" (transformers' `if softcapping is not None`), absent the family's default, else a
// finite number > 0 (0 would divide by zero, a negative one flip every score).
double softCap(const nlohmann::json& j, const std::string& path, const char* key, double fallback) {
  if (!j.contains(key)) return fallback;
  if (j[key].is_null()) return 0;
  return positiveNumber(j, path + ": ", key, 1e6, fallback);
}

// sqrt(hidden) as torch.tensor(hidden ** 0.5, dtype=the model's dtype) rounds it: to nearest (even) with 8 (bf16),
// 11 (f16) or 24 (f32) significant bits.
float embedScale(const nlohmann::json& j, const std::string& path, int hidden) {
  const char* key = has(j, "torch_dtype") || !has(j, "dtype") ? "torch_dtype" : "dtype";  // v5 writes "dtype"
  const nlohmann::json dt = has(j, key) ? j[key] : nlohmann::json("float32");
  const double root = std::sqrt(static_cast<double>(hidden));
  int bits = 24;
  if (isText(dt, "bfloat16")) bits = 8;
  else if (isText(dt, "float16")) bits = 11;
  else if (!isText(dt, "float32"))
    throw InputError(path + ": " + key, "bfloat16, float16 or float32 (the dtype sqrt(hidden_size) is rounded to)",
                     describeJson(dt));
  const double step = std::ldexp(1.0, std::ilogb(root) - (bits - 1));
  return static_cast<float>(std::nearbyint(root / step) * step);
}

// Gemma 3's rope: rope_theta (+ rope_scaling) for global layers and rope_local_base_freq for local ones, or v5's
// rope_parameters {"full_attention": {...}, "sliding_attention": {...}}.
void gemma3Rope(const nlohmann::json& j, const std::string& path, Architecture& a) {
  const bool per_type = has(j, "rope_parameters") && j["rope_parameters"].is_object() &&
                        (j["rope_parameters"].contains("full_attention") || j["rope_parameters"].contains("sliding_attention"));
  const bool theta_given = has(j, "rope_theta") ||
                           (has(j, "rope_parameters") && j["rope_parameters"].is_object() &&
                            (per_type ? j["rope_parameters"].value("full_attention", nlohmann::json::object()).contains("rope_theta")
                                      : j["rope_parameters"].contains("rope_theta")));
  a.rope_local_theta = positiveNumber(j, path + ": ", "rope_local_base_freq", 1e12, 1e4);
  if (!per_type) {
    readRope(j, path, "rope_theta", a.rope_theta, a.rope_scaling);
  } else {
    const nlohmann::json& p = j["rope_parameters"];
    nlohmann::json global = nlohmann::json::object();
    for (const char* k : {"rope_theta", "rope_scaling"})
      if (j.contains(k)) global[k] = j[k];
    if (p.contains("full_attention")) global["rope_parameters"] = p["full_attention"];
    readRope(global, path, "rope_theta", a.rope_theta, a.rope_scaling);
    if (p.contains("sliding_attention")) {
      const nlohmann::json& s = p["sliding_attention"];
      const std::string field = path + ": rope_parameters.sliding_attention";
      if (!s.is_object()) throw InputError(field, "an object", describeJson(s));
      const nlohmann::json type = s.value("rope_type", nlohmann::json("default"));
      if (!isText(type, "default"))
        throw InputError(field + ".rope_type", "default (local layers are never scaled)", describeJson(type));
      const double t = positiveNumber(s, field + ".", "rope_theta", 1e12, a.rope_local_theta);
      if (has(j, "rope_local_base_freq") && t != a.rope_local_theta)
        throw InputError(field + ".rope_theta", "the same as rope_local_base_freq (" + describeJson(j["rope_local_base_freq"]) + ")",
                         describeJson(s["rope_theta"]));
      a.rope_local_theta = t;
    }
  }
  if (!theta_given) a.rope_theta = kGemma3.theta;  // readRope's fallback is 10000; Gemma3TextConfig's is 1e6
}

// Per layer: sliding (true) or global, from layer_types, else the family's older rule.
std::vector<bool> slidingLayers(const nlohmann::json& j, const std::string& path, const Architecture& a, bool gemma3) {
  std::vector<bool> sliding(static_cast<std::size_t>(a.n_layer));
  if (has(j, "layer_types")) {
    const nlohmann::json& t = j["layer_types"];
    const std::string expected = "a list of num_hidden_layers (" + std::to_string(a.n_layer) +
                                 ") entries, each \"sliding_attention\" or \"full_attention\"";
    if (!t.is_array()) throw InputError(path + ": layer_types", expected, describeJson(t));
    if (t.size() != sliding.size())
      throw InputError(path + ": layer_types", expected, std::to_string(t.size()) + " entries");
    for (std::size_t l = 0; l < t.size(); ++l) {
      if (!isText(t[l], "sliding_attention") && !isText(t[l], "full_attention"))
        throw InputError(path + ": layer_types[" + std::to_string(l) + "]", "\"sliding_attention\" or \"full_attention\"",
                         describeJson(t[l]));
      sliding[l] = isText(t[l], "sliding_attention");
    }
    return sliding;
  }
  // Gemma 2: `not bool(layer_idx % 2)` (even layers local); Gemma 3: `bool((layer_idx + 1) % pattern)`.
  const char* key = has(j, "sliding_window_pattern") || !has(j, "_sliding_window_pattern") ? "sliding_window_pattern"
                                                                                           : "_sliding_window_pattern";
  const int pattern = gemma3 ? intField(j, path, key, 1, 1 << 20, 6) : 2;
  for (int l = 0; l < a.n_layer; ++l) sliding[static_cast<std::size_t>(l)] = (l + 1) % pattern != 0;
  return sliding;
}

bool isGemmaType(const std::string& t) {
  return t == "gemma" || t == "gemma2" || t == "gemma3_text" || t == "gemma3";
}

}  // namespace


Architecture gemmaArchitectureFromJson(const nlohmann::json& top, const std::string& top_path) {
  if (!top.is_object()) throw InputError(top_path, "a JSON object", describeJson(top));
  const nlohmann::json type = top.contains("model_type") ? top["model_type"] : nlohmann::json();
  if (!type.is_string() || !isGemmaType(type.get<std::string>()))
    throw InputError(top_path + ": model_type", "gemma, gemma2, gemma3_text or gemma3", describeJson(type));
  // gemma3 (Gemma3ForConditionalGeneration): the text model is text_config, a Gemma3TextConfig.
  const bool multimodal = isText(type, "gemma3");
  if (multimodal && (!top.contains("text_config") || !top["text_config"].is_object()))
    throw InputError(top_path + ": text_config", "an object (Gemma 3's text model)",
                     top.contains("text_config") ? describeJson(top["text_config"]) : "nothing");
  const nlohmann::json& j = multimodal ? top["text_config"] : top;
  const std::string path = multimodal ? top_path + ": text_config" : top_path;
  const bool gemma1 = isText(type, "gemma"), gemma3 = isText(type, "gemma3") || isText(type, "gemma3_text");
  const GemmaDefaults& d = gemma1 ? kGemma1 : gemma3 ? kGemma3 : kGemma2;

  Architecture a;
  a.model_type = gemma3 ? "gemma3_text" : type.get<std::string>();
  a.vocab_size = intField(j, path, "vocab_size", 1, 10'000'000, d.vocab);
  a.hidden = intField(j, path, "hidden_size", 1, 1 << 16, d.hidden);
  a.intermediate = intField(j, path, "intermediate_size", 1, 1 << 20, d.inter);
  a.n_layer = intField(j, path, "num_hidden_layers", 1, 1000, d.layers);
  a.n_head = intField(j, path, "num_attention_heads", 1, 256, d.heads);
  a.n_kv_head = intField(j, path, "num_key_value_heads", 1, 256, d.kv_heads);
  if (a.n_head % a.n_kv_head != 0)
    throw InputError(path + ": num_key_value_heads", "a divisor of num_attention_heads (" + std::to_string(a.n_head) + ")",
                     std::to_string(a.n_kv_head));
  a.head_dim = intField(j, path, "head_dim", 2, 4096, d.head_dim);  // not hidden / heads
  if (a.head_dim % 2 != 0)
    throw InputError(path + ": head_dim", "an even number (RoPE turns pairs of dims)", std::to_string(a.head_dim));
  a.max_positions = intField(j, path, "max_position_embeddings", 1, 1 << 24, d.positions);
  a.norm = NormKind::RmsNorm;
  a.norm_plus_one = true;
  a.norm_eps = positiveNumber(j, path + ": ", "rms_norm_eps", 1.0, 1e-6);
  a.embed_scale = embedScale(top, top_path, a.hidden);
  a.qkv = QkvStorage::Separate;
  a.qkv_bias = a.o_bias = boolField(j, path, "attention_bias", false);
  a.mlp = MlpKind::Gated;
  a.mlp_bias = false;
  const nlohmann::json act = has(j, "hidden_activation") ? j["hidden_activation"] : nlohmann::json("gelu_pytorch_tanh");
  if (isText(act, "gelu_pytorch_tanh") || isText(act, "gelu_new") || isText(act, "gelu_fast"))
    a.activation = Activation::GeluTanh;
  else if (isText(act, "gelu")) a.activation = Activation::GeluErf;
  else
    throw InputError(path + ": hidden_activation", "gelu_pytorch_tanh, gelu_new, gelu_fast or gelu (GeGLU's GELUs)",
                     describeJson(act));
  a.tie_word_embeddings = boolField(top, top_path, "tie_word_embeddings", true);
  a.rotary_dims = a.head_dim;
  a.window.assign(static_cast<std::size_t>(a.n_layer), 0);
  if (gemma1) {
    readRope(j, path, "rope_theta", a.rope_theta, a.rope_scaling);
    return a;
  }
  a.sandwich_norms = true;
  a.qk_norm = gemma3;
  a.query_pre_attn_scalar = positiveNumber(j, path + ": ", "query_pre_attn_scalar", 1e9, d.query_pre_attn_scalar);
  a.attn_softcap = softCap(j, path, "attn_logit_softcapping", d.attn_softcap);
  a.final_softcap = softCap(j, path, "final_logit_softcapping", d.final_softcap);
  if (gemma3) gemma3Rope(j, path, a);
  else readRope(j, path, "rope_theta", a.rope_theta, a.rope_scaling);
  (void)ropeInverseFrequencies(a.rope_theta, a.rotary_dims, a.rope_scaling, path + ": rope");  // its own checks
  const std::vector<bool> sliding = slidingLayers(j, path, a, gemma3);
  const int window = intField(j, path, "sliding_window", 1, 1 << 24, 4096);
  for (std::size_t l = 0; l < sliding.size(); ++l) a.window[l] = sliding[l] ? window : 0;
  return a;
}

}  // namespace attnscope::model
