// A Llama-family layer as an ordinary scene (llama.h's llamaLayerScene): the layer's attention input after the
// input RMSNorm, each query head's W_Q, the key/value heads' W_K and W_V, Qwen2's biases, Qwen3's q_norm and
// k_norm, RoPE with the config's scaling, and the causal (or sliding-window) mask, so both backends give the
// forward's maps.
#include <algorithm>
#include <string>

#include "attnscope/error.h"
#include "attnscope/model/llama.h"
#include "model/forward_shared.h"

namespace attnscope::model {

namespace {

// Rows [row0, row0 + head_dim) of the stacked (out, in) projection, as a scene's (d_model, head_dim) W.
Matrix headWeight(const Matrix& w_qkv, int row0, int head_dim) { return w_qkv.middleRows(row0, head_dim).transpose(); }

std::optional<RowVector> headBias(const RowVector& b_qkv, int row0, int head_dim) {
  if (b_qkv.size() == 0) return std::nullopt;
  return RowVector(b_qkv.segment(row0, head_dim));
}

}  // namespace

Scene llamaLayerScene(const LlamaWeights& w, const ForwardResult& forward, int layer,
                      const std::vector<std::string>& tokens, const std::string& description) {
  const LlamaConfig& c = w.config;
  checkLayerSceneInput(forward, c.n_layer, layer, tokens);
  const LlamaLayer& L = w.layers[static_cast<std::size_t>(layer)];
  const int hd = c.head_dim, q_dim = c.qDim(), kv_dim = c.kvDim(), group = c.n_head / c.n_kv_head;
  const bool grouped = c.n_kv_head < c.n_head;  // classic heads when every query head has its own K/V

  Scene s;
  s.description = description;
  s.d_model = c.hidden;
  s.query = forward.ln1[static_cast<std::size_t>(layer)];  // (n, hidden): input_layernorm's output
  s.query_tokens = tokens;
  for (int g = 0; grouped && g < c.n_kv_head; ++g)
    s.kv_heads.push_back({headWeight(L.w_qkv, q_dim + g * hd, hd), headWeight(L.w_qkv, q_dim + kv_dim + g * hd, hd),
                          headBias(L.b_qkv, q_dim + g * hd, hd), headBias(L.b_qkv, q_dim + kv_dim + g * hd, hd)});
  for (int h = 0; h < c.n_head; ++h) {
    HeadParams p;
    p.w_q = headWeight(L.w_qkv, h * hd, hd);
    p.b_q = headBias(L.b_qkv, h * hd, hd);
    if (grouped) {
      p.kv = h / group;
    } else {
      p.w_k = headWeight(L.w_qkv, q_dim + h * hd, hd);
      p.w_v = headWeight(L.w_qkv, q_dim + kv_dim + h * hd, hd);
      p.b_k = headBias(L.b_qkv, q_dim + h * hd, hd);
      p.b_v = headBias(L.b_qkv, q_dim + kv_dim + h * hd, hd);
    }
    s.heads.push_back(std::move(p));
  }
  s.rope = SceneRope{c.rope_theta, hd, c.rope_scaling};
  if (c.qk_norm) {
    s.q_norm = SceneHeadNorm{L.q_norm, c.rms_norm_eps};
    s.k_norm = SceneHeadNorm{L.k_norm, c.rms_norm_eps};
  }
  s.w_o = L.w_o.transpose();  // (q_dim, hidden): rows are the concatenated heads' outputs
  if (L.b_o.size()) s.b_o = L.b_o;
  const int window = c.window[static_cast<std::size_t>(layer)];
  if (window == 0) {
    s.mask = MaskKind::Causal;
  } else {  // key j for query i when i - window < j <= i
    s.mask = MaskKind::Explicit;
    s.explicit_mask = MaskMatrix::Zero(forward.n, forward.n);
    for (int i = 0; i < forward.n; ++i)
      for (int j = std::max(0, i - window + 1); j <= i; ++j) s.explicit_mask(i, j) = 1;
  }
  return s;
}

}  // namespace attnscope::model
