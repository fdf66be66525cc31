// One forward for every family: an Architecture (what config.json says, as data: norms, residual form, rotary,
// mask per layer, MLP kind, biases) and the one Weights drive one loader, one forward and one layer-scene builder
// (model/arch/). Each family is a row of the registry (model/families.h: its name, its config reader in
// model/family_configs.h, its tensor names); adding one is a row, a config reader, its name table and its
// reference test, and only the maths that is truly new.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/compute/rope.h"
#include "attnscope/model/forward.h"
#include "attnscope/scene/scene.h"
#include "attnscope/types.h"

namespace attnscope::model {

enum class NormKind { LayerNorm, RmsNorm };  // (x - mean) / sd * g + b | x / rms * g
enum class Residual {
  Sequential,  // x += attn(norm1 x); x += mlp(norm2 x)
  Parallel,    // x += attn(norm1 x) + mlp(norm2 x), both norms of the layer's input (GPT-NeoX's default)
  PostNorm,    // x = norm1(x + attn(x)); x = norm2(x + mlp(x)); no final norm (BERT, RoBERTa): the out slots
};
enum class MlpKind { Plain, Gated };  // down(act(up x)) | down(act(gate x) * up x)
enum class Activation { GeluTanh, GeluErf, Silu };
// How a checkpoint stores Q, K and V. Loaded, they are always one (q_dim + 2 kv_dim)-row block: q heads, k heads,
// v heads, head h at rows [h hd, (h+1) hd) of its part.
enum class QkvStorage {
  Separate,     // q_proj, k_proj, v_proj (Llama)
  FusedBlocks,  // one tensor, q | k | v (GPT-2's c_attn, Conv1D (in, out))
  FusedPerHead, // one tensor viewed as (heads, 3, head_dim): q, k, v of head h side by side (GPT-NeoX)
};

struct Architecture {
  std::string model_type;                  // config.json's: its row in the family registry (model/families.h)
  int n_layer = 0, n_head = 0, n_kv_head = 0, head_dim = 0;
  int hidden = 0, intermediate = 0, vocab_size = 0, max_positions = 0;
  std::string max_positions_field = "max_position_embeddings";  // the config field named when n is too long
  NormKind norm = NormKind::RmsNorm;
  double norm_eps = 1e-6;
  bool norm_bias = false;         // LayerNorm's b
  Residual residual = Residual::Sequential;
  bool learned_positions = false; // x = embed[ids] + pos_embed[0..n) (GPT-2)
  int rotary_dims = 0;            // 0: no RoPE; else the first rotary_dims of every q and k head rotate (even)
  double rope_theta = 10000;
  RopeScaling rope_scaling;
  bool qk_norm = false;           // Qwen3: RMSNorm over each head's head_dim, before RoPE
  // Phi-3, OLMo 2, Mixtral:
  bool qk_norm_whole = false;     // OLMo 2: q_norm / k_norm over the whole projected q (q_dim) and k (kv_dim)
  bool post_norms = false;        // OLMo 2: no pre norms; x += norm1(attn(x)); x += norm2(mlp(x)): the branch slots
  bool fused_gate_up = false;     // Phi-3: one gate_up_proj (2 intermediate, hidden), gate rows then up rows
  int n_experts = 0;              // Mixtral: >0 routes each token's MLP to experts_per_tok of n_experts
  int experts_per_tok = 0;        //   (softmax router, top k, weights renormalised to sum 1)
  QkvStorage qkv = QkvStorage::Separate;
  bool conv1d = false;            // linear weights stored (in, out), y = x W (GPT-2); else (out, in), y = x W^T
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  MlpKind mlp = MlpKind::Gated;
  Activation activation = Activation::Silu;
  bool tie_word_embeddings = false;
  // Per layer, the keys a query sees: 0 = every earlier key; W = the last W keys, itself included.
  std::vector<int> window;
  // --- Gemma (gemma, gemma2, gemma3_text; gemma_config.cpp) ---
  bool norm_plus_one = false;        // RMSNorm applied as x / rms * (1 + w): 1 is added to every norm's w when loaded
  bool sandwich_norms = false;       // Gemma 2/3: branch norms beside the input norms (SublayerNorms)
  float embed_scale = 1.0f;          // x = embed[ids] * embed_scale (Gemma: sqrt(hidden) in the model's dtype)
  double query_pre_attn_scalar = 0;  // > 0: scores scaled by query_pre_attn_scalar^-1/2, not head_dim^-1/2
  double attn_softcap = 0;           // > 0: scores s -> tanh(s / c) c before the mask (Gemma 2)
  double final_softcap = 0;          // > 0: the logits' soft cap (checked; the maps need no logits)
  double rope_local_theta = 0;       // > 0: windowed layers rotate on this base, unscaled (Gemma 3)
  // [SECTION] encoders (bert, roberta): every query sees every key (window all 0); x = embed_norm(embed[ids] +
  // pos_embed[position ids] + type_embed[0]). RoBERTa counts positions from padding_idx + 1 and gives its padding
  // tokens position padding_idx (position_offset = padding_idx + 1; pos_embed has max_positions + offset rows).
  bool causal = true;
  bool embed_norm = false;    // a norm (norm kind, bias) on the embedding sum
  int type_vocab_size = 0;    // > 0: token_type_embeddings (type_vocab_size, hidden), every token of type 0
  int position_offset = 0;    // RoBERTa: padding_idx + 1; 0 for every other family

