// The one forward on the CPU (float32; Eigen with OpenBLAS for the products, OpenMP over heads and rows), driven
// by an Architecture: GPT-2, the Llama family and GPT-NeoX differ only in what the description and the view say.
// Every layer's per-head maps are kept, or past the maps limit only Q, K and the row statistics.
#include <cmath>
#include <numeric>
#include <utility>

#include "attnscope/error.h"
#include "attnscope/model/architecture.h"
#include "model/arch/model_view.h"
#include "model/arch/stage_timings.h"
#include "model/forward_shared.h"

namespace attnscope::model {

namespace {

// LayerNorm (population variance, as torch.nn.LayerNorm): (x - mean) / sqrt(var + eps) * g (+ b); RMSNorm
// (transformers' LlamaRMSNorm in float32): x / sqrt(mean(x^2) + eps) * g. Row by row; x, out: (n, d).
void norm(NormKind kind, const Matrix& x, const RowVector& g, const RowVector* b, float eps, Matrix& out) {
  out.resize(x.rows(), x.cols());
  const long n = x.rows();
  const float inv_d = 1.0f / static_cast<float>(x.cols());
  const bool bias = b && b->size() > 0;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    const auto row = x.row(i).array();
    if (kind == NormKind::RmsNorm) {
      const float inv = 1.0f / std::sqrt(x.row(i).squaredNorm() * inv_d + eps);
      out.row(i).array() = row * inv * g.array();
    } else {
      const float mean = row.sum() * inv_d;
      const float var = (row - mean).square().sum() * inv_d;
      const float inv = 1.0f / std::sqrt(var + eps);
      out.row(i).array() = (row - mean) * inv * g.array();
    }
    if (bias) out.row(i) += *b;
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

// The activation in place on a row: GELU's tanh form 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))), GELU's
// erf form 0.5 z (1 + erf(z / sqrt 2)), or SiLU z / (1 + e^-z).
template <typename Row>
void activate(Activation a, Row&& r) {
  switch (a) {
    case Activation::GeluTanh: {
      const float c = 0.7978845608028654f;  // sqrt(2 / pi)
      r = 0.5f * r * (1.0f + (c * (r + 0.044715f * r.cube())).tanh());
      return;
    }
    case Activation::GeluErf:
      for (Eigen::Index j = 0; j < r.size(); ++j) r[j] = 0.5f * r[j] * (1.0f + std::erf(r[j] * 0.70710678118654752f));
      return;
    case Activation::Silu: r = r / (1.0f + (-r).exp()); return;
  }
}

// Plain: act(up) in place on (n, I). Gated: act(gate) * up into `act` (n, I) from up = (n, 2I), gate then up.
const Matrix& mlpActivation(const Architecture& a, Matrix& up, Matrix& act) {
  const long n = up.rows();
  if (a.mlp == MlpKind::Plain) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) activate(a.activation, up.row(i).array());
    return up;
  }
  const int inter = a.intermediate;
  act.resize(n, inter);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    act.row(i) = up.row(i).head(inter);
    activate(a.activation, act.row(i).array());
    act.row(i).array() *= up.row(i).tail(inter).array();
  }
  return act;
}

// A branch's output (attention's or MLP's, (n, hidden)) into the residual stream: x += branch, or with a branch norm
// (OLMo 2's post norms, Gemma 2/3's sandwich norms) x += norm(branch).
void addBranch(const Architecture& a, const NormView& branch_norm, const Matrix& branch, Matrix& normed, Matrix& x) {
  if (!branch_norm.g) {
    x += branch;
    return;
  }
  norm(a.norm, branch, *branch_norm.g, branch_norm.b, static_cast<float>(a.norm_eps), normed);
  x += normed;
}

// A norm slot applied to x in place (the norm after a sublayer's add), its stage checked.
void normInPlace(const Architecture& a, const NormView& slot, Matrix& x, Matrix& scratch, int l, const char* stage) {
  norm(a.norm, x, *slot.g, slot.b, static_cast<float>(a.norm_eps), scratch);
  x.swap(scratch);
  checkStage(x, l, stage);
}

