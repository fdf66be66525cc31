// The Llama-family forward on the CPU (float32; Eigen with OpenBLAS for the products, OpenMP over heads and
// rows), as transformers' LlamaDecoderLayer and its Mistral/Qwen2/Qwen3 kin compute it, keeping every layer's
// per-head maps, or past the maps limit only Q, K and the row statistics. Attention itself is the GPT-2
// forward's (attendHead / attendHeadStats), per query head against its kv head.
#include <cmath>
#include <numeric>

#include "attnscope/error.h"
#include "attnscope/model/llama.h"
#include "model/forward_shared.h"
#include "model/llama/stage_timings.h"

namespace attnscope::model {

namespace {

// out = x / sqrt(mean(x^2) + eps) * g, row by row; x, out: (n, d). (transformers' LlamaRMSNorm in float32.)
void rmsNorm(const Matrix& x, const RowVector& g, float eps, Matrix& out) {
  out.resize(x.rows(), x.cols());
  const long n = x.rows();
  const float inv_d = 1.0f / static_cast<float>(x.cols());
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    const float inv = 1.0f / std::sqrt(x.row(i).squaredNorm() * inv_d + eps);
    out.row(i).array() = x.row(i).array() * inv * g.array();
  }
}

// Qwen3's q_norm / k_norm: RMSNorm over each head's head_dim columns, in place on `heads` heads from col0.
void headRmsNorm(Matrix& x, int col0, int heads, int head_dim, const RowVector& g, float eps) {
  const long n = x.rows();
  const float inv_d = 1.0f / static_cast<float>(head_dim);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i)
    for (int h = 0; h < heads; ++h) {
      auto part = x.row(i).segment(col0 + h * head_dim, head_dim);
      const float inv = 1.0f / std::sqrt(part.squaredNorm() * inv_d + eps);
      part.array() = part.array() * inv * g.array();
    }
}

// SwiGLU: act = silu(gate) * up, silu(z) = z / (1 + e^-z). gate_up: (n, 2I), gate then up; act: (n, I).
void swiGlu(const Matrix& gate_up, int inter, Matrix& act) {
  act.resize(gate_up.rows(), inter);
  const long n = gate_up.rows();
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    const auto gate = gate_up.row(i).head(inter).array();
    act.row(i).array() = gate / (1.0f + (-gate).exp()) * gate_up.row(i).tail(inter).array();
  }
}

}  // namespace

std::size_t llamaForwardBytes(const LlamaConfig& c, int n, bool keep_ln1, MapPolicy policy) {
  const std::size_t nn = static_cast<std::size_t>(n), layers = static_cast<std::size_t>(c.n_layer);
  // Kept: every map. Else per layer Q (n, q_dim), K once per kv head (n, kv_dim) and m, l per query head: O(n d).
  const std::size_t maps =
      forwardKeepsMaps(c.n_layer, c.n_head, n, policy)
          ? layers * static_cast<std::size_t>(c.n_head) * nn * nn
          : layers * nn * (static_cast<std::size_t>(c.qDim() + c.kvDim()) + 2 * static_cast<std::size_t>(c.n_head));
  // x, the norm's output, qkv, the heads' outputs, gate_up, act, the final hidden state
  const std::size_t per_token = 3 * static_cast<std::size_t>(c.hidden) + static_cast<std::size_t>(2 * c.qDim() + 2 * c.kvDim()) +
                                3 * static_cast<std::size_t>(c.intermediate);
  const std::size_t ln1 = keep_ln1 ? static_cast<std::size_t>(c.n_layer) * nn * static_cast<std::size_t>(c.hidden) : 0;
  return 4 * (maps + nn * per_token + ln1);
}

