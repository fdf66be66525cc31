// GPT-2's forward pass on the CPU (float32, Eigen with OpenBLAS for the big products, OpenMP over heads and
// rows), keeping every layer's per-head attention map or what tiles recompute it from; attention rollout; a
// layer opened as a Scene.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "attnscope/error.h"
#include "attnscope/model/gpt2.h"
#include "attnscope/model/model.h"
#include "model/forward_shared.h"
#include "model/llama/stage_timings.h"

namespace attnscope::model {

namespace {

// out = (x - mean) / sqrt(var + eps) * g + b, row by row (population variance, as torch.nn.LayerNorm).
// x, out: (n, d).
void layerNorm(const Matrix& x, const RowVector& g, const RowVector& b, float eps, Matrix& out) {
  out.resize(x.rows(), x.cols());
  const long n = x.rows();
  const float inv_d = 1.0f / static_cast<float>(x.cols());
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    const auto row = x.row(i).array();
    const float mean = row.sum() * inv_d;
    const float var = (row - mean).square().sum() * inv_d;
    const float inv = 1.0f / std::sqrt(var + eps);
    out.row(i).array() = (row - mean) * inv * g.array() + b.array();
  }
}

// GPT-2's GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in place on (n, 4d).
void geluTanh(Matrix& x) {
  const float c = 0.7978845608028654f;  // sqrt(2 / pi)
  const long n = x.rows();
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    auto r = x.row(i).array();
    r = 0.5f * r * (1.0f + (c * (r + 0.044715f * r.cube())).tanh());
  }
}

// A backend's layer result without maps into the forward's stats: Q scaled as the tiles' scale-1 scene reads it,
// K per head, m and l. A backend that keeps no row statistics cannot serve a forward past the maps limit.
void keepBackendStats(Result& attended, float scale, const Backend& backend, int l, Result& stats) {
  stats.heads.resize(attended.heads.size());
  for (std::size_t head = 0; head < attended.heads.size(); ++head) {
    HeadResult& from = attended.heads[head];
    if (from.row_sum.size() != from.q.rows() || from.k().rows() != from.q.rows())
      throw InputError("forward", "layer " + std::to_string(l + 1) + " attention on the " + backend.name() +
                                      " backend: Q, K and row statistics (the maps are past the maps limit)",
                       "a result without them");
    HeadResult& to = stats.heads[head];
    to.q = from.q * scale;
    to.ownK() = from.k();
    to.row_max = std::move(from.row_max);
    to.row_sum = std::move(from.row_sum);
  }
}

}  // namespace

void checkLayerSceneInput(const ForwardResult& forward, int n_layer, int layer, const std::vector<std::string>& tokens) {
  if (layer < 0 || layer >= n_layer)
    throw InputError("layer", "0 to " + std::to_string(n_layer - 1), std::to_string(layer));
  if (static_cast<int>(forward.ln1.size()) != n_layer)
    throw InputError("forward.ln1", std::to_string(n_layer) + " layers (a forward with keep_ln1)",
                     std::to_string(forward.ln1.size()));
  if (static_cast<int>(tokens.size()) != forward.n)
    throw InputError("tokens", std::to_string(forward.n) + " labels", std::to_string(tokens.size()));
}

void checkForwardInput(const std::vector<int>& ids, int max_tokens, const char* max_name, int vocab_size,
                       std::size_t need_bytes, std::size_t budget_bytes) {
  const int n = static_cast<int>(ids.size());
  if (n < 1 || n > max_tokens)
    throw InputError("tokens", "1 to " + std::to_string(max_tokens) + " (" + max_name + ")", std::to_string(n));
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab_size)
      throw InputError("tokens[" + std::to_string(i) + "]", "an id below vocab_size " + std::to_string(vocab_size),
                       std::to_string(ids[i]));
  const std::size_t budget = budget_bytes ? budget_bytes : defaultMemoryBudget();
  if (need_bytes > budget)
    throw InputError("forward", "at most " + std::to_string(budget >> 20) + " MiB for maps and activations",
                     std::to_string(need_bytes >> 20) + " MiB for " + std::to_string(n) + " tokens");
}

std::size_t gpt2ForwardBytes(const Gpt2Config& c, int n, const ForwardOptions& options) {
  const std::size_t nn = static_cast<std::size_t>(n), d = static_cast<std::size_t>(c.n_embd);
  const std::size_t layers = static_cast<std::size_t>(c.n_layer), heads = static_cast<std::size_t>(c.n_head);
  // Kept: every map. Else per layer Q and K (n, d) each and m, l per head: O(n d), whatever n^2 would be.
  const std::size_t maps = forwardKeepsMaps(c.n_layer, c.n_head, n, options.maps) ? layers * heads * nn * nn
                                                                                   : layers * (2 * nn * d + 2 * nn * heads);
  const std::size_t activations = nn * d * 2 + nn * 3 * d + nn * 4 * d + nn * d * 2;  // x, ln, qkv, mlp, concat
  const std::size_t ln1 = options.keep_ln1 ? static_cast<std::size_t>(c.n_layer) * nn * d : 0;
  return 4 * (maps + activations + ln1);
}

