// config.json of the Llama family (llama, mistral, qwen2, qwen3), every field the forward depends on checked
// against what transformers' LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config accept, and defaulted as
// they default it. One line per refusal: "DIR/config.json: FIELD: expected ..., got ...".
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/llama.h"

namespace attnscope::model {

namespace {

constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;  // real ones are under 4 KB

// A field is absent when missing or null (transformers writes null for "use the default").
bool has(const nlohmann::json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

int intField(const nlohmann::json& j, const std::string& path, const char* key, long min, long max) {
  const std::string expected = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (!has(j, key)) throw InputError(path + ": " + key, expected, "nothing");
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer() || v.get<long long>() < min || v.get<long long>() > max)
    throw InputError(path + ": " + key, expected, describeJson(v));
  return v.get<int>();
}

int intField(const nlohmann::json& j, const std::string& path, const char* key, long min, long max, int fallback) {
  return has(j, key) ? intField(j, path, key, min, max) : fallback;
}

// A finite number in (0, max]; `fallback` when absent.
double positiveNumber(const nlohmann::json& j, const std::string& field, const char* key, double max, double fallback) {
  if (!has(j, key)) return fallback;
  const nlohmann::json& v = j[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() <= max))
    throw InputError(field + key, "a number in (0, " + describeJson(nlohmann::json(max)) + "]", describeJson(v));
  return v.get<double>();
}

bool boolField(const nlohmann::json& j, const std::string& path, const char* key, bool fallback) {
  if (!has(j, key)) return fallback;
  if (!j[key].is_boolean()) throw InputError(path + ": " + key, "true or false", describeJson(j[key]));
  return j[key].get<bool>();
}

// rope_scaling (or v5's rope_parameters, `key`): null, or {"rope_type" (or the older "type"): "default" |
// "linear" | "llama3", ...}.
RopeScaling ropeScaling(const nlohmann::json& j, const std::string& path, const char* key = "rope_scaling") {
  RopeScaling s;
  if (!has(j, key)) return s;
  const nlohmann::json& r = j[key];
  const std::string field = path + ": " + key;
  if (!r.is_object()) throw InputError(field, "null or an object", describeJson(r));
  const char* type_key = r.contains("rope_type") ? "rope_type" : "type";
  const nlohmann::json type = r.contains(type_key) ? r[type_key] : nlohmann::json();
  const std::string type_field = field + "." + type_key;
  if (type == "default") return s;
  if (type == "linear") {
    s.type = RopeScaling::Type::Linear;
  } else if (type == "llama3") {
    s.type = RopeScaling::Type::Llama3;
    s.low_freq_factor = positiveNumber(r, field + ".", "low_freq_factor", 1e6, 1.0);
    s.high_freq_factor = positiveNumber(r, field + ".", "high_freq_factor", 1e6, 4.0);
    if (!(s.high_freq_factor > s.low_freq_factor))
      throw InputError(field + ".high_freq_factor", "more than low_freq_factor (" + describeJson(r["low_freq_factor"]) + ")",
                       describeJson(r["high_freq_factor"]));
    s.original_max_position_embeddings = intField(r, field, "original_max_position_embeddings", 1, 1 << 24, 8192);
  } else {
    throw InputError(type_field, "default, linear or llama3 (the rope types attnscope implements)", describeJson(type));
  }
  if (!has(r, "factor")) throw InputError(field + ".factor", "a number in (0, 1e+06]", "nothing");
  s.factor = positiveNumber(r, field + ".", "factor", 1e6, 1.0);
  return s;
}

std::string scalingText(const RopeScaling& s) {
  if (s.type == RopeScaling::Type::None) return "default (no scaling)";
  char buf[160];
  if (s.type == RopeScaling::Type::Linear) std::snprintf(buf, sizeof buf, "linear, factor %g", s.factor);
  else
    std::snprintf(buf, sizeof buf, "llama3, factor %g, low_freq_factor %g, high_freq_factor %g, original %d", s.factor,
                  s.low_freq_factor, s.high_freq_factor, s.original_max_position_embeddings);
  return buf;
}

bool sameScaling(const RopeScaling& a, const RopeScaling& b) {
  return a.type == b.type && a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
         a.high_freq_factor == b.high_freq_factor && a.original_max_position_embeddings == b.original_max_position_embeddings;
}

// RoPE's theta and scaling: the older rope_theta and rope_scaling, and transformers v5's rope_parameters
// {"rope_type", "rope_theta", the type's numbers}. Either or both; where both give a value they must agree.
void readRope(const nlohmann::json& j, const std::string& path, LlamaConfig& c) {
  c.rope_theta = positiveNumber(j, path + ": ", "rope_theta", 1e12, 10000.0);
  c.rope_scaling = ropeScaling(j, path);
  if (!has(j, "rope_parameters")) return;
  const nlohmann::json& p = j["rope_parameters"];
  const std::string field = path + ": rope_parameters";
  if (!p.is_object()) throw InputError(field, "null or an object", describeJson(p));
  if (has(p, "rope_theta")) {
    const double theta = positiveNumber(p, field + ".", "rope_theta", 1e12, 10000.0);
    if (has(j, "rope_theta") && theta != c.rope_theta)
      throw InputError(field + ".rope_theta", "the same as rope_theta (" + describeJson(j["rope_theta"]) + ")",
                       describeJson(p["rope_theta"]));
    c.rope_theta = theta;
  }
  // No rope_type: plain RoPE (v5 always writes one; a bare {"rope_theta"} is still unambiguous).
  const RopeScaling scaling = p.contains("rope_type") || p.contains("type")
                                  ? ropeScaling(nlohmann::json{{"rope_parameters", p}}, path, "rope_parameters")
                                  : RopeScaling{};
  if (has(j, "rope_scaling") && !sameScaling(scaling, c.rope_scaling))
    throw InputError(field, "the same rope type and factors as rope_scaling (" + scalingText(c.rope_scaling) + ")",
                     scalingText(scaling));
  c.rope_scaling = scaling;
}

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

}  // namespace

bool isLlamaFamily(const std::string& t) { return t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3"; }

LlamaConfig loadLlamaConfig(const std::string& path) { return llamaConfigFromJson(readJsonFile(path, kMaxConfigBytes), path); }

LlamaConfig llamaConfigFromJson(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path, "a JSON object", describeJson(j));
  LlamaConfig c;
  const nlohmann::json type = j.contains("model_type") ? j["model_type"] : nlohmann::json();
  if (!type.is_string() || !isLlamaFamily(type.get<std::string>()))
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
  readRope(j, path, c);
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

}  // namespace attnscope::model
