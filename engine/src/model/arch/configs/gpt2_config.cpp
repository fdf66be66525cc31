// GPT-2's config.json (model_type gpt2, or none: older GPT-2 configs name none) checked and described: the six
// fields present and positive, n_embd a multiple of n_head, n_head at most 64 (a scene's limit), the tanh GELU.
// Its tensors are read by the one loader (loader.cpp) through its name table, with or without "transformer.".
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/family_configs.h"
#include "model/arch/configs/config_fields.h"

namespace attnscope::model {

namespace {

constexpr std::size_t kMaxGpt2ConfigBytes = std::size_t{1} << 20;  // GPT-2's is under 1 KB

int positiveInt(const nlohmann::json& j, const std::string& path, const char* key, long max) {
  const std::string field = path + ": " + key;
  if (!j.contains(key)) throw InputError(field, "an integer from 1 to " + std::to_string(max), "nothing");
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > max)
    throw InputError(field, "an integer from 1 to " + std::to_string(max), describeJson(v));
  return v.get<int>();
}


}  // namespace

Gpt2Config loadGpt2Config(const std::string& path) { return gpt2ConfigFromJson(readJsonFile(path, kMaxGpt2ConfigBytes), path); }

Gpt2Config gpt2ConfigFromJson(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path, "a JSON object", describeJson(j));
  Gpt2Config c;
  c.n_layer = positiveInt(j, path, "n_layer", 1000);
  c.n_head = positiveInt(j, path, "n_head", 64);  // a layer opened as a scene holds at most 64 heads
  c.n_embd = positiveInt(j, path, "n_embd", 1 << 16);
  c.n_positions = positiveInt(j, path, "n_positions", 1 << 20);
  c.vocab_size = positiveInt(j, path, "vocab_size", 10'000'000);
  if (c.n_embd % c.n_head != 0)
    throw InputError(path + ": n_embd", "a multiple of n_head (" + std::to_string(c.n_head) + ")",
                     std::to_string(c.n_embd));
  if (!j.contains("layer_norm_epsilon")) throw InputError(path + ": layer_norm_epsilon", "a number", "nothing");
  const nlohmann::json& eps = j["layer_norm_epsilon"];
  if (!eps.is_number() || !(eps.get<double>() > 0) || eps.get<double>() > 1)
    throw InputError(path + ": layer_norm_epsilon", "a number in (0, 1]", describeJson(eps));
  checkFloat32Positive(path + ": layer_norm_epsilon", eps);  // 1e-300 would be an eps of 0
  c.layer_norm_epsilon = eps.get<float>();
  if (j.contains("activation_function")) {
    const nlohmann::json& act = j["activation_function"];
    const bool tanh_gelu = act.is_string() && (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast");
    if (!tanh_gelu)
      throw InputError(path + ": activation_function", "GPT-2's tanh GELU (gelu_new)", describeJson(act));
  }
  return c;
}

Architecture describeGpt2(const Gpt2Config& c) {
  Architecture a;
  a.model_type = "gpt2";
  a.n_layer = c.n_layer, a.n_head = c.n_head, a.n_kv_head = c.n_head, a.head_dim = c.n_head > 0 ? c.headDim() : 0;
  a.hidden = c.n_embd, a.intermediate = 4 * c.n_embd, a.vocab_size = c.vocab_size, a.max_positions = c.n_positions;
  a.max_positions_field = "n_positions";
  a.norm = NormKind::LayerNorm;
  a.norm_eps = c.layer_norm_epsilon;
  a.norm_bias = true;
  a.residual = Residual::Sequential;
  a.learned_positions = true;
  a.qkv = QkvStorage::FusedBlocks;
  a.conv1d = true;
  a.qkv_bias = a.o_bias = a.mlp_bias = true;
  a.mlp = MlpKind::Plain;
  a.activation = Activation::GeluTanh;
  a.tie_word_embeddings = true;
  return a;
}

}  // namespace attnscope::model