namespace {

// Layer `l`'s causal multi-head attention on the CPU, fused: every head's map into r (or its Q, K and row
// statistics into r.stats[l]), the heads' outputs into concat (n, d). ln: (n, d), the layer's ln_1 output; qkv:
// (n, 3d) scratch.
void attendLayer(const Gpt2Config& c, const Gpt2Block& b, const Matrix& ln, int l, Matrix& qkv, Matrix& concat,
                 ForwardResult& r) {
  const int d = c.n_embd, h = c.n_head, dh = c.headDim();
  qkv.noalias() = ln * b.c_attn_w;  // (n, 3d)
  qkv.rowwise() += b.c_attn_b;
  // The scale goes onto Q once (n x d multiplies) rather than onto each (n, n) product: Eigen evaluates
  // `(q * k^T) * s` into a temporary and scales it, 3.5x slower than the plain product handed to BLAS.
  qkv.leftCols(d) *= 1.0f / std::sqrt(static_cast<float>(dh));
  checkStage(qkv, l, "attention c_attn (q, k, v)");
  const bool kept = r.keepsMaps();
  if (!kept) r.stats[static_cast<std::size_t>(l)].heads.resize(static_cast<std::size_t>(h));
#pragma omp parallel for schedule(dynamic)
  for (int head = 0; head < h; ++head) {
    const auto q = qkv.middleCols(head * dh, dh);          // (n, dh), already scaled
    const auto k = qkv.middleCols(d + head * dh, dh);      // (n, dh)
    const auto v = qkv.middleCols(2 * d + head * dh, dh);  // (n, dh)
    if (kept) {
      attendHead(q, k, v, 0, r.mutableMap(l * h + head), concat.middleCols(head * dh, dh));
    } else {
      HeadResult& hr = r.stats[static_cast<std::size_t>(l)].heads[static_cast<std::size_t>(head)];
      hr.q = q;
      hr.ownK() = k;
      attendHeadStats(q, k, v, 0, concat.middleCols(head * dh, dh), hr);
    }
  }
}

}  // namespace

ForwardResult gpt2Forward(const Gpt2Weights& w, const std::vector<int>& ids, const ForwardOptions& options,
                          std::size_t budget_bytes) {
  ForwardResult r;
  gpt2ForwardInto(w, ids, r, options, budget_bytes);
  return r;
}

void gpt2ForwardInto(const Gpt2Weights& w, const std::vector<int>& ids, ForwardResult& r, const ForwardOptions& options,
                     std::size_t budget_bytes) {
  const Gpt2Config& c = w.config;
  const int n = static_cast<int>(ids.size());
  checkForwardInput(ids, c.n_positions, "n_positions", c.vocab_size, gpt2ForwardBytes(c, n, options), budget_bytes);

  const int d = c.n_embd, h = c.n_head;
  // A result of the same size keeps its buffer: a forward on it touches no new pages.
  r.layout = c;
  r.resize(n, c.n_layer * h, forwardKeepsMaps(c.n_layer, h, n, options.maps));
  r.ln1.resize(options.keep_ln1 ? static_cast<std::size_t>(c.n_layer) : 0);
  Matrix x(n, d);  // (n, d) the residual stream
  for (int i = 0; i < n; ++i) x.row(i) = w.wte.row(ids[static_cast<std::size_t>(i)]) + w.wpe.row(i);
  checkStage(x, -1, "the embedding (wte + wpe)");
  Matrix ln(n, d), qkv(n, 3 * d), concat(n, d), mlp(n, 4 * d);

  for (int l = 0; l < c.n_layer; ++l) {
    const Gpt2Block& b = w.blocks[static_cast<std::size_t>(l)];
    layerNorm(x, b.ln_1_g, b.ln_1_b, c.layer_norm_epsilon, ln);
    checkStage(ln, l, "ln_1");
    if (options.keep_ln1) r.ln1[static_cast<std::size_t>(l)] = ln;
    if (options.attention) {  // the layer as a scene, through the given backend (its output includes c_proj)
      Result attended;
      try {
        attended = options.attention->compute(
            attentionScene(w, l, ln),
            {.keep_scores = false, .analysis = false, .maps = r.keepsMaps() ? MapPolicy::Keep : MapPolicy::Drop});
      } catch (const InputError& e) {  // name the layer: the backend only knows a scene
        throw InputError("forward", "layer " + std::to_string(l + 1) + " attention on the " + options.attention->name() +
                                        " backend: " + e.what());
      }
      if (r.keepsMaps())
        for (int head = 0; head < h; ++head)
          r.mutableMap(l * h + head) = attended.heads[static_cast<std::size_t>(head)].weights;
      else
        keepBackendStats(attended, 1.0f / std::sqrt(static_cast<float>(c.headDim())), *options.attention, l,
                         r.stats[static_cast<std::size_t>(l)]);
      x += attended.output;
    } else {
      attendLayer(c, b, ln, l, qkv, concat, r);
      x.noalias() += concat * b.c_proj_w;  // (n, d)
      x.rowwise() += b.c_proj_b;
    }
    // q k^T overflowing gives inf - inf = NaN in the softmax: caught in the maps (or in m and l, which a NaN
    // score reaches), named by the first head.
    for (int head = 0; head < h; ++head) {
      const std::string stage = "attention scores and softmax of head " + std::to_string(head);
      if (r.keepsMaps()) checkStage(r.keptMap(l * h + head), l, stage.c_str());
      else checkStage(r.stats[static_cast<std::size_t>(l)].heads[static_cast<std::size_t>(head)].row_sum, l, stage.c_str());
    }
    checkStage(x, l, "attention c_proj + residual");
    layerNorm(x, b.ln_2_g, b.ln_2_b, c.layer_norm_epsilon, ln);
    checkStage(ln, l, "ln_2");

    mlp.noalias() = ln * b.fc_w;  // (n, 4d)
    mlp.rowwise() += b.fc_b;
    geluTanh(mlp);
    checkStage(mlp, l, "mlp c_fc + gelu");
    x.noalias() += mlp * b.mlp_proj_w;  // (n, d)
    x.rowwise() += b.mlp_proj_b;
    checkStage(x, l, "mlp c_proj + residual");
    if (options.progress && !options.progress(l + 1)) throw ForwardCancelled();
  }
  layerNorm(x, w.ln_f_g, w.ln_f_b, c.layer_norm_epsilon, r.hidden);
  checkStage(r.hidden, -1, "ln_f");
}

