// Loading a checkpoint folder: config.json's model_type picks the family. GPT-2's: config.json checked and
// described, its tensors read by the one loader (model/arch/loader.cpp) with or without the "transformer."
// prefix in GPT-2's Conv1D shapes. The Llama family's config: model/llama/; GPT-NeoX's: model/arch/neox_config.cpp.
#include <algorithm>
#include <utility>
#include <nlohmann/json.hpp>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/architecture.h"
#include "attnscope/model/gpt2.h"
#include "attnscope/model/model.h"
#include "attnscope/model/safetensors.h"
#include "model/arch/config_fields.h"

namespace attnscope::model {

namespace {

constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;  // GPT-2's is under 1 KB

int positiveInt(const nlohmann::json& j, const std::string& path, const char* key, long max) {
  const std::string field = path + ": " + key;
  if (!j.contains(key)) throw InputError(field, "an integer from 1 to " + std::to_string(max), "nothing");
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > max)
    throw InputError(field, "an integer from 1 to " + std::to_string(max), describeJson(v));
  return v.get<int>();
}


}  // namespace

Gpt2Config loadGpt2Config(const std::string& path) { return gpt2ConfigFromJson(readJsonFile(path, kMaxConfigBytes), path); }

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

std::size_t gpt2WeightBytes(const Gpt2Config& c) {
  const std::size_t d = static_cast<std::size_t>(c.n_embd);
  const std::size_t per_block = 4 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d);
  return 4 * (static_cast<std::size_t>(c.vocab_size) * d + static_cast<std::size_t>(c.n_positions) * d +
              static_cast<std::size_t>(c.n_layer) * per_block + 2 * d);
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

Gpt2Weights loadGpt2Weights(const std::string& weights_path, const Gpt2Config& config, std::size_t budget_bytes) {
  // The one loader (tensors with or without "transformer.", Conv1D shapes), then moved into GPT-2's own names.
  Weights loaded = loadWeights("", describeGpt2(config), budget_bytes, weights_path);
  Gpt2Weights w;
  w.config = config;
  w.wte = std::move(loaded.embed);
  w.wpe = std::move(loaded.pos_embed);
  for (LayerWeights& L : loaded.layers) {
    Gpt2Block b;
    b.ln_1_g = std::move(L.norm1_g);
    b.ln_1_b = std::move(L.norm1_b);
    b.c_attn_w = std::move(L.w_qkv);
    b.c_attn_b = std::move(L.b_qkv);
    b.c_proj_w = std::move(L.w_o);
    b.c_proj_b = std::move(L.b_o);
    b.ln_2_g = std::move(L.norm2_g);
    b.ln_2_b = std::move(L.norm2_b);
    b.fc_w = std::move(L.w_up);
    b.fc_b = std::move(L.b_up);
    b.mlp_proj_w = std::move(L.w_down);
    b.mlp_proj_b = std::move(L.b_down);
    w.blocks.push_back(std::move(b));
  }
  w.ln_f_g = std::move(loaded.final_g);
  w.ln_f_b = std::move(loaded.final_b);
  return w;
}

Checkpoint loadCheckpoint(const std::string& dir, std::size_t budget_bytes) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  Checkpoint c;
  c.dir = dir;
  const Gpt2Config config = loadGpt2Config(base + "config.json");
  c.tokenizer = Tokenizer::load(base + "vocab.json", base + "merges.txt");
  if (c.tokenizer.maxId() >= config.vocab_size)
    throw InputError(base + "vocab.json", "ids below vocab_size (" + std::to_string(config.vocab_size) + ")",
                     "an id " + std::to_string(c.tokenizer.maxId()));
  c.weights = loadGpt2Weights(base + "model.safetensors", config, budget_bytes);
  return c;
}

Architecture Model::architecture() const {
  if (const auto* g = std::get_if<Gpt2Weights>(&weights)) return describeGpt2(g->config);
  if (const auto* l = std::get_if<LlamaWeights>(&weights)) return l->arch;
  return std::get<Weights>(weights).arch;
}

HeadLayout Model::layout() const {
  if (const auto* g = std::get_if<Gpt2Weights>(&weights)) return g->config;
  return architecture().layout();
}

int Model::maxTokens() const { return architecture().max_positions; }

Model loadModel(const std::string& dir, std::size_t budget_bytes) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  const std::string config_path = base + "config.json";
  const nlohmann::json j = readJsonFile(config_path, kMaxConfigBytes);
  Model m;
  m.dir = dir;
  const bool named = j.is_object() && j.contains("model_type");
  if (!named || j["model_type"] == "gpt2") {
    Checkpoint c = loadCheckpoint(dir, budget_bytes);
    m.model_type = "gpt2";
    m.tokenizer = std::move(c.tokenizer);
    m.weights = std::move(c.weights);
    return m;
  }
  const std::string type = j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  // phimix: Phi-3, OLMo 2 and Mixtral are described (phimix_config.cpp) and loaded as GPT-NeoX is
  const bool phimix = isPhimixFamily(type);
  const bool gemma = isGemmaFamily(type);  // Gemma
  // [SECTION] encoders: BERT and RoBERTa, described (arch/bert_config.cpp) and loaded as a described family.
  const bool encoder = type == "bert" || type == "roberta";
  const bool neox = type == "gpt_neox" || phimix;
  const bool described = neox || gemma || encoder;  // loaded by arch/loader.cpp
  if (!j["model_type"].is_string() || !(described || isLlamaFamily(type)))
    throw InputError(config_path + ": model_type",
                     "gpt2, llama, mistral, qwen2, qwen3, gpt_neox, gemma, gemma2, gemma3_text, gemma3, phi3, olmo2, "
                     "mixtral, bert or roberta",
                     describeJson(j["model_type"]));
  // The config first (every refusal of its fields before any other file is read), then tokenizer.json (and
  // tokenizer_config.json's BOS/EOS), then the weights.
  const LlamaConfig llama = described ? LlamaConfig{} : llamaConfigFromJson(j, config_path);
  const Architecture arch = encoder   ? encoderArchitectureFromJson(j, config_path)
                            : phimix  ? phimixArchitectureFromJson(j, config_path)
                            : neox    ? neoxArchitectureFromJson(j, config_path)
                            : gemma   ? gemmaArchitectureFromJson(j, config_path)  // Gemma
                                      : describeLlama(llama);
  m.model_type = arch.model_type;
  m.tokenizer = Tokenizer::loadTokenizerJson(dir);
  if (m.tokenizer.maxId() >= arch.vocab_size)
    throw InputError(base + "tokenizer.json", "ids below vocab_size (" + std::to_string(arch.vocab_size) + ")",
                     "an id " + std::to_string(m.tokenizer.maxId()));
  if (described) m.weights = loadWeights(dir, arch, budget_bytes);
  else m.weights = loadLlamaWeights(dir, llama, budget_bytes);
  return m;
}

}  // namespace attnscope::model