ForwardResult llamaForward(const LlamaWeights& w, const std::vector<int>& ids, std::size_t budget_bytes, bool keep_ln1,
                           const std::function<bool(int)>& progress, MapPolicy maps) {
  const LlamaConfig& c = w.config;
  const int n = static_cast<int>(ids.size());
  checkForwardInput(ids, c.max_positions, "max_position_embeddings", c.vocab_size,
                    llamaForwardBytes(c, n, keep_ln1, maps), budget_bytes);

  StageTimings timings("llama forward");
  ForwardResult r;
  r.layout = c.layout();
  r.resize(n, c.n_layer * c.n_head, forwardKeepsMaps(c.n_layer, c.n_head, n, maps));
  const bool kept = r.keepsMaps();
  const int hd = c.head_dim, q_dim = c.qDim(), kv_dim = c.kvDim(), group = c.n_head / c.n_kv_head;
  const float eps = static_cast<float>(c.rms_norm_eps);
  std::vector<int> positions(static_cast<std::size_t>(n));
  std::iota(positions.begin(), positions.end(), 0);
  const RopeTable rope(positions, ropeInverseFrequencies(c.rope_theta, hd, c.rope_scaling));

  Matrix x(n, c.hidden);  // (n, hidden) the residual stream
  for (int i = 0; i < n; ++i) x.row(i) = w.embed.row(ids[static_cast<std::size_t>(i)]);
  Matrix normed, qkv(n, q_dim + 2 * kv_dim), concat(n, q_dim), gate_up(n, 2 * c.intermediate), act;
  timings.mark("setup (maps, rope, embed)");
  for (int l = 0; l < c.n_layer; ++l) {
    const LlamaLayer& L = w.layers[static_cast<std::size_t>(l)];
    rmsNorm(x, L.input_norm, eps, normed);
    timings.mark("rms norms");
    if (keep_ln1) r.ln1.push_back(normed);  // a layer scene's rows (llama_scene.cpp)
    qkv.noalias() = normed * L.w_qkv.transpose();  // (n, q + 2 kv): q heads, then k heads, then v heads
    if (L.b_qkv.size()) qkv.rowwise() += L.b_qkv;
    timings.mark("qkv projection");
    if (c.qk_norm) {  // Qwen3: before RoPE
      headRmsNorm(qkv, 0, c.n_head, hd, L.q_norm, eps);
      headRmsNorm(qkv, q_dim, c.n_kv_head, hd, L.k_norm, eps);
    }
    timings.mark("q/k norm");
    for (int h = 0; h < c.n_head; ++h) rope.rotate(qkv, h * hd);
    for (int g = 0; g < c.n_kv_head; ++g) rope.rotate(qkv, q_dim + g * hd);
    qkv.leftCols(q_dim) *= 1.0f / std::sqrt(static_cast<float>(hd));  // the scale on Q once, not on (n, n)
    timings.mark("rope + q scale");
    checkStage(qkv, l, "attention q, k, v (after RoPE)");
    timings.mark("checks");
    const int window = c.window[static_cast<std::size_t>(l)];
    Result* stats = kept ? nullptr : &r.stats[static_cast<std::size_t>(l)];
    if (stats) {  // K once per kv head, shared by its group's query heads
      stats->heads.resize(static_cast<std::size_t>(c.n_head));
      for (int h = 0; h < c.n_head; ++h) {
        HeadResult& hr = stats->heads[static_cast<std::size_t>(h)];
        if (h % group == 0) hr.ownK() = qkv.middleCols(q_dim + h / group * hd, hd);  // (n, hd), after RoPE
        else hr.shareKeyValues(stats->heads[static_cast<std::size_t>(h - h % group)]);
      }
    }
#pragma omp parallel for schedule(dynamic)
    for (int h = 0; h < c.n_head; ++h) {
      const int g = h / group;  // the kv head this query head reads
      const auto q = qkv.middleCols(h * hd, hd), k = qkv.middleCols(q_dim + g * hd, hd),
                 v = qkv.middleCols(q_dim + kv_dim + g * hd, hd);
      if (kept) {
        attendHead(q, k, v, window, r.mutableMap(l * c.n_head + h), concat.middleCols(h * hd, hd));
      } else {
        HeadResult& hr = stats->heads[static_cast<std::size_t>(h)];
        hr.q = q;  // (n, hd) after q_norm and RoPE, scaled
        attendHeadStats(q, k, v, window, concat.middleCols(h * hd, hd), hr);
      }
    }
    timings.mark("attention (scores, softmax, w v)");
    for (int h = 0; h < c.n_head; ++h) {  // a NaN score reaches the map, or m and l
      const std::string stage = "attention scores and softmax of head " + std::to_string(h);
      if (kept) checkStage(r.keptMap(l * c.n_head + h), l, stage.c_str());
      else checkStage(stats->heads[static_cast<std::size_t>(h)].row_sum, l, stage.c_str());
    }
    timings.mark("checks");
    x.noalias() += concat * L.w_o.transpose();  // (n, hidden)
    if (L.b_o.size()) x.rowwise() += L.b_o;
    timings.mark("o projection");
    checkStage(x, l, "attention o_proj + residual");
    rmsNorm(x, L.post_norm, eps, normed);
    timings.mark("rms norms");
    gate_up.noalias() = normed * L.w_gate_up.transpose();  // (n, 2 intermediate)
    timings.mark("gate/up projection");
    swiGlu(gate_up, c.intermediate, act);
    timings.mark("silu");
    checkStage(act, l, "mlp gate/up + silu");
    x.noalias() += act * L.w_down.transpose();  // (n, hidden)
    timings.mark("down projection");
    checkStage(x, l, "mlp down_proj + residual");
    if (progress && !progress(l + 1)) throw ForwardCancelled();
  }
  rmsNorm(x, w.norm, eps, r.hidden);
  checkStage(r.hidden, -1, "the final norm");
  timings.mark("rms norms");
  return r;
}

}  // namespace attnscope::model
