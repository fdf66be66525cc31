// The name table per family: a checkpoint's tensor names, the config fields each shape comes from, and the
// forward's stage names in the family's words. GPT-2 (GPT2LMHeadModel / GPT2Model), the Llama family
// (LlamaForCausalLM and kin), GPT-NeoX (GPTNeoXForCausalLM: embed_in, query_key_value, dense_h_to_4h, embed_out)
// and the encoders BERT and RoBERTa.
#include "model/arch/tensor_names.h"

#include <cmath>
#include <stdexcept>

#include "model/arch/families.h"

namespace attnscope::model {

namespace {

FamilyNames withNames(FamilyNames f, const char* qkv, const char* up, const char* norm1, const char* norm2,
                      StageNames stages) {
  f.qkv = qkv, f.up = up, f.norm1 = norm1, f.norm2 = norm2, f.stages = std::move(stages);
  return f;
}
}  // namespace

const FamilyNames kGpt2Names = {
    {"", "transformer."}, "wte", "wpe", "ln_f", "h.",
    "ln_1", "ln_2", nullptr, nullptr, nullptr, "attn.c_attn", nullptr, nullptr, "attn.c_proj", nullptr, "mlp.c_fc",
    "mlp.c_proj", nullptr,
    "n_embd", "n_head", "n_head", "4 x n_embd", "vocab_size", "n_positions",
    {"the embedding (wte + wpe)", "ln_1", "attention c_attn (q, k, v)", "attention c_proj + residual", "ln_2",
     "mlp c_fc + gelu", "mlp c_proj + residual", "ln_f"}};

const FamilyNames kLlamaNames = {
    {"model."}, "embed_tokens", nullptr, "norm", "layers.",
    "input_layernorm", "post_attention_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
    nullptr, "self_attn.q_norm", "self_attn.k_norm", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
    "mlp.down_proj", "lm_head.weight",
    "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size",
    "max_position_embeddings",
    {"the embedding (embed_tokens)", "input_layernorm", "attention q, k, v (after RoPE)", "attention o_proj + residual",
     "post_attention_layernorm", "mlp gate/up + silu", "mlp down_proj + residual", "the final norm"}};

const FamilyNames kNeoxNames = {
    {"gpt_neox.", ""}, "embed_in", nullptr, "final_layer_norm", "layers.",
    "input_layernorm", "post_attention_layernorm", nullptr, nullptr, nullptr, "attention.query_key_value", nullptr,
    nullptr, "attention.dense", nullptr, "mlp.dense_h_to_4h", "mlp.dense_4h_to_h", "embed_out.weight",
    "hidden_size", "num_attention_heads", "num_attention_heads", "intermediate_size", "vocab_size",
    "max_position_embeddings",
    {"the embedding (embed_in)", "input_layernorm", "attention query_key_value (after RoPE)",
     "attention dense + residual", "post_attention_layernorm", "mlp dense_h_to_4h + gelu",
     "mlp dense_4h_to_h + residual", "final_layer_norm"}};

// --- Gemma: GemmaForCausalLM as Llama's names; Gemma 2/3's pre_feedforward_layernorm is the MLP's input norm (their
// post_attention_layernorm and post_feedforward_layernorm are the sandwich norms, expectedTensors' Gemma block).
// gemma3's text model is language_model.model. (transformers < 4.52) or model.language_model. (later).
const FamilyNames kGemmaNames = [] {  // Llama's tensor and config names; its own stages
  FamilyNames names = kLlamaNames;
  names.stages = {"the embedding (embed_tokens x sqrt(hidden_size))", "input_layernorm", "attention q, k, v (after RoPE)",
                  "attention o_proj + residual", "post_attention_layernorm", "mlp gate/up + gelu",
                  "mlp down_proj + residual", "the final norm"};
  return names;
}();
const FamilyNames kGemma2Names = {
    {"model.", "language_model.model.", "model.language_model."}, "embed_tokens", nullptr, "norm", "layers.",
    "input_layernorm", "pre_feedforward_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
    nullptr, "self_attn.q_norm", "self_attn.k_norm", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
    "mlp.down_proj", "lm_head.weight",
    "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size",
    "max_position_embeddings",
    {"the embedding (embed_tokens x sqrt(hidden_size))", "input_layernorm",
     "attention q, k, v (after q_norm/k_norm and RoPE)", "attention o_proj + post_attention_layernorm + residual",
     "pre_feedforward_layernorm", "mlp gate/up + gelu", "mlp down_proj + post_feedforward_layernorm + residual",
     "the final norm"}};

// Phi-3 (fused qkv_proj and gate_up_proj), OLMo 2 (post norms), Mixtral (block_sparse_moe): Llama's names, changed.
const FamilyNames kPhi3Names = withNames(
    kLlamaNames, "self_attn.qkv_proj", "mlp.gate_up_proj", "input_layernorm", "post_attention_layernorm",
    {"the embedding (embed_tokens)", "input_layernorm", "attention qkv_proj (after RoPE)", "attention o_proj + residual",
     "post_attention_layernorm", "mlp gate_up_proj + silu", "mlp down_proj + residual", "the final norm"});
const FamilyNames kOlmo2Names = withNames(
    kLlamaNames, nullptr, "mlp.up_proj", "post_attention_layernorm", "post_feedforward_layernorm",
    {"the embedding (embed_tokens)", "the layer input", "attention q, k, v (q_norm, k_norm, after RoPE)",
     "attention o_proj, post_attention_layernorm + residual", "the MLP input", "mlp gate/up + silu",
     "mlp down_proj, post_feedforward_layernorm + residual", "the final norm"});
const FamilyNames kMixtralNames = withNames(
    kLlamaNames, nullptr, "mlp.up_proj", "input_layernorm", "post_attention_layernorm",
    {"the embedding (embed_tokens)", "input_layernorm", "attention q, k, v (after RoPE)", "attention o_proj + residual",
     "post_attention_layernorm", "block_sparse_moe experts w1/w3 + silu", "block_sparse_moe w2, routed + residual",
     "the final norm"});
// [SECTION] encoders: BertModel / BertForMaskedLM ("bert." before the body), RobertaModel / RobertaFor* ("roberta.").
// Post-norm: norm1 is the norm after attention (attention.output.LayerNorm), norm2 the one after the MLP; no final
// norm. The embedding's norm and token types are named in expectedTensors. Pooler and MLM head: never read.
#define ATTNSCOPE_ENCODER_NAMES(PREFIX)                                                                              \
  {{PREFIX, ""}, "embeddings.word_embeddings", "embeddings.position_embeddings", nullptr, "encoder.layer.",          \
   "attention.output.LayerNorm", "output.LayerNorm", "attention.self.query", "attention.self.key",                  \
   "attention.self.value", nullptr, nullptr, nullptr, "attention.output.dense", nullptr, "intermediate.dense",       \
   "output.dense", nullptr,                                                                                          \
   "hidden_size", "num_attention_heads", "num_attention_heads", "intermediate_size", "vocab_size",                  \
   "max_position_embeddings",                                                                                        \
   {"the embedding (word + position + token type)", "the layer's input", "attention query, key, value",             \
    "attention output.dense + residual", "attention.output.LayerNorm", "intermediate.dense + gelu",                 \
    "output.dense + residual", "output.LayerNorm"}}
const FamilyNames kBertNames = ATTNSCOPE_ENCODER_NAMES("bert.");
const FamilyNames kRobertaNames = ATTNSCOPE_ENCODER_NAMES("roberta.");
#undef ATTNSCOPE_ENCODER_NAMES

namespace {

const FamilyNames& namesOf(const Architecture& a) {
  const Family* f = findFamily(a.model_type);
  if (!f) throw std::logic_error("no tensor names for model_type " + a.model_type);  // every reader names a row
  return *f->names;
}

}  // namespace

bool isNormSlot(Slot s) {
  switch (s) {
    case Slot::FinalG: case Slot::FinalB: case Slot::EmbedNormG: case Slot::EmbedNormB:
    case Slot::AttnInG: case Slot::AttnInB: case Slot::AttnBranchG: case Slot::AttnBranchB: case Slot::AttnOutG:
    case Slot::AttnOutB: case Slot::MlpInG: case Slot::MlpInB: case Slot::MlpBranchG: case Slot::MlpBranchB:
    case Slot::MlpOutG: case Slot::MlpOutB:
      return true;
    default:
      return false;
  }
}

float Architecture::scoreScale() const {
  // Gemma 2/3: query_pre_attn_scalar ** -0.5, a Python float, rounded once to float32.
  if (query_pre_attn_scalar > 0) return static_cast<float>(1.0 / std::sqrt(query_pre_attn_scalar));
  return 1.0f / std::sqrt(static_cast<float>(head_dim));
}

HeadLayout Architecture::layout() const {
  HeadLayout l(n_layer, n_head, n_kv_head);
  l.window = window;
  l.causal = causal;  // an encoder's maps are full
  return l;
}

std::vector<std::string> bodyPrefixes(const Architecture& a) { return namesOf(a).prefixes; }
std::string embedName(const Architecture& a) { return std::string(namesOf(a).embed) + ".weight"; }
StageNames stageNames(const Architecture& a) { return namesOf(a).stages; }

std::vector<ExpectedTensor> expectedTensors(const Architecture& a, const std::string& prefix) {
  const FamilyNames& f = namesOf(a);
  const std::int64_t d = a.hidden, q = a.qDim(), kv = a.kvDim(), inter = a.intermediate, hd = a.head_dim;
  const std::string hidden = f.f_hidden;
  const std::string heads = std::string(f.f_heads) + " " + std::to_string(a.n_head) + " x head_dim " + std::to_string(hd);
  const std::string kv_heads =
      std::string(f.f_kv_heads) + " " + std::to_string(a.n_kv_head) + " x head_dim " + std::to_string(hd);
  const std::string inter_why = f.f_inter;
  // A linear layer's weight: (out, in), or (in, out) in GPT-2's Conv1D.
  const auto lin = [&](std::int64_t out, std::int64_t in) {
    return a.conv1d ? std::vector<std::int64_t>{in, out} : std::vector<std::int64_t>{out, in};
  };
  std::vector<ExpectedTensor> e = {{prefix + f.embed + ".weight", {a.vocab_size, d},
                                    std::string(f.f_vocab) + " x " + hidden, Slot::Embed}};
  if (a.learned_positions)
    e.push_back({prefix + f.pos_embed + ".weight", {a.max_positions + a.position_offset, d},
                 std::string(f.f_positions) + " x " + hidden, Slot::PosEmbed});
  if (a.type_vocab_size > 0)  // encoders
    e.push_back({prefix + "embeddings.token_type_embeddings.weight", {a.type_vocab_size, d},
                 "type_vocab_size x " + hidden, Slot::TypeEmbed});
  if (a.embed_norm) {
    e.push_back({prefix + "embeddings.LayerNorm.weight", {d}, hidden, Slot::EmbedNormG});
    if (a.norm_bias) e.push_back({prefix + "embeddings.LayerNorm.bias", {d}, hidden, Slot::EmbedNormB});
  }
  for (int l = 0; l < a.n_layer; ++l) {
    const std::string p = prefix + f.layers + std::to_string(l) + ".";
    const auto add = [&](const std::string& name, std::vector<std::int64_t> shape, const std::string& why, Slot slot) {
      e.push_back({p + name, std::move(shape), why, slot, l});
    };
    // The family's two norms where its description puts them: on each sublayer's input (pre-norm), on its
    // branch before the add (OLMo 2's post norms), or on the sum after it (the encoders' post-norm residual).
    const bool after_add = a.residual == Residual::PostNorm;
    const Slot norm1_g = after_add ? Slot::AttnOutG : a.post_norms ? Slot::AttnBranchG : Slot::AttnInG;
    const Slot norm1_b = after_add ? Slot::AttnOutB : a.post_norms ? Slot::AttnBranchB : Slot::AttnInB;
    const Slot norm2_g = after_add ? Slot::MlpOutG : a.post_norms ? Slot::MlpBranchG : Slot::MlpInG;
    const Slot norm2_b = after_add ? Slot::MlpOutB : a.post_norms ? Slot::MlpBranchB : Slot::MlpInB;
    add(std::string(f.norm1) + ".weight", {d}, hidden, norm1_g);
    if (a.norm_bias) add(std::string(f.norm1) + ".bias", {d}, hidden, norm1_b);
    if (a.qkv == QkvStorage::Separate) {
      add(std::string(f.q) + ".weight", lin(q, d), heads + ", " + hidden, Slot::Q);
      add(std::string(f.k) + ".weight", lin(kv, d), kv_heads + ", " + hidden, Slot::K);
      add(std::string(f.v) + ".weight", lin(kv, d), kv_heads + ", " + hidden, Slot::V);
      if (a.qkv_bias) {
        add(std::string(f.q) + ".bias", {q}, heads, Slot::QB);
        add(std::string(f.k) + ".bias", {kv}, kv_heads, Slot::KB);
        add(std::string(f.v) + ".bias", {kv}, kv_heads, Slot::VB);
      }
    } else {
      const std::string why = q == kv ? "3 x " + heads : heads + " + 2 x " + kv_heads;
      add(std::string(f.qkv) + ".weight", lin(q + 2 * kv, d), why + ", " + hidden, Slot::Qkv);
      if (a.qkv_bias) add(std::string(f.qkv) + ".bias", {q + 2 * kv}, why, Slot::QkvB);
    }
    if (a.qk_norm) {
      add(std::string(f.q_norm) + ".weight", {hd}, "head_dim", Slot::QNorm);
      add(std::string(f.k_norm) + ".weight", {hd}, "head_dim", Slot::KNorm);
    }
    if (a.qk_norm_whole) {  // OLMo 2's norms over the whole projected q and k
      add(std::string(f.q_norm) + ".weight", {q}, heads, Slot::QNorm);
      add(std::string(f.k_norm) + ".weight", {kv}, kv_heads, Slot::KNorm);
    }
    add(std::string(f.o) + ".weight", lin(d, q), hidden + ", " + heads, Slot::O);
    if (a.o_bias) add(std::string(f.o) + ".bias", {d}, hidden, Slot::OB);
    if (a.sandwich_norms) {  // Gemma 2/3: norms on the attention's and the MLP's branches, beside their input norms
      add("post_attention_layernorm.weight", {d}, hidden, Slot::AttnBranchG);
      add("post_feedforward_layernorm.weight", {d}, hidden, Slot::MlpBranchG);
    }
    add(std::string(f.norm2) + ".weight", {d}, hidden, norm2_g);
    if (a.norm_bias) add(std::string(f.norm2) + ".bias", {d}, hidden, norm2_b);
    // Phi-3's fused gate_up_proj; Mixtral's router and experts instead of one MLP
    if (a.fused_gate_up) {
      add(std::string(f.up) + ".weight", lin(2 * inter, d), "2 x " + inter_why + " x " + hidden, Slot::GateUp);
    } else if (a.n_experts > 0) {
      add("block_sparse_moe.gate.weight", {a.n_experts, d}, "num_local_experts x " + hidden, Slot::Router);
      for (int x = 0; x < a.n_experts; ++x) {
        const std::string ep = "block_sparse_moe.experts." + std::to_string(x) + ".";
        const std::string why =
            "expert " + std::to_string(x) + " of num_local_experts " + std::to_string(a.n_experts) + ": ";
        e.push_back({p + ep + "w1.weight", {inter, d}, why + inter_why + " x " + hidden, Slot::ExpertGate, l, x});
        e.push_back({p + ep + "w2.weight", {d, inter}, why + hidden + " x " + inter_why, Slot::ExpertDown, l, x});
        e.push_back({p + ep + "w3.weight", {inter, d}, why + inter_why + " x " + hidden, Slot::ExpertUp, l, x});
      }
      continue;  // no plain MLP tensors
    }
        if (a.mlp == MlpKind::Gated && !a.fused_gate_up)
      add(std::string(f.gate) + ".weight", lin(inter, d), inter_why + " x " + hidden, Slot::Gate);
    if (!a.fused_gate_up) add(std::string(f.up) + ".weight", lin(inter, d), inter_why + " x " + hidden, Slot::Up);
    if (a.mlp_bias) add(std::string(f.up) + ".bias", {inter}, inter_why, Slot::UpB);
    add(std::string(f.down) + ".weight", lin(d, inter), hidden + " x " + inter_why, Slot::Down);
    if (a.mlp_bias) add(std::string(f.down) + ".bias", {d}, hidden, Slot::DownB);
  }
  if (f.final_norm) {  // encoders have none
    e.push_back({prefix + f.final_norm + ".weight", {d}, hidden, Slot::FinalG});
    if (a.norm_bias) e.push_back({prefix + f.final_norm + ".bias", {d}, hidden, Slot::FinalB});
  }
  if (f.lm_head && !a.tie_word_embeddings)
    e.push_back({f.lm_head, {a.vocab_size, d}, std::string(f.f_vocab) + " x " + hidden + "; tie_word_embeddings false",
                 Slot::LmHead});
  return e;
}

}  // namespace attnscope::model