// Whether the forward keeps every map (Gemma 2's soft-capped ones too: the tiles cap what they recompute,
// Result::score_cap).
bool keepsMaps(const Architecture& a, int n, MapPolicy policy) {
  return forwardKeepsMaps(a.n_layer, a.n_head, n, policy);
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

// Layer l's attention through `backend`, the layer given as a scene (its output includes W_O): into x.
void attendOnBackend(const ModelView& v, int l, const Matrix& normed, Backend& backend, ForwardResult& r, Matrix& x,
                     Matrix& scratch) {
  const Architecture& a = v.arch;
  Result attended;
  try {
    attended = backend.compute(attentionSceneOf(v, l, normed),
                               {.keep_scores = false, .analysis = false,
                                .maps = r.keepsMaps() ? MapPolicy::Keep : MapPolicy::Drop});
  } catch (const InputError& e) {  // name the layer: the backend only knows a scene
    throw InputError("forward", "layer " + std::to_string(l + 1) + " attention on the " + backend.name() +
                                    " backend: " + e.what());
  }
  if (r.keepsMaps())
    for (int head = 0; head < a.n_head; ++head)
      r.mutableMap(l * a.n_head + head) = attended.heads[static_cast<std::size_t>(head)].weights;
  else
    keepBackendStats(attended, a.scoreScale(), backend, l, r.stats[static_cast<std::size_t>(l)]);
  addBranch(a, v.layers[static_cast<std::size_t>(l)].attn_norms.branch, attended.output, scratch, x);
}

// Layer l's attention on the CPU, fused: every query head against its kv head, its map into r (or its Q, K and row
// statistics into r.stats[l]), the heads' outputs into concat (n, q_dim). qkv: (n, q + 2 kv), after RoPE, Q scaled.
void attendLayer(const Architecture& a, int l, const Matrix& qkv, Matrix& concat, ForwardResult& r, int segments) {
  const float softcap = static_cast<float>(a.attn_softcap);  // Gemma 2; 0: none
  const int hd = a.head_dim, q_dim = a.qDim(), kv_dim = a.kvDim(), group = a.n_head / a.n_kv_head;
  const int window = a.window.empty() ? 0 : a.window[static_cast<std::size_t>(l)];
  const bool kept = r.keepsMaps();
  Result* stats = kept ? nullptr : &r.stats[static_cast<std::size_t>(l)];
  if (stats) {  // K once per kv head, shared by its group's query heads
    stats->score_cap = softcap;  // the row statistics are of the capped scores; the tiles cap theirs
    stats->heads.resize(static_cast<std::size_t>(a.n_head));
    for (int h = 0; h < a.n_head; ++h) {
      HeadResult& hr = stats->heads[static_cast<std::size_t>(h)];
      if (h % group == 0) hr.ownK() = qkv.middleCols(q_dim + h / group * hd, hd);  // (n, hd), after RoPE
      else hr.shareKeyValues(stats->heads[static_cast<std::size_t>(h - h % group)]);
    }
  }
#pragma omp parallel for schedule(dynamic)
  for (int h = 0; h < a.n_head; ++h) {
    const int g = h / group;  // the kv head this query head reads
    const auto q = qkv.middleCols(h * hd, hd), k = qkv.middleCols(q_dim + g * hd, hd),
               v = qkv.middleCols(q_dim + kv_dim + g * hd, hd);
    if (segments > 1) {  // a batch (ForwardOptions::segments): each sequence on its own; no statistics kept
      const Eigen::Index len = qkv.rows() / segments;
      HeadResult scratch;
      for (int s = 0; s < segments; ++s)
        attendHeadStats(q.middleRows(s * len, len), k.middleRows(s * len, len), v.middleRows(s * len, len), window,
                        a.causal, concat.middleCols(h * hd, hd).middleRows(s * len, len), scratch, softcap);
    } else if (kept) {
      attendHead(q, k, v, window, a.causal, r.mutableMap(l * a.n_head + h), concat.middleCols(h * hd, hd), softcap);
    } else {
      HeadResult& hr = stats->heads[static_cast<std::size_t>(h)];
      hr.q = q;  // (n, hd) after q_norm and RoPE, scaled
      attendHeadStats(q, k, v, window, a.causal, concat.middleCols(h * hd, hd), hr, softcap);
    }
  }
}

}  // namespace