  int qDim() const { return n_head * head_dim; }
  int kvDim() const { return n_kv_head * head_dim; }
  float scoreScale() const;  // 1 / sqrt(head_dim), or 1 / sqrt(query_pre_attn_scalar)
  HeadLayout layout() const;
};

// A norm's weights: g (hidden), b (hidden) or empty without norm bias. g empty: no such norm.
struct NormWeights {
  RowVector g, b;
};
// A sublayer's norms, as llama.cpp's ATTN_NORM, ATTN_POST_NORM and ATTN_OUT_NORM: `in` on the sublayer's input
// (a pre-norm), `branch` on its output before the residual add (OLMo 2's post norms, Gemma 2/3's sandwich norms),
// `out` on the sum after the add (BERT's post-norm residual). The one forward applies whichever the checkpoint has:
// x' = out(x + branch(f(in(x)))). Which a family has follows from its description (tensor_names.cpp).
struct SublayerNorms {
  NormWeights in, branch, out;
};

// One layer's weights as loaded. Linear weights keep the file's layout (Architecture::conv1d), so that a
// checkpoint is read without a transpose; y = x W^T + b, or x W + b for conv1d.
struct LayerWeights {
  SublayerNorms attn_norms;     // the attention's
  Matrix w_qkv;                // (q_dim + 2 kv_dim, hidden) (transposed for conv1d): q heads, k heads, v heads
  RowVector b_qkv;             // (q_dim + 2 kv_dim) or empty
  RowVector q_norm, k_norm;    // (head_dim), qk_norm only
  Matrix w_o;                  // (hidden, q_dim)
  RowVector b_o;               // (hidden) or empty
  SublayerNorms mlp_norms;      // the MLP's
  Matrix w_up;                 // (intermediate, hidden), Gated: (2 intermediate, hidden), gate rows then up rows
  RowVector b_up;              // (intermediate) or empty (a Gated MLP has none)
  Matrix w_down;               // (hidden, intermediate)
  RowVector b_down;            // (hidden) or empty
  // Mixtral's routed MLP (w_up / w_down empty):
  Matrix router;                     // (n_experts, hidden)
  std::vector<Matrix> expert_up;     // per expert (2 intermediate, hidden): w1 (gate) rows, then w3 (up) rows
  std::vector<Matrix> expert_down;   // per expert (hidden, intermediate): w2
};

struct Weights {
  Architecture arch;
  Matrix embed;      // (vocab_size, hidden)
  Matrix pos_embed;  // (max_positions + position_offset, hidden), learned_positions only
  Matrix type_embed;                   // (type_vocab_size, hidden), encoders only
  RowVector embed_norm_g, embed_norm_b;  // (hidden), embed_norm only
  std::vector<LayerWeights> layers;
  RowVector final_g, final_b;  // (hidden); _b empty without norm bias; both empty for PostNorm (no final norm)
  // The tensors' dtype as the files store them, in torch's names ("bfloat16", "float16", "float32"; two or three
  // joined by " and " when they mix): every one is widened to float32 here. What config.json says may differ.
  std::string stored_dtype;
};

// float32 bytes a loaded checkpoint of `arch` takes: the sum of the tensors the name map reads.
std::size_t weightBytes(const Architecture& arch);

// Reads DIR/model.safetensors, or the shards DIR/model.safetensors.index.json names, through the family's name
// map: every tensor present with its shape (naming the config fields it comes from), F32/F16/BF16, the memory
// checked against `budget_bytes` (0 = defaultMemoryBudget()) before any is read. `weights_file` non-empty: that
// one file instead of the folder's. Fused tensors are split as Architecture::qkv says.
Weights loadWeights(const std::string& dir, const Architecture& arch, std::size_t budget_bytes = 0,
                    const std::string& weights_file = "");

// The unembedding W_U (vocab_size, hidden) of an untied checkpoint (lm_head.weight, GPT-NeoX's embed_out.weight),
// read on demand from DIR (the maps never need it); an empty matrix for a tied one, whose W_U is the embedding.
Matrix loadUnembedding(const std::string& dir, const Architecture& arch, std::size_t budget_bytes = 0);

// An encoder's masked-LM head, which turns the last layer's output h into logits: LayerNorm(act(h W^T + b)) times
// the word embeddings (tied) plus `bias`. BERT's cls.predictions.transform.dense, .LayerNorm (weight and bias, or
// gamma and beta) and cls.predictions.bias, act the config's hidden_act; RoBERTa's lm_head.dense, lm_head.layer_norm
// and lm_head.bias, act the erf GELU. Read on demand from DIR; InputError naming the first tensor missing (a
// BertModel / RobertaModel file has no head).
struct MaskedLmHead {
  Matrix dense;                             // (hidden, hidden) as stored: (out, in)
  RowVector dense_b, norm_g, norm_b, bias;  // (hidden) x 3, (vocab)
  Activation act = Activation::GeluErf;
};
MaskedLmHead loadMaskedLmHead(const std::string& dir, const Architecture& arch);

// Stage names for the overflow check's message, in the family's own words ("ln_1", "attention c_proj").
struct StageNames {
  std::string embedding, norm1, qkv, attention_out, norm2, mlp_up, mlp_down, final_norm;
  std::string embedding_norm = "the embedding's LayerNorm";  // an encoder's
};
// The family's stage names (tensor_names.cpp, beside its tensor names).
StageNames stageNames(const Architecture& arch);

// `ids` checked as every forward checks them: 1 to max_positions tokens, each below vocab_size (InputError).
void checkInputIds(const Architecture& arch, const std::vector<int>& ids);
// Each token's row of the learned position table: 0, 1, 2, ..., or from position_offset counting only non-padding
// tokens, a padding token at padding_idx (RoBERTa).
std::vector<int> positionIds(const Architecture& arch, const std::vector<int>& ids);
// The forward's first stage on the CPU: `ids` checked, then the embedding (n, hidden): token rows, learned
// positions, an encoder's token type and norm, Gemma's scale (the GPU forward's when the table is too large for
// one of the device's buffers).
Matrix embedInput(const Weights& weights, const std::vector<int>& ids);

// Mixtral's routing of each token from its router logits (n, n_experts): per expert the rows routed to it with
// their weights (a softmax over the experts, the top experts_per_tok, renormalised to sum 1; ties to the lower
// index, as torch.topk). The CPU's routed MLP and the GPU forward's route by this one function.
using ExpertRoutes = std::vector<std::vector<std::pair<long, float>>>;
ExpertRoutes routeTokens(const Architecture& arch, const Matrix& logits);

// float32 bytes the forward keeps and its activations need for n tokens: the maps while `maps` keeps them, else
// per layer Q, K once per kv head and m, l per query head; with keep_ln1 each layer's first norm's output.
std::size_t forwardBytes(const Architecture& arch, int n, bool keep_ln1, MapPolicy maps);

}  // namespace attnscope::model
