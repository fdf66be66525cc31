// The one layer-scene builder: any described family's layer as an ordinary scene (its input norm's rows, each
// head's W_Q, W_K, W_V and biases split from the fused projection, shared K/V heads, RoPE on the rotary dims,
// q_norm / k_norm, W_O and b_O, the causal, sliding-window or (encoders) no mask), so that both backends give the
// forward's maps; and the views a family's weights are read through.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "attnscope/error.h"
#include "attnscope/model/architecture.h"
#include "model/arch/model_view.h"
#include "model/forward_shared.h"

namespace attnscope::model {

namespace {

// Output rows [row0, row0 + count) of a projection as a scene's (d_model, count) W: the (out, in) matrix's rows
// transposed, or the conv1d (in, out) matrix's columns.
Matrix headWeight(const Matrix& w, bool conv1d, int row0, int count) {
  if (conv1d) return w.middleCols(row0, count);
  return w.middleRows(row0, count).transpose();
}

std::optional<RowVector> headBias(const RowVector* b, int row0, int count) {
  if (!b || b->size() == 0) return std::nullopt;
  return RowVector(b->segment(row0, count));
}

const RowVector* orNull(const RowVector& v) { return v.size() ? &v : nullptr; }

SublayerNormsView normsView(const SublayerNorms& n) {
  const auto slot = [](const NormWeights& w) { return NormView{orNull(w.g), orNull(w.b)}; };
  return {slot(n.in), slot(n.branch), slot(n.out)};
}

// OLMo 2's q_norm / k_norm over the whole projected q and k (no biases) in a scene. The norm divides row i
// of q = x W_Q^T by one number, r_i = sqrt(mean(q_i^2) + eps), and multiplies by g: so q_i's norm is W_Q' (x_i / r_i)
// with g folded into W_Q's rows. The scene's query rows become x_i / r_i (q's r_i), its key rows x_i / r'_i (k's),
// its value rows x; every head's W_Q and W_K get their slice of g.
void wholeQkNorm(const ModelView& v, int layer, const Matrix& x, Scene& s) {
  const Architecture& a = v.arch;
  const LayerView& L = v.layers[static_cast<std::size_t>(layer)];
  const Matrix& w = *L.w_qkv;  // (q + 2 kv, hidden)
  const auto rowScales = [&](int row0, int count) {  // (n) 1 / sqrt(mean((x W^T)^2) + eps) per row
    const Matrix p = x * w.middleRows(row0, count).transpose();
    return Eigen::VectorXf(
        (p.rowwise().squaredNorm().array() / static_cast<float>(count) + static_cast<float>(a.norm_eps)).rsqrt());
  };
  const int hd = a.head_dim;
  s.value = x;
  s.query = rowScales(0, a.qDim()).asDiagonal() * x;
  s.key = rowScales(a.qDim(), a.kvDim()).asDiagonal() * x;
  for (int h = 0; h < s.numHeads(); ++h)
    s.heads[static_cast<std::size_t>(h)].w_q.array().rowwise() *= L.q_norm->segment(h * hd, hd).array();
  for (int g = 0; g < s.numKvHeads(); ++g) {  // a grouped scene's kv head g, or classic head g's own K
    Matrix& wk = s.grouped() ? s.kv_heads[static_cast<std::size_t>(g)].w_k : s.heads[static_cast<std::size_t>(g)].w_k;
    wk.array().rowwise() *= L.k_norm->segment(g * hd, hd).array();
  }
}

}  // namespace

Scene attentionSceneOf(const ModelView& v, int layer, const Matrix& x) {
  const Architecture& a = v.arch;
  const LayerView& L = v.layers[static_cast<std::size_t>(layer)];
  const int hd = a.head_dim, q_dim = a.qDim(), kv_dim = a.kvDim(), group = a.n_head / a.n_kv_head;
  const bool grouped = a.n_kv_head < a.n_head;  // classic heads when every query head has its own K/V
  const Matrix& w = *L.w_qkv;
  Scene s;
  s.d_model = a.hidden;
  s.query = x;  // (n, hidden)
  for (Eigen::Index i = 0; i < x.rows(); ++i) s.query_tokens.push_back(std::to_string(i));
  for (int g = 0; grouped && g < a.n_kv_head; ++g)
    s.kv_heads.push_back({headWeight(w, a.conv1d, q_dim + g * hd, hd), headWeight(w, a.conv1d, q_dim + kv_dim + g * hd, hd),
                          headBias(L.b_qkv, q_dim + g * hd, hd), headBias(L.b_qkv, q_dim + kv_dim + g * hd, hd)});
  for (int h = 0; h < a.n_head; ++h) {
    HeadParams p;
    p.w_q = headWeight(w, a.conv1d, h * hd, hd);
    p.b_q = headBias(L.b_qkv, h * hd, hd);
    if (grouped) {
      p.kv = h / group;
    } else {
      p.w_k = headWeight(w, a.conv1d, q_dim + h * hd, hd);
      p.w_v = headWeight(w, a.conv1d, q_dim + kv_dim + h * hd, hd);
      p.b_k = headBias(L.b_qkv, q_dim + h * hd, hd);
      p.b_v = headBias(L.b_qkv, q_dim + kv_dim + h * hd, hd);
    }
    s.heads.push_back(std::move(p));
  }
  if (a.attn_softcap > 0) {  // a scene's scores have no soft cap: its maps would not be the model's
    char got[64];
    std::snprintf(got, sizeof got, "attn_logit_softcapping %g", a.attn_softcap);
    throw InputError("layer " + std::to_string(layer + 1) + " as a scene",
                     "a layer whose scores are not soft-capped (scenes have no soft cap)", got);
  }
  if (a.query_pre_attn_scalar > 0) s.scale = a.scoreScale();  // Gemma 2/3
  if (a.rotary_dims > 0) s.rope = SceneRope{a.rope_theta, a.rotary_dims, a.rope_scaling};
  const bool local = a.rope_local_theta > 0 && !a.window.empty() && a.window[static_cast<std::size_t>(layer)] > 0;
  if (local) s.rope = SceneRope{a.rope_local_theta, a.rotary_dims};  // Gemma 3's local layers: own base, unscaled
  if (a.qk_norm) {
    s.q_norm = SceneHeadNorm{*L.q_norm, a.norm_eps};
    s.k_norm = SceneHeadNorm{*L.k_norm, a.norm_eps};
  }
  if (a.qk_norm_whole) wholeQkNorm(v, layer, x, s);  // OLMo 2
  s.w_o = a.conv1d ? Matrix(*L.w_o) : Matrix(L.w_o->transpose());  // (q_dim, hidden): rows are the heads' outputs
  if (L.b_o && L.b_o->size()) s.b_o = *L.b_o;
  const int window = a.window.empty() ? 0 : a.window[static_cast<std::size_t>(layer)];
  const int n = static_cast<int>(x.rows());
  if (!a.causal) {  // an encoder: every key
    s.mask = MaskKind::None;
  } else if (window == 0) {
    s.mask = MaskKind::Causal;
  } else {  // key j for query i when i - window < j <= i
    s.mask = MaskKind::Explicit;
    s.explicit_mask = MaskMatrix::Zero(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = std::max(0, i - window + 1); j <= i; ++j) s.explicit_mask(i, j) = 1;
  }
  return s;
}

Scene layerSceneOf(const ModelView& v, const ForwardResult& forward, int layer, const std::vector<std::string>& tokens,
                   const std::string& description) {
  checkLayerSceneInput(forward, v.arch.n_layer, layer, tokens);
  Scene s = attentionSceneOf(v, layer, forward.ln1[static_cast<std::size_t>(layer)]);
  s.description = description;
  s.query_tokens = tokens;
  return s;
}

ModelView viewOf(const Weights& w) {
  ModelView v;
  v.arch = w.arch;
  v.embed = &w.embed;
  v.pos_embed = &w.pos_embed;
  v.type_embed = &w.type_embed;
  v.embed_norm_g = &w.embed_norm_g;
  v.embed_norm_b = orNull(w.embed_norm_b);
  for (const LayerWeights& L : w.layers)
    v.layers.push_back({.attn_norms = normsView(L.attn_norms), .mlp_norms = normsView(L.mlp_norms),
                        .w_qkv = &L.w_qkv, .b_qkv = orNull(L.b_qkv),
                        .q_norm = &L.q_norm, .k_norm = &L.k_norm, .w_o = &L.w_o, .b_o = orNull(L.b_o),
                        .w_up = &L.w_up, .w_down = &L.w_down, .b_up = orNull(L.b_up), .b_down = orNull(L.b_down),
                        .router = &L.router, .expert_up = &L.expert_up, .expert_down = &L.expert_down});
  v.final_g = &w.final_g;
  v.final_b = orNull(w.final_b);
  v.stages = stageNames(w.arch);
  return v;
}

}  // namespace attnscope::model
