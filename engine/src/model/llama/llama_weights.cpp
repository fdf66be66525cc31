// Loading a Llama-family checkpoint's weights: model.safetensors, or the shards model.safetensors.index.json's
// weight_map names. Every tensor the config implies is found in the file the index names, with its dtype and
// shape checked (naming the config fields a shape comes from), and the memory checked, before any is read.
#include <sys/stat.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/llama.h"
#include "attnscope/model/safetensors.h"
#include "attnscope/scene/scene.h"
#include "attnscope/text_bounds.h"
#include "model/llama/stage_timings.h"

namespace attnscope::model {

namespace {

constexpr std::size_t kMaxIndexBytes = std::size_t{64} << 20;  // Llama 3.1 405B's index is about 1 MB

std::string quotedName(const std::string& s) { return quoteFragment(s, 80); }
std::string sizeText(std::size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }
bool isFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Where each tensor lives: DIR/model.safetensors, or the shard the index's weight_map names (opened once).
class TensorFiles {
 public:
  explicit TensorFiles(const std::string& dir) : base_(dir.empty() || dir.back() == '/' ? dir : dir + "/") {
    index_ = base_ + "model.safetensors.index.json";
    if (!isFile(index_)) {
      single_ = std::make_unique<SafetensorsFile>(base_ + "model.safetensors");
      return;
    }
    const nlohmann::json j = readJsonFile(index_, kMaxIndexBytes);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw InputError(index_ + ": weight_map", "an object of tensor name -> shard file",
                       j.is_object() && j.contains("weight_map") ? describeJson(j["weight_map"]) : "nothing");
    for (const auto& [name, file] : j["weight_map"].items()) {
      // A bare file name beside the index: never a path that leaves the folder.
      const bool plain = file.is_string() && !file.get<std::string>().empty() &&
                         file.get<std::string>().find('/') == std::string::npos && file != "." && file != "..";
      if (!plain)
        throw InputError(index_ + ": weight_map[" + quotedName(name) + "]", "a shard's file name in the same folder",
                         describeJson(file));
      weight_map_.emplace(name, file.get<std::string>());
    }
  }

  // The file that must hold `name`; it does (checked here, naming the index that placed it there).
  const SafetensorsFile& fileFor(const std::string& name, const std::string& why) {
    if (single_) {
      if (!single_->has(name))
        throw InputError(single_->path() + ": tensor '" + name + "'", "present (" + why + ")", "missing");
      return *single_;
    }
    const auto it = weight_map_.find(name);
    if (it == weight_map_.end())
      throw InputError(index_ + ": weight_map[" + quotedName(name) + "]", "an entry (" + why + ")", "none");
    auto& file = shards_[it->second];
    if (!file) {
      const std::string path = base_ + it->second;
      if (!isFile(path))
        throw InputError(index_ + ": weight_map[" + quotedName(name) + "]", "a shard file that exists",
                         quotedName(it->second) + ", which " + base_ + " does not hold");
      file = std::make_unique<SafetensorsFile>(path);
    }
    if (!file->has(name))
      throw InputError(file->path() + ": tensor '" + name + "'",
                       "present (model.safetensors.index.json places it in this shard)", "missing");
    return *file;
  }

 private:
  std::string base_, index_;
  std::unique_ptr<SafetensorsFile> single_;
  std::map<std::string, std::string> weight_map_;
  std::map<std::string, std::unique_ptr<SafetensorsFile>> shards_;
};

struct Expected {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string why;  // the config fields the shape comes from, for messages
};

std::vector<Expected> expectedTensors(const LlamaConfig& c) {
  const std::int64_t d = c.hidden, q = c.qDim(), kv = c.kvDim(), inter = c.intermediate, hd = c.head_dim;
  const std::string heads = "num_attention_heads " + std::to_string(c.n_head) + " x head_dim " + std::to_string(hd);
  const std::string kv_heads = "num_key_value_heads " + std::to_string(c.n_kv_head) + " x head_dim " + std::to_string(hd);
  std::vector<Expected> e = {{"model.embed_tokens.weight", {c.vocab_size, d}, "vocab_size x hidden_size"}};
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    e.push_back({p + "input_layernorm.weight", {d}, "hidden_size"});
    e.push_back({p + "self_attn.q_proj.weight", {q, d}, heads + ", hidden_size"});
    e.push_back({p + "self_attn.k_proj.weight", {kv, d}, kv_heads + ", hidden_size"});
    e.push_back({p + "self_attn.v_proj.weight", {kv, d}, kv_heads + ", hidden_size"});
    if (c.qkv_bias) {
      e.push_back({p + "self_attn.q_proj.bias", {q}, heads});
      e.push_back({p + "self_attn.k_proj.bias", {kv}, kv_heads});
      e.push_back({p + "self_attn.v_proj.bias", {kv}, kv_heads});
    }
    if (c.qk_norm) {
      e.push_back({p + "self_attn.q_norm.weight", {hd}, "head_dim"});
      e.push_back({p + "self_attn.k_norm.weight", {hd}, "head_dim"});
    }
    e.push_back({p + "self_attn.o_proj.weight", {d, q}, "hidden_size, " + heads});
    if (c.o_bias) e.push_back({p + "self_attn.o_proj.bias", {d}, "hidden_size"});
    e.push_back({p + "post_attention_layernorm.weight", {d}, "hidden_size"});
    e.push_back({p + "mlp.gate_proj.weight", {inter, d}, "intermediate_size x hidden_size"});
    e.push_back({p + "mlp.up_proj.weight", {inter, d}, "intermediate_size x hidden_size"});
    e.push_back({p + "mlp.down_proj.weight", {d, inter}, "hidden_size x intermediate_size"});
  }
  e.push_back({"model.norm.weight", {d}, "hidden_size"});
  return e;
}

}  // namespace

