// What the one forward and the one layer-scene builder read: the one Weights seen through pointers (null: no such
// tensor), with the family's stage names. Empty vectors mean "none" (no bias, no norm bias).
#pragma once

#include <string>
#include <vector>

#include "attnscope/model/architecture.h"
#include "attnscope/model/model.h"

namespace attnscope::model {

// A norm slot (SublayerNorms): g null when the layer has no such norm; b null without norm bias.
struct NormView {
  const RowVector *g = nullptr, *b = nullptr;
};
struct SublayerNormsView {
  NormView in, branch, out;
};

struct LayerView {
  SublayerNormsView attn_norms, mlp_norms;
  const Matrix* w_qkv = nullptr;  // (q + 2 kv, hidden), or (hidden, q + 2 kv) for conv1d
  const RowVector* b_qkv = nullptr;
  const RowVector *q_norm = nullptr, *k_norm = nullptr;
  const Matrix* w_o = nullptr;
  const RowVector* b_o = nullptr;
  const Matrix *w_up = nullptr, *w_down = nullptr;
  const RowVector *b_up = nullptr, *b_down = nullptr;
  // Mixtral's router (n_experts, hidden) and experts (LayerWeights::expert_up / expert_down)
  const Matrix* router = nullptr;
  const std::vector<Matrix>*expert_up = nullptr, *expert_down = nullptr;
};

struct ModelView {
  Architecture arch;
  const Matrix* embed = nullptr;
  const Matrix* pos_embed = nullptr;  // learned_positions only
  const Matrix* type_embed = nullptr;  // encoders: row 0 added to every token
  const RowVector *embed_norm_g = nullptr, *embed_norm_b = nullptr;  // encoders: the embedding's norm
  std::vector<LayerView> layers;
  const RowVector *final_g = nullptr, *final_b = nullptr;
  StageNames stages;
};

ModelView viewOf(const Weights& w);
ModelView viewOf(const Model& model);

// The forward over a view, into `result` (its map buffer reused when the size matches).
void forwardInto(const ModelView& view, const std::vector<int>& ids, ForwardResult& result, const ForwardOptions& options,
                 std::size_t budget_bytes);

// Layer `layer`'s attention over the rows x (n, hidden) as a scene, tokens numbered (what a backend computes).
Scene attentionSceneOf(const ModelView& view, int layer, const Matrix& x);
// The same over forward.ln1[layer], checked, with labels and description.
Scene layerSceneOf(const ModelView& view, const ForwardResult& forward, int layer, const std::vector<std::string>& tokens,
                   const std::string& description);

// Mixtral's routed MLP (routed_mlp.cpp): out += sum over each row's top experts_per_tok experts of its
// renormalised softmax weight x w2(silu(w1 x) * w3 x). x, out: (n, hidden), distinct.
void routedMlpAdd(const Architecture& arch, const LayerView& layer, const Matrix& x, Matrix& out);
// Its float32 scratch bytes for n rows.
std::size_t routedMlpBytes(const Architecture& arch, int n);

// y = x W^T (or x W for conv1d) + b. x: (n, in); y: (n, out).
void linear(const Matrix& x, const Matrix& w, const RowVector* b, bool conv1d, Matrix& y);
// y += x W^T (+ b).
void linearAdd(const Matrix& x, const Matrix& w, const RowVector* b, bool conv1d, Matrix& y);

}  // namespace attnscope::model