void linear(const Matrix& x, const Matrix& w, const RowVector* b, bool conv1d, Matrix& y) {
  if (conv1d) y.noalias() = x * w;
  else y.noalias() = x * w.transpose();
  if (b && b->size()) y.rowwise() += *b;
}

void linearAdd(const Matrix& x, const Matrix& w, const RowVector* b, bool conv1d, Matrix& y) {
  if (conv1d) y.noalias() += x * w;
  else y.noalias() += x * w.transpose();
  if (b && b->size()) y.rowwise() += *b;
}

std::size_t forwardBytes(const Architecture& a, int n, bool keep_ln1, MapPolicy policy) {
  const std::size_t nn = static_cast<std::size_t>(n), layers = static_cast<std::size_t>(a.n_layer);
  const std::size_t hidden = static_cast<std::size_t>(a.hidden), inter = static_cast<std::size_t>(a.intermediate);
  const std::size_t q = static_cast<std::size_t>(a.qDim()), kv = static_cast<std::size_t>(a.kvDim());
  // Kept: every map. Else per layer Q (n, q_dim), K once per kv head (n, kv_dim) and m, l per query head: O(n d).
  const std::size_t maps = keepsMaps(a, n, policy)
                               ? layers * static_cast<std::size_t>(a.n_head) * nn * nn
                               : layers * nn * (q + kv + 2 * static_cast<std::size_t>(a.n_head));
  // x, the norm's output, the final hidden state, qkv, the heads' outputs, the MLP's (gated: gate_up and act; plain:
  // up, activated in place), and a parallel residual's second norm output.
  const std::size_t per_token = 3 * hidden + 2 * q + 2 * kv + (a.mlp == MlpKind::Gated ? 3 * inter : inter) +
                                (a.residual == Residual::Parallel ? hidden : 0) +
                                // a branch's output and its norm (Gemma 2/3's sandwich norms, OLMo 2's post norms)
                                (a.sandwich_norms || a.post_norms ? 2 * hidden : 0);
  const std::size_t ln1 = keep_ln1 ? layers * nn * hidden : 0;
  return 4 * (maps + nn * per_token + ln1) + (a.n_experts > 0 ? routedMlpBytes(a, n) : 0);  // Mixtral
}

namespace {
// The embedding of `ids` into x (n, hidden): tokens, learned positions, an encoder's token type and norm, Gemma's
// scale. `normed`: scratch of x's shape.
void embedTokens(const ModelView& v, const std::vector<int>& ids, Matrix& x, Matrix& normed) {
  const Architecture& a = v.arch;
  const int n = static_cast<int>(ids.size());
  const float eps = static_cast<float>(a.norm_eps);
  for (int i = 0; i < n; ++i) x.row(i) = v.embed->row(ids[static_cast<std::size_t>(i)]);
  if (a.learned_positions) {
    const std::vector<int> positions = positionIds(a, ids);
    for (int i = 0; i < n; ++i) x.row(i) += v.pos_embed->row(positions[static_cast<std::size_t>(i)]);
  }
  if (a.type_vocab_size > 0) x.rowwise() += v.type_embed->row(0);
  if (a.embed_scale != 1.0f) x *= a.embed_scale;  // Gemma: sqrt(hidden) in the model's dtype
  checkStage(x, -1, v.stages.embedding.c_str());
  if (a.embed_norm) {
    norm(a.norm, x, *v.embed_norm_g, v.embed_norm_b, eps, normed);
    x.swap(normed);
    checkStage(x, -1, v.stages.embedding_norm.c_str());
  }
}
}  // namespace