std::size_t llamaWeightBytes(const LlamaConfig& c) {
  const std::size_t d = static_cast<std::size_t>(c.hidden), q = static_cast<std::size_t>(c.qDim()),
                    kv = static_cast<std::size_t>(c.kvDim()), inter = static_cast<std::size_t>(c.intermediate);
  const std::size_t per_layer = 2 * d + (q + 2 * kv) * (d + 1) + 2 * static_cast<std::size_t>(c.head_dim) +
                                d * q + d + 3 * inter * d;
  return 4 * (static_cast<std::size_t>(c.vocab_size) * d + static_cast<std::size_t>(c.n_layer) * per_layer + d);
}

LlamaWeights loadLlamaWeights(const std::string& dir, const LlamaConfig& c, std::size_t budget_bytes) {
  StageTimings timings("llama weights");
  TensorFiles files(dir);
  std::vector<Expected> expected = expectedTensors(c);
  // lm_head is checked (an untied checkpoint without it is broken) but not read: maps need no logits.
  std::vector<Expected> checked = expected;
  if (!c.tie_word_embeddings)
    checked.push_back({"lm_head.weight", {c.vocab_size, c.hidden}, "vocab_size x hidden_size; tie_word_embeddings false"});
  std::map<std::string, const SafetensorsFile*> where;
  for (const Expected& e : checked) {
    const SafetensorsFile& file = files.fileFor(e.name, "config.json implies it");
    const TensorInfo& info = file.tensors().at(e.name);
    const std::string field = file.path() + ": tensor '" + e.name + "'";
    if (info.dtype != DType::F32 && info.dtype != DType::F16 && info.dtype != DType::BF16)
      throw InputError(field + " dtype", "F32, F16 or BF16", dtypeName(info.dtype));
    if (info.shape != e.shape)
      throw InputError(field + " shape", shapeText(e.shape) + " (config.json: " + e.why + ")", shapeText(info.shape));
    where[e.name] = &file;
  }
  const std::size_t budget = budget_bytes ? budget_bytes : defaultMemoryBudget();
  const std::size_t need = llamaWeightBytes(c);
  if (need > budget)
    throw InputError(dir + ": weights", "at most " + sizeText(budget) + " as float32 (the memory budget)", sizeText(need));
  timings.mark("index, dtypes and shapes");

  std::map<std::string, const Expected*> shape_of;
  for (const Expected& e : expected) shape_of[e.name] = &e;
  const auto read = [&](const std::string& name) -> Matrix { return where.at(name)->readMatrix(name, shape_of.at(name)->shape); };
  // Straight into (rows of) a fused matrix: no temporary, no second copy (1.7 GB of page faults at Qwen3-0.6B).
  const auto readInto = [&](const std::string& name, float* dst) { where.at(name)->readInto(name, shape_of.at(name)->shape, dst); };
  LlamaWeights w;
  w.config = c;
  w.embed = read("model.embed_tokens.weight");
  const int q = c.qDim(), kv = c.kvDim();
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LlamaLayer L;
    L.input_norm = read(p + "input_layernorm.weight");
    L.w_qkv.resize(q + 2 * kv, c.hidden);
    readInto(p + "self_attn.q_proj.weight", L.w_qkv.data());  // (q + 2 kv, hidden) row-major: q, k, v rows
    readInto(p + "self_attn.k_proj.weight", L.w_qkv.row(q).data());
    readInto(p + "self_attn.v_proj.weight", L.w_qkv.row(q + kv).data());
    if (c.qkv_bias) {
      L.b_qkv.resize(q + 2 * kv);
      L.b_qkv.head(q) = read(p + "self_attn.q_proj.bias");
      L.b_qkv.segment(q, kv) = read(p + "self_attn.k_proj.bias");
      L.b_qkv.tail(kv) = read(p + "self_attn.v_proj.bias");
    }
    if (c.qk_norm) {
      L.q_norm = read(p + "self_attn.q_norm.weight");
      L.k_norm = read(p + "self_attn.k_norm.weight");
    }
    L.w_o.resize(c.hidden, q);
    readInto(p + "self_attn.o_proj.weight", L.w_o.data());
    if (c.o_bias) L.b_o = read(p + "self_attn.o_proj.bias");
    L.post_norm = read(p + "post_attention_layernorm.weight");
    L.w_gate_up.resize(2 * c.intermediate, c.hidden);
    readInto(p + "mlp.gate_proj.weight", L.w_gate_up.data());  // (2 intermediate, hidden): gate rows, then up
    readInto(p + "mlp.up_proj.weight", L.w_gate_up.row(c.intermediate).data());
    L.w_down.resize(c.hidden, c.intermediate);
    readInto(p + "mlp.down_proj.weight", L.w_down.data());
    w.layers.push_back(std::move(L));
  }
  w.norm = read("model.norm.weight");
  timings.mark("read + convert to float32");
  return w;
}

}  // namespace attnscope::model
