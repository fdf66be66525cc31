// The one loader: a checkpoint's tensors through its family's name table (tensor_names.cpp), from
// model.safetensors, one named file, or the shards model.safetensors.index.json's weight_map names. Every tensor
// the config implies is found (in the file the index names) with its dtype and shape checked, naming the config
// fields a shape comes from, and the memory checked, before any is read; then each is read into its slot, fused
// tensors split. Tensors no slot names (GPT-NeoX's attention.bias, masked_bias, rotary_emb.inv_freq buffers) are
// never read.
#include <sys/stat.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/architecture.h"
#include "attnscope/model/safetensors.h"
#include "attnscope/scene/scene.h"
#include "attnscope/text_bounds.h"
#include "model/arch/stage_timings.h"
#include "model/arch/tensor_names.h"

namespace attnscope::model {

namespace {

constexpr std::size_t kMaxIndexBytes = std::size_t{64} << 20;  // Llama 3.1 405B's index is about 1 MB

std::string quotedName(const std::string& s) { return quoteFragment(s, 80); }
bool isFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Where each tensor lives: one file (`file` given, or DIR/model.safetensors), or the shard the index's weight_map
// names (opened once).
class TensorFiles {
 public:
  TensorFiles(const std::string& dir, const std::string& file)
      : base_(dir.empty() || dir.back() == '/' ? dir : dir + "/") {
    index_ = base_ + "model.safetensors.index.json";
    if (!file.empty() || !isFile(index_)) {
      single_ = std::make_unique<SafetensorsFile>(file.empty() ? base_ + "model.safetensors" : file);
      return;
    }
    const nlohmann::json j = readJsonFile(index_, kMaxIndexBytes);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw InputError(index_ + ": weight_map", "an object of tensor name -> shard file",
                       j.is_object() && j.contains("weight_map") ? describeJson(j["weight_map"]) : "nothing");
    for (const auto& [name, shard] : j["weight_map"].items()) {
      // A bare file name beside the index: never a path that leaves the folder.
      const bool plain = shard.is_string() && !shard.get<std::string>().empty() &&
                         shard.get<std::string>().find('/') == std::string::npos && shard != "." && shard != "..";
      if (!plain)
        throw InputError(index_ + ": weight_map[" + quotedName(name) + "]", "a shard's file name in the same folder",
                         describeJson(shard));
      weight_map_.emplace(name, shard.get<std::string>());
    }
  }