std::vector<int> positionIds(const Architecture& a, const std::vector<int>& ids) {
  std::vector<int> positions(ids.size());
  // RoBERTa's (create_position_ids_from_input_ids): padding tokens at padding_idx, the others from padding_idx + 1
  // counting only non-padding tokens; every other family 0, 1, 2, ...
  const int pad = a.position_offset - 1;
  for (std::size_t i = 0, seen = 0; i < ids.size(); ++i) {
    const bool is_pad = a.position_offset > 0 && ids[i] == pad;
    positions[i] = is_pad ? pad : a.position_offset + static_cast<int>(seen);
    seen += is_pad ? 0 : 1;
  }
  return positions;
}

void checkInputIds(const Architecture& a, const std::vector<int>& ids) {
  checkForwardInput(ids, a.max_positions, a.max_positions_field.c_str(), a.vocab_size, 0, 0);
}

Matrix embedInput(const Weights& weights, const std::vector<int>& ids) {
  checkInputIds(weights.arch, ids);
  const Architecture& a = weights.arch;
  const ModelView v = viewOf(weights);
  Matrix x(static_cast<Eigen::Index>(ids.size()), a.hidden), normed;
  embedTokens(v, ids, x, normed);
  return x;
}

void forwardInto(const ModelView& v, const std::vector<int>& ids, ForwardResult& r, const ForwardOptions& options,
                 std::size_t budget_bytes) {
  const Architecture& a = v.arch;
  const int n = static_cast<int>(ids.size());
  // A batch of segments (ForwardOptions::segments) is checked as one of its sequences, with the whole batch's bytes.
  const std::size_t per_segment = ids.size() / static_cast<std::size_t>(std::max(1, options.segments));
  checkForwardInput(options.segments > 1 ? std::vector<int>(ids.begin(), ids.begin() + static_cast<long>(per_segment)) : ids,
                    a.max_positions, a.max_positions_field.c_str(), a.vocab_size,
                    forwardBytes(a, n, options.keep_ln1, options.maps), budget_bytes);
  StageTimings timings("forward");
  // A result of the same size keeps its buffer: a forward on it touches no new pages.
  r.layout = a.layout();
  r.resize(n, a.n_layer * a.n_head, keepsMaps(a, n, options.maps));
  r.ln1.resize(options.keep_ln1 ? static_cast<std::size_t>(a.n_layer) : 0);
  const bool kept = r.keepsMaps();
  const int hd = a.head_dim, q_dim = a.qDim();
  const float eps = static_cast<float>(a.norm_eps);
  const int start = options.start_layer;
  if (start < 0 || start >= a.n_layer || (start > 0 && !options.start_residual))
    throw InputError("start_layer", "0, or a layer up to " + std::to_string(a.n_layer - 1) + " with its residual",
                     std::to_string(start));
  if (options.start_residual && (options.start_residual->rows() != n || options.start_residual->cols() != a.hidden))
    throw InputError("start_residual", shapeString(n, a.hidden),
                     shapeString(options.start_residual->rows(), options.start_residual->cols()));
  if ((options.edit_heads || options.edit_mlp) && options.attention)
    throw InputError(options.edit_heads ? "edit_heads" : "edit_mlp", "the forward's own attention", "an attention backend");
  const int segments = options.segments, len = n / std::max(1, segments);  // len: each sequence's tokens
  if (segments < 1 || n % segments != 0 || (segments > 1 && (!options.start_residual || r.keepsMaps())))
    throw InputError("segments", "a divisor of the rows, with a start residual and maps dropped",
                     std::to_string(segments));
  if (segments > 1 && options.trace_position >= 0)
    throw InputError("trace_position", "none in a batch of segments", std::to_string(options.trace_position));
  r.residual.assign(options.keep_residual ? static_cast<std::size_t>(a.n_layer) : 0, Matrix());
  r.head_outputs.assign(options.keep_residual ? static_cast<std::size_t>(a.n_layer) : 0, Matrix());
  r.mlp_outputs.assign(options.keep_residual ? static_cast<std::size_t>(a.n_layer) : 0, Matrix());

  RopeTable rope, rope_local;  // rope_local: Gemma 3's windowed layers, on their own base, unscaled
  if (a.rotary_dims > 0) {
    std::vector<int> positions(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) positions[static_cast<std::size_t>(i)] = i % len;  // each segment from 0
    rope = RopeTable(positions, ropeInverseFrequencies(a.rope_theta, a.rotary_dims, a.rope_scaling));
    if (a.rope_local_theta > 0)
      rope_local = RopeTable(positions, ropeInverseFrequencies(a.rope_local_theta, a.rotary_dims, RopeScaling{}));
  }

  Matrix x(n, a.hidden);  // (n, hidden) the residual stream
  Matrix normed(n, a.hidden), normed2, qkv(n, q_dim + 2 * a.kvDim()), concat(n, q_dim), up, act;
  if (options.start_residual) {
    x = *options.start_residual;  // the embedding and the layers before start_layer are not run
  } else {
    embedTokens(v, ids, x, normed);
  }
  // The residual stream at one token, for direct logit attribution: after the embedding, then after each
  // layer's attention and MLP are added.
  const int trace = options.trace_position;
  if (trace >= n) throw InputError("position", "a token from 0 to " + std::to_string(n - 1), std::to_string(trace));
  r.trace.resize(trace >= 0 ? 2 * a.n_layer + 1 : 0, a.hidden);
  if (trace >= 0) r.trace.row(0) = x.row(trace);
  Matrix branch, branch_normed;  // (n, hidden): a sublayer's output before its branch norm, and after it
  timings.mark("setup (maps, rope, embed)");
  // Each sublayer: x = out(x + branch(f(in(x)))), each norm where the layer has it (SublayerNorms); a parallel
  // residual (GPT-NeoX) feeds both sublayers the layer's input.
  for (int l = start; l < a.n_layer; ++l) {
    const LayerView& L = v.layers[static_cast<std::size_t>(l)];
    if (options.keep_residual) r.residual[static_cast<std::size_t>(l)] = x;
    const SublayerNormsView &an = L.attn_norms, &mn = L.mlp_norms;
    if (an.in.g) norm(a.norm, x, *an.in.g, an.in.b, eps, normed);
    else normed = x;  // no input norm (OLMo 2, the encoders): attention reads the layer's input itself
    checkStage(normed, l, v.stages.norm1.c_str());
    if (options.keep_ln1) r.ln1[static_cast<std::size_t>(l)] = normed;  // a layer scene's rows
    if (a.residual == Residual::Parallel) {  // both norms read the layer's input
      norm(a.norm, x, *mn.in.g, mn.in.b, eps, normed2);
      checkStage(normed2, l, v.stages.norm2.c_str());
    }
    timings.mark("norms");
    if (options.attention) {
      attendOnBackend(v, l, normed, *options.attention, r, x, branch_normed);
    } else {
      linear(normed, *L.w_qkv, L.b_qkv, a.conv1d, qkv);  // (n, q + 2 kv): q heads, then k heads, then v heads
      timings.mark("qkv projection");
      if (a.qk_norm) {  // Qwen3: before RoPE
        headRmsNorm(qkv, 0, a.n_head, hd, *L.q_norm, eps);
        headRmsNorm(qkv, q_dim, a.n_kv_head, hd, *L.k_norm, eps);
      }
      if (a.qk_norm_whole) {  // OLMo 2, over the whole q (q_dim) and k (kv_dim), before RoPE
        headRmsNorm(qkv, 0, 1, q_dim, *L.q_norm, eps);
        headRmsNorm(qkv, q_dim, 1, a.kvDim(), *L.k_norm, eps);
      }
      if (a.rotary_dims > 0) {  // the first rotary_dims of every q and k head
        const bool local = a.rope_local_theta > 0 && a.window[static_cast<std::size_t>(l)] > 0;
        const RopeTable& table = local ? rope_local : rope;
        for (int h = 0; h < a.n_head; ++h) table.rotate(qkv, h * hd);
        for (int g = 0; g < a.n_kv_head; ++g) table.rotate(qkv, q_dim + g * hd);
      }
      // The scale goes onto Q once (n x q_dim multiplies) rather than onto each (n, n) product: Eigen evaluates
      // `(q * k^T) * s` into a temporary and scales it, 3.5x slower than the plain product handed to BLAS.
      qkv.leftCols(q_dim) *= a.scoreScale();
      checkStage(qkv, l, v.stages.qkv.c_str());
      timings.mark("q/k norm, rope, q scale, checks");
      attendLayer(a, l, qkv, concat, r, options.segments);
      timings.mark("attention (scores, softmax, w v)");
      if (options.edit_heads) options.edit_heads(l, concat);
      if (options.keep_residual) r.head_outputs[static_cast<std::size_t>(l)] = concat;
      if (an.branch.g) {  // x += norm(o_proj(heads))
        linear(concat, *L.w_o, L.b_o, a.conv1d, branch);
        addBranch(a, an.branch, branch, branch_normed, x);
      } else {
        linearAdd(concat, *L.w_o, L.b_o, a.conv1d, x);  // (n, hidden)
      }
      timings.mark("o projection");
    }
    // q k^T overflowing gives inf - inf = NaN in the softmax: caught in the maps (or in m and l, which a NaN score
    // reaches), named by the first head.
    for (int h = 0; h < a.n_head; ++h) {
      const std::string stage = "attention scores and softmax of head " + std::to_string(h);
      if (kept) checkStage(r.keptMap(l * a.n_head + h), l, stage.c_str());
      else checkStage(r.stats[static_cast<std::size_t>(l)].heads[static_cast<std::size_t>(h)].row_sum, l, stage.c_str());
    }
    checkStage(x, l, v.stages.attention_out.c_str());
    if (trace >= 0) r.trace.row(1 + 2 * l) = x.row(trace);
    if (an.out.g) normInPlace(a, an.out, x, normed, l, v.stages.norm1.c_str());  // x = norm(x + attn(x))
    const bool parallel = a.residual == Residual::Parallel;
    if (!parallel && mn.in.g) {
      norm(a.norm, x, *mn.in.g, mn.in.b, eps, normed);
      checkStage(normed, l, v.stages.norm2.c_str());
    }
    timings.mark("norms");
    const Matrix& mlp_in = parallel ? normed2 : mn.in.g ? normed : x;
    // The MLP's output: into `branch` when a norm follows it or an intervention reads it, else added to x straight
    // away (x is read before).
    const bool own_out = mn.branch.g || options.edit_mlp || options.keep_residual;
    Matrix& mlp_out = own_out ? branch : x;
    if (own_out) branch.setZero(n, a.hidden);
    if (a.n_experts > 0) {  // Mixtral's routed MLP
      routedMlpAdd(a, L, mlp_in, mlp_out);
      timings.mark("routed mlp");
    } else {
      linear(mlp_in, *L.w_up, L.b_up, a.conv1d, up);
      timings.mark("mlp up projection");
      const Matrix& activated = mlpActivation(a, up, act);
      checkStage(activated, l, v.stages.mlp_up.c_str());
      timings.mark("mlp activation");
      if (own_out) linear(activated, *L.w_down, L.b_down, a.conv1d, branch);
      else linearAdd(activated, *L.w_down, L.b_down, a.conv1d, x);  // (n, hidden)
    }
    if (options.edit_mlp) options.edit_mlp(l, branch);
    if (options.keep_residual) r.mlp_outputs[static_cast<std::size_t>(l)] = branch;
    if (mn.branch.g) addBranch(a, mn.branch, branch, branch_normed, x);  // x += norm(mlp(...))
    else if (own_out) x += branch;
    checkStage(x, l, v.stages.mlp_down.c_str());
    if (mn.out.g) normInPlace(a, mn.out, x, normed, l, v.stages.norm2.c_str());  // x = norm(x + mlp(x))
    if (trace >= 0) r.trace.row(2 + 2 * l) = x.row(trace);
    timings.mark("mlp down projection");
    if (options.progress && !options.progress(l + 1)) throw ForwardCancelled();
  }
  if (!v.final_g || v.final_g->size() == 0) r.hidden = std::move(x);  // an encoder's layers end in a norm: none here
  else norm(a.norm, x, *v.final_g, v.final_b, eps, r.hidden);
  checkStage(r.hidden, -1, v.stages.final_norm.c_str());
  timings.mark("norms");
}

}  // namespace attnscope::model
