// Loading a checkpoint folder: config.json's model_type picks the family. GPT-2's: config.json checked, every
// tensor the config implies found (with or without the "transformer." prefix) with GPT-2's Conv1D shapes, the
// memory checked, then read as float32. The Llama family's: model/llama/.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/gpt2.h"
#include "attnscope/model/model.h"
#include "attnscope/model/safetensors.h"

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

std::string sizeText(std::size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

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

Gpt2Weights loadGpt2Weights(const std::string& weights_path, const Gpt2Config& config, std::size_t budget_bytes) {
  const SafetensorsFile file(weights_path);
  const std::int64_t d = config.n_embd;
  // name (without prefix) -> shape, in the order checked.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected = {{"wte.weight", {config.vocab_size, d}},
                                                                             {"wpe.weight", {config.n_positions, d}}};
  for (int l = 0; l < config.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    const std::vector<std::pair<std::string, std::vector<std::int64_t>>> block = {
        {h + "ln_1.weight", {d}},
        {h + "ln_1.bias", {d}},
        {h + "attn.c_attn.weight", {d, 3 * d}},
        {h + "attn.c_attn.bias", {3 * d}},
        {h + "attn.c_proj.weight", {d, d}},
        {h + "attn.c_proj.bias", {d}},
        {h + "ln_2.weight", {d}},
        {h + "ln_2.bias", {d}},
        {h + "mlp.c_fc.weight", {d, 4 * d}},
        {h + "mlp.c_fc.bias", {4 * d}},
        {h + "mlp.c_proj.weight", {4 * d, d}},
        {h + "mlp.c_proj.bias", {d}}};
    expected.insert(expected.end(), block.begin(), block.end());
  }
  expected.push_back({"ln_f.weight", {d}});
  expected.push_back({"ln_f.bias", {d}});

  // One prefix for the whole file: "transformer." (GPT2LMHeadModel) or none (GPT2Model).
  const std::string prefix = file.has("transformer.wte.weight") ? "transformer." : "";
  for (const auto& [name, shape] : expected) {
    const std::string full = prefix + name;
    const auto it = file.tensors().find(full);
    if (it == file.tensors().end())
      throw InputError(weights_path + ": tensor '" + full + "'", "present (config.json implies it)", "missing");
    const TensorInfo& info = it->second;
    if (info.dtype != DType::F32 && info.dtype != DType::F16 && info.dtype != DType::BF16)
      throw InputError(weights_path + ": tensor '" + full + "' dtype", "F32, F16 or BF16", dtypeName(info.dtype));
    if (info.shape != shape)
      throw InputError(weights_path + ": tensor '" + full + "' shape", shapeText(shape) + " (from config.json)",
                       shapeText(info.shape));
  }
  const std::size_t budget = budget_bytes ? budget_bytes : defaultMemoryBudget();
  const std::size_t need = gpt2WeightBytes(config);
  if (need > budget)
    throw InputError(weights_path + ": weights", "at most " + sizeText(budget) + " as float32 (the memory budget)",
                     sizeText(need));

  const auto vec = [&](const std::string& name) -> RowVector {
    const auto found = std::find_if(expected.begin(), expected.end(), [&](const auto& e) { return e.first == name; });
    return file.readMatrix(prefix + name, found->second);
  };
  const auto mat = [&](const std::string& name) -> Matrix {
    const auto found = std::find_if(expected.begin(), expected.end(), [&](const auto& e) { return e.first == name; });
    return file.readMatrix(prefix + name, found->second);
  };
  Gpt2Weights w;
  w.config = config;
  w.wte = mat("wte.weight");
  w.wpe = mat("wpe.weight");
  for (int l = 0; l < config.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    Gpt2Block b;
    b.ln_1_g = vec(h + "ln_1.weight");
    b.ln_1_b = vec(h + "ln_1.bias");
    b.c_attn_w = mat(h + "attn.c_attn.weight");
    b.c_attn_b = vec(h + "attn.c_attn.bias");
    b.c_proj_w = mat(h + "attn.c_proj.weight");
    b.c_proj_b = vec(h + "attn.c_proj.bias");
    b.ln_2_g = vec(h + "ln_2.weight");
    b.ln_2_b = vec(h + "ln_2.bias");
    b.fc_w = mat(h + "mlp.c_fc.weight");
    b.fc_b = vec(h + "mlp.c_fc.bias");
    b.mlp_proj_w = mat(h + "mlp.c_proj.weight");
    b.mlp_proj_b = vec(h + "mlp.c_proj.bias");
    w.blocks.push_back(std::move(b));
  }
  w.ln_f_g = vec("ln_f.weight");
  w.ln_f_b = vec("ln_f.bias");
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

HeadLayout Model::layout() const {
  if (const auto* g = std::get_if<Gpt2Weights>(&weights)) return g->config;
  return std::get<LlamaWeights>(weights).config.layout();
}

int Model::maxTokens() const {
  if (const auto* g = std::get_if<Gpt2Weights>(&weights)) return g->config.n_positions;
  return std::get<LlamaWeights>(weights).config.max_positions;
}

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
  if (!j["model_type"].is_string() || !isLlamaFamily(j["model_type"].get<std::string>()))
    throw InputError(config_path + ": model_type", "gpt2, llama, mistral, qwen2 or qwen3", describeJson(j["model_type"]));
  const LlamaConfig config = llamaConfigFromJson(j, config_path);
  m.model_type = config.model_type;
  m.tokenizer = Tokenizer::loadTokenizerJson(dir);  // tokenizer.json (and tokenizer_config.json's BOS/EOS)
  if (m.tokenizer.maxId() >= config.vocab_size)
    throw InputError(base + "tokenizer.json", "ids below vocab_size (" + std::to_string(config.vocab_size) + ")",
                     "an id " + std::to_string(m.tokenizer.maxId()));
  m.weights = loadLlamaWeights(dir, config, budget_bytes);
  return m;
}

}  // namespace attnscope::model
