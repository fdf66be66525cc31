// config.json's fields read and checked, one line per refusal: "PATH: FIELD: expected ..., got ...". Shared by
// every family's config reader.
#include "model/arch/configs/config_fields.h"

#include <cstdio>

#include "attnscope/error.h"
#include "attnscope/json_file.h"

namespace attnscope::model {

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
void checkFloat32Positive(const std::string& field, const nlohmann::json& v) {
  if (static_cast<float>(v.get<double>()) == 0.0f)
    throw InputError(field, "a positive number representable in float32 (it rounds to 0 there)", describeJson(v));
}

double positiveNumber(const nlohmann::json& j, const std::string& field, const char* key, double max, double fallback) {
  if (!has(j, key)) return fallback;
  const nlohmann::json& v = j[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() <= max))
    throw InputError(field + key, "a number in (0, " + describeJson(nlohmann::json(max)) + "]", describeJson(v));
  checkFloat32Positive(field + key, v);
  return v.get<double>();
}

bool boolField(const nlohmann::json& j, const std::string& path, const char* key, bool fallback) {
  if (!has(j, key)) return fallback;
  if (!j[key].is_boolean()) throw InputError(path + ": " + key, "true or false", describeJson(j[key]));
  return j[key].get<bool>();
}

// rope_scaling (or v5's rope_parameters, `key`): null, or {"rope_type" (or the older "type"): "default" |
// "linear" | "llama3", ...}.
RopeScaling ropeScaling(const nlohmann::json& j, const std::string& path, const char* key) {
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

// RoPE's theta and scaling: the older `theta_key` (rope_theta; GPT-NeoX's rotary_emb_base) and rope_scaling, and
// transformers v5's rope_parameters {"rope_type", "rope_theta", the type's numbers}. Either or both; where both
// give a value they must agree.
void readRope(const nlohmann::json& j, const std::string& path, const char* theta_key, double& theta,
              RopeScaling& scaling_out) {
  theta = positiveNumber(j, path + ": ", theta_key, 1e12, 10000.0);
  scaling_out = ropeScaling(j, path);
  if (!has(j, "rope_parameters")) return;
  const nlohmann::json& p = j["rope_parameters"];
  const std::string field = path + ": rope_parameters";
  if (!p.is_object()) throw InputError(field, "null or an object", describeJson(p));
  if (has(p, "rope_theta")) {
    const double t = positiveNumber(p, field + ".", "rope_theta", 1e12, 10000.0);
    if (has(j, theta_key) && t != theta)
      throw InputError(field + ".rope_theta", std::string("the same as ") + theta_key + " (" + describeJson(j[theta_key]) + ")",
                       describeJson(p["rope_theta"]));
    theta = t;
  }
  // No rope_type: plain RoPE (v5 always writes one; a bare {"rope_theta"} is still unambiguous).
  const RopeScaling scaling = p.contains("rope_type") || p.contains("type")
                                  ? ropeScaling(nlohmann::json{{"rope_parameters", p}}, path, "rope_parameters")
                                  : RopeScaling{};
  if (has(j, "rope_scaling") && !sameScaling(scaling, scaling_out))
    throw InputError(field, "the same rope type and factors as rope_scaling (" + scalingText(scaling_out) + ")",
                     scalingText(scaling));
  scaling_out = scaling;
}

}  // namespace attnscope::model