// (Here, not beside loadModel: the fuzz targets link the loaders without any forward.)
ForwardResult modelForward(const Model& model, const std::vector<int>& ids, const ForwardOptions& options,
                           std::size_t budget_bytes) {
  if (const auto* g = std::get_if<Gpt2Weights>(&model.weights)) return gpt2Forward(*g, ids, options, budget_bytes);
  return llamaForward(std::get<LlamaWeights>(model.weights), ids, budget_bytes, options.keep_ln1, options.progress,
                      options.maps);
}

Matrix attentionRollout(const ForwardResult& forward, const HeadLayout& c) {
  StageTimings timings("attention rollout");
  const int n = forward.n;
  Matrix rollout = Matrix::Identity(n, n);  // (n, n)
  for (int l = 0; l < c.n_layer; ++l) {
    Matrix a = Matrix::Zero(n, n);
    for (int head = 0; head < c.n_head; ++head) a += forward.map(l * c.n_head + head);  // one map at a time
    a = 0.5f * a / static_cast<float>(c.n_head) + 0.5f * Matrix::Identity(n, n);
    a.array().colwise() /= a.rowwise().sum().array();  // rows sum to 1 (already so, but for rounding)
    rollout = (a * rollout).eval();
  }
  timings.mark("mean over heads, products");
  return rollout;
}

Scene attentionScene(const Gpt2Weights& w, int layer, const Matrix& x) {
  const Gpt2Config& c = w.config;
  const Gpt2Block& b = w.blocks[static_cast<std::size_t>(layer)];
  const int d = c.n_embd, dh = c.headDim();
  Scene s;
  s.d_model = d;
  s.query = x;  // (n, d)
  for (Eigen::Index i = 0; i < x.rows(); ++i) s.query_tokens.push_back(std::to_string(i));
  for (int head = 0; head < c.n_head; ++head) {
    HeadParams p;
    p.w_q = b.c_attn_w.middleCols(head * dh, dh);  // (d, dh)
    p.w_k = b.c_attn_w.middleCols(d + head * dh, dh);
    p.w_v = b.c_attn_w.middleCols(2 * d + head * dh, dh);
    p.b_q = b.c_attn_b.segment(head * dh, dh);
    p.b_k = b.c_attn_b.segment(d + head * dh, dh);
    p.b_v = b.c_attn_b.segment(2 * d + head * dh, dh);
    s.heads.push_back(std::move(p));
  }
  s.w_o = b.c_proj_w;  // (d, d): rows are the concatenated heads' outputs
  s.b_o = b.c_proj_b;
  s.mask = MaskKind::Causal;
  return s;
}

Scene layerScene(const Gpt2Weights& w, const ForwardResult& forward, int layer, const std::vector<std::string>& tokens,
                 const std::string& description) {
  const Gpt2Config& c = w.config;
  checkLayerSceneInput(forward, c.n_layer, layer, tokens);
  Scene s = attentionScene(w, layer, forward.ln1[static_cast<std::size_t>(layer)]);
  s.description = description;
  s.query_tokens = tokens;
  return s;
}

}  // namespace attnscope::model