  bool has(const std::string& name) const { return single_ ? single_->has(name) : weight_map_.count(name) != 0; }

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

std::size_t elements(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::int64_t s : shape) n *= static_cast<std::size_t>(s);
  return n;
}

// GPT-NeoX's fused query_key_value, its output viewed as (heads, 3, head_dim): rows of head h's q, k and v side by
// side, into q heads | k heads | v heads. `fused`: (3 q_dim, cols) rows in the file's order; the result likewise.
Matrix splitPerHead(const Matrix& fused, int heads, int head_dim) {
  Matrix out(fused.rows(), fused.cols());
  const int q_dim = heads * head_dim;
  for (int h = 0; h < heads; ++h)
    for (int part = 0; part < 3; ++part)
      out.middleRows(part * q_dim + h * head_dim, head_dim) = fused.middleRows((3 * h + part) * head_dim, head_dim);
  return out;
}

}  // namespace

std::size_t weightBytes(const Architecture& a) {
  std::size_t floats = 0;
  for (const ExpectedTensor& e : expectedTensors(a, ""))
    if (e.slot != Slot::LmHead) floats += elements(e.shape);
  return 4 * floats;
}

Weights loadWeights(const std::string& dir, const Architecture& a, std::size_t budget_bytes,
                    const std::string& weights_file) {
  StageTimings timings("weights");
  TensorFiles files(dir, weights_file);
  const std::vector<std::string> prefixes = bodyPrefixes(a);
  std::string prefix = prefixes.front();
  for (const std::string& p : prefixes)
    if (files.has(p + embedName(a))) {
      prefix = p;
      break;
    }
  std::vector<ExpectedTensor> expected = expectedTensors(a, prefix);
  // Older BERT checkpoints name LayerNorm's weight and bias gamma and beta (transformers renames them on load).
  for (ExpectedTensor& e : expected) {
    const bool norm = isNormSlot(e.slot);
    const std::size_t dot = e.name.rfind('.');
    const std::string old_name = e.name.substr(0, dot) + (e.name.substr(dot) == ".weight" ? ".gamma" : ".beta");
    if (norm && !files.has(e.name) && files.has(old_name)) e.name = old_name;
  }
  std::vector<const SafetensorsFile*> where;
  bool stored[3] = {false, false, false};  // bfloat16, float16, float32 seen
  for (const ExpectedTensor& e : expected) {
    const SafetensorsFile& file = files.fileFor(e.name, "config.json implies it");
    const TensorInfo& info = file.tensors().at(e.name);
    stored[info.dtype == DType::BF16 ? 0 : info.dtype == DType::F16 ? 1 : 2] = true;
    const std::string field = file.path() + ": tensor '" + e.name + "'";
    if (info.dtype != DType::F32 && info.dtype != DType::F16 && info.dtype != DType::BF16)
      throw InputError(field + " dtype", "F32, F16 or BF16", dtypeName(info.dtype));
    if (info.shape != e.shape)
      throw InputError(field + " shape", shapeText(e.shape) + " (config.json: " + e.why + ")", shapeText(info.shape));
    where.push_back(&file);
  }
  const std::size_t budget = budget_bytes ? budget_bytes : defaultMemoryBudget();
  const std::size_t need = weightBytes(a);
  if (need > budget)
    throw InputError((weights_file.empty() ? dir : weights_file) + ": weights",
                     "at most " + byteString(budget) + " as float32 (the memory budget)", byteString(need));
  timings.mark("index, dtypes and shapes");

  Weights w;
  const char* const torch_names[3] = {"bfloat16", "float16", "float32"};
  for (int k = 0; k < 3; ++k)
    if (stored[k]) w.stored_dtype += (w.stored_dtype.empty() ? "" : " and ") + std::string(torch_names[k]);
  w.arch = a;
  w.layers.resize(static_cast<std::size_t>(a.n_layer));
  const int q = a.qDim(), kv = a.kvDim(), inter = a.intermediate;
  // Separate q/k/v and gate/up go straight into rows of one fused matrix (row-major (out, in)): no temporary, no
  // second copy (1.7 GB of page faults at Qwen3-0.6B).
  for (LayerWeights& L : w.layers) {
    if (a.qkv == QkvStorage::Separate) {
      L.w_qkv.resize(q + 2 * kv, a.hidden);
      if (a.qkv_bias) L.b_qkv.resize(q + 2 * kv);
    }
    if (a.mlp == MlpKind::Gated && a.n_experts == 0) L.w_up.resize(2 * inter, a.hidden);
    // Mixtral's experts, w1 and w3 into one (2 intermediate, hidden) matrix each, as a gated MLP's
    if (a.n_experts > 0) {
      L.expert_up.assign(static_cast<std::size_t>(a.n_experts), Matrix(2 * inter, a.hidden));
      L.expert_down.resize(static_cast<std::size_t>(a.n_experts));
    }
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const ExpectedTensor& e = expected[i];
    const SafetensorsFile& file = *where[i];
    const auto read = [&] { return file.readMatrix(e.name, e.shape); };
    const auto into = [&](float* dst) { file.readInto(e.name, e.shape, dst); };
    LayerWeights* L = e.layer >= 0 ? &w.layers[static_cast<std::size_t>(e.layer)] : nullptr;
    switch (e.slot) {
      case Slot::Embed: w.embed = read(); break;
      case Slot::PosEmbed: w.pos_embed = read(); break;
      case Slot::FinalG: w.final_g = read(); break;
      case Slot::FinalB: w.final_b = read(); break;
      case Slot::AttnInG: L->attn_norms.in.g = read(); break;
      case Slot::AttnInB: L->attn_norms.in.b = read(); break;
      case Slot::AttnBranchG: L->attn_norms.branch.g = read(); break;
      case Slot::AttnBranchB: L->attn_norms.branch.b = read(); break;
      case Slot::AttnOutG: L->attn_norms.out.g = read(); break;
      case Slot::AttnOutB: L->attn_norms.out.b = read(); break;
      case Slot::MlpInG: L->mlp_norms.in.g = read(); break;
      case Slot::MlpInB: L->mlp_norms.in.b = read(); break;
      case Slot::MlpBranchG: L->mlp_norms.branch.g = read(); break;
      case Slot::MlpBranchB: L->mlp_norms.branch.b = read(); break;
      case Slot::MlpOutG: L->mlp_norms.out.g = read(); break;
      case Slot::MlpOutB: L->mlp_norms.out.b = read(); break;
      case Slot::Q: into(L->w_qkv.data()); break;
      case Slot::K: into(L->w_qkv.row(q).data()); break;
      case Slot::V: into(L->w_qkv.row(q + kv).data()); break;
      case Slot::QB: L->b_qkv.head(q) = read(); break;
      case Slot::KB: L->b_qkv.segment(q, kv) = read(); break;
      case Slot::VB: L->b_qkv.tail(kv) = read(); break;
      case Slot::Qkv:
        L->w_qkv = a.qkv == QkvStorage::FusedPerHead ? splitPerHead(read(), a.n_head, a.head_dim) : read();
        break;
      case Slot::QkvB:
        L->b_qkv = a.qkv == QkvStorage::FusedPerHead ? RowVector(splitPerHead(read().transpose(), a.n_head, a.head_dim).transpose())
                                                     : RowVector(read());
        break;
      case Slot::QNorm: L->q_norm = read(); break;
      case Slot::KNorm: L->k_norm = read(); break;
      case Slot::O: L->w_o = read(); break;
      case Slot::OB: L->b_o = read(); break;
      case Slot::Gate: into(L->w_up.data()); break;  // gate rows, then up rows
      case Slot::Up:
        if (a.mlp == MlpKind::Gated) into(L->w_up.row(inter).data());
        else L->w_up = read();
        break;
      case Slot::UpB: L->b_up = read(); break;
      case Slot::Down: L->w_down = read(); break;
      case Slot::DownB: L->b_down = read(); break;
      case Slot::GateUp: into(L->w_up.data()); break;  // gate rows, then up rows, as stored
      case Slot::Router: L->router = read(); break;
      case Slot::ExpertGate: into(L->expert_up[static_cast<std::size_t>(e.expert)].data()); break;
      case Slot::ExpertUp: into(L->expert_up[static_cast<std::size_t>(e.expert)].row(inter).data()); break;
      case Slot::ExpertDown: L->expert_down[static_cast<std::size_t>(e.expert)] = read(); break;
      case Slot::TypeEmbed: w.type_embed = read(); break;
      case Slot::EmbedNormG: w.embed_norm_g = read(); break;
      case Slot::EmbedNormB: w.embed_norm_b = read(); break;
      case Slot::LmHead: break;
    }
  }
  if (a.norm_plus_one) {  // Gemma: every RMSNorm is x / rms * (1 + w), 1 + w in float32 as Gemma's RMSNorm
    for (LayerWeights& L : w.layers)
      for (RowVector* g : {&L.attn_norms.in.g, &L.attn_norms.branch.g, &L.attn_norms.out.g, &L.mlp_norms.in.g,
                           &L.mlp_norms.branch.g, &L.mlp_norms.out.g, &L.q_norm, &L.k_norm})
        g->array() += 1.0f;  // an absent slot is empty: nothing to add to
    w.final_g.array() += 1.0f;
  }
  timings.mark("read + convert to float32");
  return w;
}

MaskedLmHead loadMaskedLmHead(const std::string& dir, const Architecture& a) {
  const bool roberta = a.model_type == "roberta";
  const std::string p = roberta ? "lm_head." : "cls.predictions.";
  const std::string dense = roberta ? "lm_head.dense" : "cls.predictions.transform.dense";
  const std::string norm = roberta ? "lm_head.layer_norm" : "cls.predictions.transform.LayerNorm";
  const std::string why = "the masked-LM head, for a metric on the encoder's predictions";
  TensorFiles files(dir, "");
  const auto read = [&](const std::string& name, std::vector<std::int64_t> shape, const std::string& old = "") {
    const std::string found = !old.empty() && !files.has(name) && files.has(old) ? old : name;
    return files.fileFor(found, why).readMatrix(found, shape);
  };
  const std::int64_t d = a.hidden;
  MaskedLmHead h;
  h.dense = read(dense + ".weight", {d, d});
  h.dense_b = read(dense + ".bias", {d});
  h.norm_g = read(norm + ".weight", {d}, norm + ".gamma");
  h.norm_b = read(norm + ".bias", {d}, norm + ".beta");
  h.bias = read(p + "bias", {a.vocab_size}, p + "decoder.bias");
  h.act = roberta ? Activation::GeluErf : a.activation;
  return h;
}

Matrix loadUnembedding(const std::string& dir, const Architecture& a, std::size_t budget_bytes) {
  for (const ExpectedTensor& e : expectedTensors(a, ""))
    if (e.slot == Slot::LmHead) {
      checkMemoryBudget("unembedding", "the unembedding " + e.name + " " + shapeText(e.shape),
                        elements(e.shape) * sizeof(float), budget_bytes);
      TensorFiles files(dir, "");
      return files.fileFor(e.name, e.why).readMatrix(e.name, e.shape);
    }
  return {};
}

}  // namespace attnscope::model
