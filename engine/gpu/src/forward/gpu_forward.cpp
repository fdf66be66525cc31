// The whole checkpoint forward on the GPU (gpu_forward.h): model/arch/forward.cpp's loop, stage for stage, on
// device buffers. Each sublayer: x = out(x + branch(f(in(x)))), each norm where the layer has it; a parallel
// residual (GPT-NeoX) feeds both sublayers the layer's input. The attention runs on the GPU backend's flash stages
// (flash_forward.comp: grouped heads, sliding window, soft cap, causal or not) over Q, K, V laid out as the backend
// lays a scene's; kept maps are made from Q, K and the row statistics (stats_map.comp) a layer at a time.
//
// Hand-offs, by the OpenGL 4.3 memory model: every dispatch is followed by GL_SHADER_STORAGE_BARRIER_BIT (the next
// stage reads its writes); a read-back (glGetBufferSubData) by GL_BUFFER_UPDATE_BARRIER_BIT before it;
// glBufferSubData before a dispatch needs none. No stage reads what another invocation of its own dispatch wrote.
#include "attnscope/gpu_forward.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <utility>

#include "attnscope/compute/rope.h"
#include "attnscope/error.h"
#include "attnscope/model/model.h"
#include "attnscope/settings.h"
#include "forward/device_weights.h"
#include "forward/forward_check.h"
#include "gpu_backend_impl.h"
#include "gpu_memory.h"

namespace attnscope {

using gpu::DeviceMatrix;
using gpu::DeviceVector;
using gpu::dispatch;
using gpu::GlBuffer;
using gpu::groupsFor;
using gpu::LayerDevice;
using gpu::NormDevice;
using gpu::SublayerNormsDevice;
using gpu::WeightStorage;

namespace {

// Rows `count` from `first` of a (rows, cols) float buffer into dst (row-major), after the stages that wrote it.
void readRows(const GlBuffer& buffer, int cols, int first, int count, float* dst) {
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  buffer.download(dst, row_bytes * static_cast<std::size_t>(count), row_bytes * static_cast<std::size_t>(first));
}

// The stages the overflow check names, in the order a layer runs them (a slot each per layer), after the
// embedding's two slots (the sum, an encoder's norm); the final norm's slot comes last.
enum Stage : unsigned { kNorm1, kQkv, kScores, kAttentionOut, kNorm2, kMlpUp, kMlpDown, kStagesPerLayer };
constexpr unsigned kEmbeddingSlot = 0, kEmbeddingNormSlot = 1, kFirstLayerSlot = 2;
unsigned slotOf(int layer, unsigned stage) {
  return kFirstLayerSlot + static_cast<unsigned>(layer) * kStagesPerLayer + stage;
}

// A layer that fails the run-time check: what the forward catches to recompute on the CPU.
struct LayerCheckFailed {
  std::string text;
};

// Columns `cols` of rows `rows` of a (.., ld) float buffer, its window starting at column col0.
Matrix readSample(const GlBuffer& buffer, unsigned ld, unsigned col0, unsigned width, const std::vector<int>& rows,
                  const std::vector<int>& cols) {
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
  Matrix sample(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(cols.size()));
  std::vector<float> row(width);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    buffer.download(row.data(), width * sizeof(float), (static_cast<std::size_t>(rows[r]) * ld + col0) * sizeof(float));
    for (std::size_t c = 0; c < cols.size(); ++c)
      sample(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = row[static_cast<std::size_t>(cols[c])];
  }
  return sample;
}

}  // namespace

struct GpuForward::State {
  const model::Weights& weights;
  GpuBackend backend;  // its context, limits and attention stages
  GpuBackend::Impl& s;
  std::vector<LayerDevice> layers;
  NormDevice final_norm, embed_norm;
  // The embedding on the device (the table as stored; learned positions and the token-type row as float32), or,
  // when the table is larger than one buffer may be, gathered on the CPU (model::embedInput) and uploaded.
  bool embed_on_device = false;
  DeviceMatrix embed;
  DeviceMatrix positions;
  DeviceVector type_row;
  RowVector type_row_host;
  std::map<WeightStorage, gpu::ComputeProgram> embed_programs;
  GlBuffer tokens;
  std::size_t weight_bytes = 0;
  std::string storage;
  std::map<std::string, gpu::ComputeProgram> linear_programs;  // per weight storage and layout
  gpu::ComputeProgram row_norm, activation, split_heads, finite_rows, stats_map;
  // Activations, (n, *) each: the residual stream and its next value, norm outputs, q|k|v, MLP intermediates.
  GlBuffer x, x_next, normed, normed2, branch, qkv, up, act, logits, expert_rows, expert_scales, flags, maps;
  GlBuffer rope_cos, rope_sin, rope_local_cos, rope_local_sin;
  unsigned rope_half = 0;
  bool run_time_check = true;
  std::uint64_t check_seed = 0;  // a new draw of rows each forward (sampled_check.h)
  std::uint64_t products_checked = 0;
  int layer_now = -1;  // the layer running, for a failed check's message
  // Columns of each product checked at the sampled rows: 34 rows x 8 columns x k multiply-adds on the CPU, a few
  // per cent of the row's own product.
  static constexpr unsigned kProductColumns = 8;
  std::vector<std::string> warnings;

  State(const model::Weights& w, const GpuOptions& options) : weights(w), backend(options), s(*backend.impl_) {}

  const model::Architecture& arch() const { return weights.arch; }

  // linear.comp for a weight's storage and layout, built on first use.
  const gpu::ComputeProgram& linearProgram(WeightStorage held) {
    const bool out_in = !arch().conv1d;
    const std::string key = std::string(gpu::storageName(held)) + (out_in ? " out_in" : " in_out");
    auto found = linear_programs.find(key);
    if (found != linear_programs.end()) return found->second;
    std::string defines =
        "#define GEMM_SIDE " + std::to_string(s.project.gemmTile() / gpu::ComputeProgram::kGemmPerInvocation) + "u\n";
    if (out_in) defines += "#define W_OUT_IN\n";
    if (held == WeightStorage::BFloat16) defines += "#define W_BF16\n";
    if (held == WeightStorage::Float16) defines += "#define W_F16\n";
    const gpu::ShaderLibrary library(s.options.shader_dir);
    return linear_programs.emplace(key, gpu::ComputeProgram(library, "linear.comp", defines)).first->second;
  }

  // Where a linear layer's output goes and how: written, added (the residual stream), or added into gathered rows.
  struct LinearOut {
    const GlBuffer* c;
    unsigned ldc, col0 = 0;
    bool accumulate = false;
  };
  // rows x (in) times W (out outputs) + b into `out`; `rows_of`: A's rows gathered through expert_rows, or the
  // output scattered into them times expert_scales (a Mixtral expert), or neither.
  enum class Rows { Direct, GatherA, ScatterC };
  // `what` names the product in a failed check's message. With the run-time check, sampled rows and columns of
  // a direct product are compared with the CPU's from the GPU's own input rows (forward_check.h).
  void linear(const char* what, const GlBuffer& a, unsigned rows, const DeviceMatrix& w, const DeviceVector* b,
              const LinearOut& out, Rows rows_of = Rows::Direct) {
    const bool out_in = !arch().conv1d;
    const unsigned k = static_cast<unsigned>(out_in ? w.cols : w.rows),
                   n = static_cast<unsigned>(out_in ? w.rows : w.cols);
    const bool checked = run_time_check && rows_of == Rows::Direct && w.host != nullptr;
    std::vector<int> sample_rows, sample_cols;
    Matrix before;
    if (checked) {
      ++products_checked;
      sample_rows = sampledQueryRows(static_cast<int>(rows), check_seed * 7919 + products_checked);
      sample_cols = sampledColumns(n);
      if (out.accumulate) before = readSample(*out.c, out.ldc, out.col0, n, sample_rows, sample_cols);
    }
    const gpu::ComputeProgram& p = linearProgram(w.storage);
    const gpu::StageTimer::Scope timed = s.timer.scope("products (q|k|v, o, MLP, router, experts)");
    p.use();
    a.bind(0);
    w.buffer.bind(1);
    (b && b->present() ? b->buffer : w.buffer).bind(2);
    out.c->bind(3);
    expert_rows.bind(4);
    expert_scales.bind(5);
    p.set("u_m", rows);
    p.set("u_n", n);
    p.set("u_k", k);
    p.set("u_lda", k);
    p.set("u_ldc", out.ldc);
    p.set("u_c_col0", out.col0);
    p.set("u_has_bias", b != nullptr && b->present());
    p.set("u_accumulate", out.accumulate);
    p.set("u_gather_a", rows_of == Rows::GatherA);
    p.set("u_scatter_c", rows_of == Rows::ScatterC);
    dispatch(groupsFor(n, p.gemmTile()), groupsFor(rows, p.gemmTile()));
    if (!checked) return;
    Matrix a_rows(static_cast<Eigen::Index>(sample_rows.size()), k);
    for (std::size_t r = 0; r < sample_rows.size(); ++r)
      readRows(a, static_cast<int>(k), sample_rows[r], 1, a_rows.row(static_cast<Eigen::Index>(r)).data());
    const Matrix c_rows = readSample(*out.c, out.ldc, out.col0, n, sample_rows, sample_cols);
    if (const std::optional<std::string> bad =
            gpu::checkProductRows(*w.host, !out_in, b && b->present() ? b->host : nullptr, sample_rows, sample_cols,
                                  a_rows, c_rows, out.accumulate ? &before : nullptr))
      throw LayerCheckFailed{"layer " + std::to_string(layer_now + 1) + ", " + what + ": " + *bad};
  }

  // kProductColumns output columns of a product, drawn anew for each (a wrong tile shows in some draw).
  std::vector<int> sampledColumns(unsigned n) const {
    std::mt19937_64 rng(check_seed * 104729 + products_checked);
    std::vector<int> cols;
    for (unsigned c = 0; c < std::min(n, kProductColumns); ++c)
      cols.push_back(n <= kProductColumns ? static_cast<int>(c) : static_cast<int>(rng() % n));
    return cols;
  }

  void norm(const GlBuffer& in, const NormDevice& w, unsigned rows, const GlBuffer& out, bool add) {
    const unsigned d = static_cast<unsigned>(arch().hidden);
    const gpu::StageTimer::Scope timed = s.timer.scope("norms");
    row_norm.use();
    in.bind(0);
    w.g.buffer.bind(1);
    (w.b.present() ? w.b.buffer : w.g.buffer).bind(2);
    out.bind(3);
    row_norm.set("u_rows", rows);
    row_norm.set("u_d", d);
    row_norm.set("u_eps", static_cast<float>(arch().norm_eps));
    row_norm.set("u_rms", arch().norm == model::NormKind::RmsNorm);
    row_norm.set("u_has_bias", w.b.present());
    row_norm.set("u_add", add);
    dispatch(std::min(rows, 65535u), 1);
  }

  // The overflow check's slot `slot` over (rows, cols) of `buffer`.
  void checkFinite(const GlBuffer& buffer, unsigned rows, unsigned cols, unsigned slot) {
    const gpu::StageTimer::Scope timed = s.timer.scope("overflow checks");
    finite_rows.use();
    buffer.bind(0);
    flags.bind(1);
    finite_rows.set("u_rows", rows);
    finite_rows.set("u_cols", cols);
    finite_rows.set("u_slot", slot);
    dispatch(groupsFor(cols, 64), std::min(rows, 65535u));
  }

  void activate(const GlBuffer& in, const GlBuffer& out, unsigned rows, unsigned cols, bool gated) {
    const gpu::StageTimer::Scope timed = s.timer.scope("activations");
    activation.use();
    in.bind(0);
    out.bind(1);
    activation.set("u_rows", rows);
    activation.set("u_cols", cols);
    activation.set("u_activation", static_cast<unsigned>(arch().activation));
    activation.set("u_gated", gated);
    dispatch(groupsFor(cols, 64), std::min(rows, 65535u));
  }

  void upload(const GpuForward::UploadProgress& progress);
  void run(const std::vector<int>& ids, model::ForwardResult& r, const model::ForwardOptions& options);
  void attention(int l, unsigned n, model::ForwardResult& r);
  void routedMlp(const LayerDevice& L, const GlBuffer& in, unsigned n, const LinearOut& out);
  void throwFirstOverflow(unsigned n) const;
  void embedTokens(const std::vector<int>& ids);
  void checkLayer(int l, unsigned n, const model::ForwardResult& r, const Matrix* q, const Matrix* k);
  std::size_t activationBytes(int n, bool keep_maps) const;
};

// [SECTION] upload: every tensor's storage found first, the total checked against the device, then uploaded.
void GpuForward::State::upload(const GpuForward::UploadProgress& progress) {
  const model::Architecture& a = arch();
  if (a.head_dim > 256) throw InputError("head_dim", "at most 256 on the GPU forward", std::to_string(a.head_dim));
  struct Job {
    const Matrix* w;
    DeviceMatrix* out;
    WeightStorage storage = WeightStorage::Float32;
  };
  std::vector<Job> jobs;
  std::vector<std::pair<const RowVector*, DeviceVector*>> vectors;
  layers.resize(weights.layers.size());
  const auto norms = [&](const model::SublayerNorms& from, SublayerNormsDevice& to) {
    for (auto [w, d] :
         {std::pair{&from.in, &to.in}, std::pair{&from.branch, &to.branch}, std::pair{&from.out, &to.out}}) {
      vectors.emplace_back(&w->g, &d->g);
      vectors.emplace_back(&w->b, &d->b);
    }
  };
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const model::LayerWeights& W = weights.layers[l];
    LayerDevice& D = layers[l];
    norms(W.attn_norms, D.attn_norms);
    norms(W.mlp_norms, D.mlp_norms);
    for (auto [w, d] : {std::pair{&W.w_qkv, &D.w_qkv}, std::pair{&W.w_o, &D.w_o}, std::pair{&W.w_up, &D.w_up},
                        std::pair{&W.w_down, &D.w_down}, std::pair{&W.router, &D.router}})
      jobs.push_back({w, d});
    for (auto [v, d] :
         {std::pair{&W.b_qkv, &D.b_qkv}, std::pair{&W.b_o, &D.b_o}, std::pair{&W.b_up, &D.b_up},
          std::pair{&W.b_down, &D.b_down}, std::pair{&W.q_norm, &D.q_norm}, std::pair{&W.k_norm, &D.k_norm}})
      vectors.emplace_back(v, d);
    D.expert_up.resize(W.expert_up.size());
    D.expert_down.resize(W.expert_down.size());
    for (std::size_t e = 0; e < W.expert_up.size(); ++e) jobs.push_back({&W.expert_up[e], &D.expert_up[e]});
    for (std::size_t e = 0; e < W.expert_down.size(); ++e) jobs.push_back({&W.expert_down[e], &D.expert_down[e]});
  }
  vectors.emplace_back(&weights.final_g, &final_norm.g);
  vectors.emplace_back(&weights.final_b, &final_norm.b);
  vectors.emplace_back(&weights.embed_norm_g, &embed_norm.g);
  vectors.emplace_back(&weights.embed_norm_b, &embed_norm.b);
  const WeightStorage embed_storage = gpu::storageOf(weights.embed);
  embed_on_device = gpu::storedBytes(weights.embed, embed_storage) <= s.max_block_bytes &&
                    static_cast<std::size_t>(weights.pos_embed.size()) * sizeof(float) <= s.max_block_bytes;
  if (embed_on_device) {
    jobs.push_back({&weights.embed, &embed, embed_storage});
    jobs.push_back({&weights.pos_embed, &positions, WeightStorage::Float32});  // empty without learned positions
    if (weights.type_embed.rows() > 0) type_row_host = weights.type_embed.row(0);
    vectors.emplace_back(&type_row_host, &type_row);
  }

  std::size_t total = 0, largest = 0;
  std::map<WeightStorage, bool> used;
  for (Job& j : jobs) {
    if (j.out != &embed && j.out != &positions) j.storage = gpu::storageOf(*j.w);
    const std::size_t bytes = gpu::storedBytes(*j.w, j.storage);
    total += bytes;
    largest = std::max(largest, bytes);
    if (j.w->size() > 0 && j.out != &positions) used[j.storage] = true;  // positions: float32 whatever the file
  }
  for (const auto& [v, d] : vectors) total += static_cast<std::size_t>(v->size()) * sizeof(float);
  if (largest > s.max_block_bytes)
    throw InputError("gpu buffer",
                     "at most " + std::to_string(s.max_block_bytes >> 20) + " MiB in one buffer (" + s.renderer + ")",
                     std::to_string(largest >> 20) + " MiB for one weight matrix");
  const gpu::MemoryBudget budget = gpu::memoryBudget(s.options.memory_budget_bytes, 0);
  if (total > budget.bytes)
    throw InputError("gpu memory", "at most " + std::to_string(budget.bytes >> 20) + " MiB (" + budget.source + ")",
                     std::to_string(total >> 20) + " MiB for the weights");
  for (const auto& [kind, yes] : used)
    storage += (storage.empty() ? "" : " and ") + std::string(gpu::storageName(kind));
  if (storage.empty()) storage = "float32";

  std::size_t done = 0;
  for (const Job& j : jobs) {
    gpu::uploadMatrix(*j.w, j.storage, *j.out);
    done += gpu::storedBytes(*j.w, j.storage);
    if (progress && j.w->size() > 0) progress(done, total);
  }
  for (const auto& [v, d] : vectors) gpu::uploadVector(*v, *d);
  weight_bytes = total;
  if (progress) progress(total, total);
  gpu::checkGl("uploading the weights");
}

// [SECTION] one layer's attention: q|k|v in `qkv` (n, q + 2 kv) after its q/k norms and RoPE.
void GpuForward::State::attention(int l, unsigned n, model::ForwardResult& r) {
  const model::Architecture& a = arch();
  const unsigned q_dim = static_cast<unsigned>(a.qDim()), hd = static_cast<unsigned>(a.head_dim);
  const unsigned heads = static_cast<unsigned>(a.n_head), group = static_cast<unsigned>(a.n_head / a.n_kv_head);
  {
    const gpu::StageTimer::Scope timed = s.timer.scope("q scale, heads split");
    split_heads.use();
    qkv.bind(0);
    s.q.bind(1);
    s.k.bind(2);
    s.v.bind(3);
    split_heads.set("u_rows", n);
    split_heads.set("u_q_dim", q_dim);
    split_heads.set("u_kv_dim", static_cast<unsigned>(a.kvDim()));
    split_heads.set("u_head_dim", hd);
    split_heads.set("u_group", group);
    split_heads.set("u_scale", a.scoreScale());
    dispatch(groupsFor(q_dim, 64), std::min(n, 65535u));
  }
  s.window = a.causal ? static_cast<unsigned>(a.window.empty() ? 0 : a.window[static_cast<std::size_t>(l)]) : 0u;
  s.score_cap = static_cast<float>(a.attn_softcap);
  s.flashHeads(0, static_cast<int>(heads));
  if (s.fault && l + 1 == a.n_layer) s.injectFault();  // the test aid: the last layer's last head's l doubled
  checkFinite(s.stats, heads * n, 2, slotOf(l, kScores));

  const std::size_t nn = static_cast<std::size_t>(n) * n;
  if (r.keepsMaps()) {  // (n, n) per head from Q, K and (m, l), read back a group of heads at a time
    const unsigned per =
        static_cast<unsigned>(std::clamp<std::size_t>(s.max_block_bytes / (nn * sizeof(float)), 1, heads));
    maps.ensure(std::min<std::size_t>(per, heads) * nn * sizeof(float));
    for (unsigned h0 = 0; h0 < heads; h0 += per) {
      const unsigned count = std::min(per, heads - h0);
      const gpu::StageTimer::Scope timed = s.timer.scope("maps from statistics");
      stats_map.use();
      s.bindKeyMask(stats_map);
      s.q.bind(0);
      s.k.bind(1);
      maps.bind(3);
      s.stats.bind(7);
      stats_map.set("u_n", n);
      stats_map.set("u_ld", q_dim);
      stats_map.set("u_d", hd);
      stats_map.set("u_head0", h0);
      dispatch(groupsFor(n, 8), groupsFor(n, 8), count);
      glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
      maps.download(r.buffer.data() + (static_cast<std::size_t>(l) * heads + h0) * nn, count * nn * sizeof(float));
    }
    checkLayer(l, n, r, nullptr, nullptr);
    return;
  }
  // Maps not kept: Q (scaled) per head, K once per kv head, m and l, as the CPU forward keeps them.
  Matrix q(n, q_dim), k(n, q_dim);
  readRows(s.q, static_cast<int>(q_dim), 0, static_cast<int>(n), q.data());
  readRows(s.k, static_cast<int>(q_dim), 0, static_cast<int>(n), k.data());
  std::vector<float> ml(static_cast<std::size_t>(heads) * n * 2);
  s.stats.download(ml.data(), ml.size() * sizeof(float));
  Result& stats = r.stats[static_cast<std::size_t>(l)];
  stats.score_cap = s.score_cap;
  stats.heads.resize(heads);
  for (unsigned h = 0; h < heads; ++h) {
    HeadResult& hr = stats.heads[h];
    hr.q = q.middleCols(h * hd, hd);
    if (h % group == 0)
      hr.ownK() = k.middleCols(h * hd, hd);
    else
      hr.shareKeyValues(stats.heads[h - h % group]);
    hr.row_max.resize(n);
    hr.row_sum.resize(n);
    for (unsigned i = 0; i < n; ++i) {
      hr.row_max[i] = ml[2 * (h * n + i)];
      hr.row_sum[i] = ml[2 * (h * n + i) + 1];
    }
  }
  checkLayer(l, n, r, &q, &k);
}


// Sampled rows of layer l's attention against the CPU (forward_check.h), Q and K read back unless given.
void GpuForward::State::checkLayer(int l, unsigned n, const model::ForwardResult& r, const Matrix* q, const Matrix* k) {
  if (!run_time_check) return;
  const int q_dim = arch().qDim();
  Matrix read_q, read_k;
  if (!q) {
    read_q.resize(n, q_dim), read_k.resize(n, q_dim);
    readRows(s.q, q_dim, 0, static_cast<int>(n), read_q.data());
    readRows(s.k, q_dim, 0, static_cast<int>(n), read_k.data());
    q = &read_q, k = &read_k;
  }
  const std::vector<int> rows = sampledQueryRows(static_cast<int>(n), check_seed + static_cast<std::uint64_t>(l));
  if (std::optional<CheckMismatch> found =
          gpu::checkLayerRows(r, l, *q, *k, arch().head_dim, static_cast<float>(arch().attn_softcap), rows)) {
    ++found->head;  // layers and heads counted from 1, as everywhere in attnscope; rows (tokens) from 0
    throw LayerCheckFailed{"layer " + std::to_string(l + 1) + ", " + found->text()};
  }
}

// [SECTION] Mixtral's experts: the router's logits read back and routed by model::routeTokens (the CPU's own
// routing, so both choose the same experts from the same logits); each expert then runs on its rows alone.
void GpuForward::State::routedMlp(const LayerDevice& L, const GlBuffer& in, unsigned n, const LinearOut& out) {
  const model::Architecture& a = arch();
  const unsigned experts = static_cast<unsigned>(a.n_experts), inter = static_cast<unsigned>(a.intermediate);
  logits.ensure(static_cast<std::size_t>(n) * experts * sizeof(float));
  linear("the router", in, n, L.router, nullptr, {.c = &logits, .ldc = experts});
  Matrix router_logits(n, experts);
  readRows(logits, static_cast<int>(experts), 0, static_cast<int>(n), router_logits.data());
  const model::ExpertRoutes routes = model::routeTokens(a, router_logits);
  for (unsigned e = 0; e < experts; ++e) {
    const auto& rows = routes[e];
    if (rows.empty()) continue;
    std::vector<std::uint32_t> index;
    std::vector<float> scale;
    for (const auto& [row, weight] : rows) {
      index.push_back(static_cast<std::uint32_t>(row));
      scale.push_back(weight);
    }
    expert_rows.upload(index.data(), index.size() * sizeof(std::uint32_t));
    expert_scales.upload(scale.data(), scale.size() * sizeof(float));
    const unsigned r = static_cast<unsigned>(rows.size());
    linear("an expert's w1 | w3", in, r, L.expert_up[e], nullptr, {.c = &up, .ldc = 2 * inter}, Rows::GatherA);  // (r, 2 inter): w1 | w3
    activate(up, act, r, inter, true);                                                    // silu(w1 x) * w3 x
    linear("an expert's w2", act, r, L.expert_down[e], nullptr, {.c = out.c, .ldc = out.ldc}, Rows::ScatterC);
  }
}

void GpuForward::State::throwFirstOverflow(unsigned n) const {
  const model::Architecture& a = arch();
  const std::size_t slots = slotOf(a.n_layer, 1);
  std::vector<std::uint32_t> first(slots);
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
  flags.download(first.data(), slots * sizeof(std::uint32_t));
  const model::StageNames names = model::stageNames(a);
  for (std::size_t slot = 0; slot < slots; ++slot) {
    if (first[slot] == 0xffffffffu) continue;
    long token = static_cast<long>(first[slot]);
    if (slot < kFirstLayerSlot)
      throw model::stageOverflow(-1, slot == kEmbeddingSlot ? names.embedding : names.embedding_norm, token);
    if (slot + 1 == slots) throw model::stageOverflow(-1, names.final_norm, token);
    const int layer = static_cast<int>((slot - kFirstLayerSlot) / kStagesPerLayer);
    std::string name;
    switch ((slot - kFirstLayerSlot) % kStagesPerLayer) {
      case kNorm1:
        name = names.norm1;
        break;
      case kQkv:
        name = names.qkv;
        break;
      case kScores:  // rows of the statistics: head h's rows are h n .. h n + n - 1
        name = "attention scores and softmax of head " + std::to_string(token / n);
        token %= n;
        break;
      case kAttentionOut:
        name = names.attention_out;
        break;
      case kNorm2:
        name = names.norm2;
        break;
      case kMlpUp:
        name = names.mlp_up;
        break;
      default:
        name = names.mlp_down;
        break;
    }
    throw model::stageOverflow(layer, name, token);
  }
}

// [SECTION] the embedding into x (n, hidden), its slots checked
void GpuForward::State::embedTokens(const std::vector<int>& ids) {
  const model::Architecture& a = arch();
  const unsigned n = static_cast<unsigned>(ids.size()), hidden = static_cast<unsigned>(a.hidden);
  if (!embed_on_device) {
    const Matrix embedded = model::embedInput(weights, ids);  // checked and named on the CPU
    x.upload(embedded.data(), static_cast<std::size_t>(embedded.size()) * sizeof(float));
    return;
  }
  const std::vector<int> rows = model::positionIds(a, ids);
  std::vector<std::uint32_t> pairs;
  for (std::size_t i = 0; i < ids.size(); ++i)
    pairs.insert(pairs.end(), {static_cast<std::uint32_t>(ids[i]), static_cast<std::uint32_t>(rows[i])});
  tokens.upload(pairs.data(), pairs.size() * sizeof(std::uint32_t));
  auto found = embed_programs.find(embed.storage);
  if (found == embed_programs.end()) {
    const gpu::ShaderLibrary library(s.options.shader_dir);
    const std::string defines = embed.storage == WeightStorage::BFloat16  ? "#define W_BF16\n"
                                : embed.storage == WeightStorage::Float16 ? "#define W_F16\n"
                                                                          : "";
    found = embed_programs.emplace(embed.storage, gpu::ComputeProgram(library, "embed.comp", defines)).first;
  }
  const gpu::ComputeProgram& p = found->second;
  {
    const gpu::StageTimer::Scope timed = s.timer.scope("embedding");
    p.use();
    tokens.bind(0);
    embed.buffer.bind(1);
    (positions.present() ? positions.buffer : embed.buffer).bind(2);
    (type_row.present() ? type_row.buffer : embed.buffer).bind(3);
    x.bind(4);
    p.set("u_rows", n);
    p.set("u_d", hidden);
    p.set("u_positions", a.learned_positions);
    p.set("u_type", a.type_vocab_size > 0);
    p.set("u_scale", a.embed_scale);
    dispatch(groupsFor(hidden, 64), std::min(n, 65535u));
  }
  checkFinite(x, n, hidden, kEmbeddingSlot);
  if (a.embed_norm) {
    norm(x, embed_norm, n, x_next, false);
    std::swap(x, x_next);
    checkFinite(x, n, hidden, kEmbeddingNormSlot);
  }
}

// [SECTION] the forward
void GpuForward::State::run(const std::vector<int>& ids, model::ForwardResult& r, const model::ForwardOptions& o) {
  const model::Architecture& a = arch();
  // The CPU forward's interventions are not on the GPU: refused before any work.
  const std::pair<bool, const char*> refused[] = {{o.attention != nullptr, "attention"},
                                                  {o.start_layer != 0 || o.start_residual != nullptr, "start_layer"},
                                                  {static_cast<bool>(o.edit_heads), "edit_heads"},
                                                  {static_cast<bool>(o.edit_mlp), "edit_mlp"},
                                                  {o.keep_residual, "keep_residual"},
                                                  {o.segments != 1, "segments"}};
  for (const auto& [set, field] : refused)
    if (set) throw InputError(field, "none on the GPU forward (the CPU forward's)", "set");
  model::checkInputIds(a, ids);
  const int n_int = static_cast<int>(ids.size());
  const unsigned n = static_cast<unsigned>(n_int);
  if (o.trace_position >= n_int)
    throw InputError("position", "a token from 0 to " + std::to_string(n_int - 1), std::to_string(o.trace_position));
  const bool keep = model::forwardKeepsMaps(a.n_layer, a.n_head, n_int, o.maps);
  // The host's share as the CPU forward counts it, then the device's before anything is allocated.
  const std::size_t host = model::forwardBytes(a, n_int, o.keep_ln1, o.maps);
  if (host > defaultMemoryBudget())
    throw InputError("forward",
                     "at most " + byteString(defaultMemoryBudget()) + " for maps and activations (the memory budget)",
                     byteString(host) + " for " + std::to_string(n_int) + " tokens");
  const std::size_t need = activationBytes(n_int, keep);
  const gpu::MemoryBudget budget = gpu::memoryBudget(s.options.memory_budget_bytes, s.heldBytes() + weight_bytes);
  if (need + weight_bytes > budget.bytes)
    throw InputError("gpu memory", "at most " + std::to_string(budget.bytes >> 20) + " MiB (" + budget.source + ")",
                     std::to_string((need + weight_bytes) >> 20) + " MiB for the weights and " + std::to_string(n_int) +
                         " tokens' activations");
  const std::size_t widest =
      static_cast<std::size_t>(n) *
      std::max({static_cast<std::size_t>(a.hidden), static_cast<std::size_t>(a.qDim() + 2 * a.kvDim()),
                static_cast<std::size_t>(2 * a.intermediate)}) *
      sizeof(float);
  if (widest > s.max_block_bytes)
    throw InputError("gpu buffer",
                     "at most " + std::to_string(s.max_block_bytes >> 20) + " MiB in one buffer (" + s.renderer + ")",
                     std::to_string(widest >> 20) + " MiB for one activation of " + std::to_string(n_int) + " tokens");

  r.layout = a.layout();
  r.resize(n_int, a.n_layer * a.n_head, keep);
  r.ln1.assign(o.keep_ln1 ? static_cast<std::size_t>(a.n_layer) : 0, Matrix());
  r.residual.clear(), r.head_outputs.clear(), r.mlp_outputs.clear();
  r.trace.resize(o.trace_position >= 0 ? 2 * a.n_layer + 1 : 0, a.hidden);

  const std::size_t hidden_bytes = static_cast<std::size_t>(n) * a.hidden * sizeof(float);
  const unsigned hidden = static_cast<unsigned>(a.hidden), q_dim = static_cast<unsigned>(a.qDim());
  const unsigned qkv_cols = q_dim + 2u * static_cast<unsigned>(a.kvDim()),
                 inter = static_cast<unsigned>(a.intermediate);
  const bool gated = a.mlp == model::MlpKind::Gated, parallel = a.residual == model::Residual::Parallel;
  for (GlBuffer* b : {&x, &x_next, &normed, &normed2, &branch}) b->ensure(hidden_bytes);
  qkv.ensure(static_cast<std::size_t>(n) * qkv_cols * sizeof(float));
  up.ensure(static_cast<std::size_t>(n) * (gated || a.n_experts > 0 ? 2 : 1) * inter * sizeof(float));
  act.ensure(static_cast<std::size_t>(n) * inter * sizeof(float));
  const std::vector<std::uint32_t> none(slotOf(a.n_layer, 1), 0xffffffffu);
  flags.upload(none.data(), none.size() * sizeof(std::uint32_t));
  expert_rows.ensure(16), expert_scales.ensure(16);

  // The attention stages' resident layout: every query head d_k = d_v = head_dim side by side, scale 1 (Q is
  // scaled), the flash path, causal or not, no padding.
  s.resident = false;
  s.flash = true;
  s.analysis = s.similarity_current = false;
  if (!s.textures.empty()) glDeleteTextures(static_cast<GLsizei>(s.textures.size()), s.textures.data());
  s.textures.clear(), s.texture_stale.clear(), s.weight_groups.clear();
  const int hd = a.head_dim;
  s.shape = gpu::Shape{.n_q = n_int,
                       .n_k = n_int,
                       .d_model = a.hidden,
                       .d_k = std::vector<int>(static_cast<std::size_t>(a.n_head), hd),
                       .d_v = std::vector<int>(static_cast<std::size_t>(a.n_head), hd)};
  s.k_col.clear(), s.v_col.clear();
  std::vector<std::uint32_t> table;
  float one = 1.0f;
  std::uint32_t one_bits = 0;
  std::memcpy(&one_bits, &one, sizeof one_bits);
  for (int h = 0; h < a.n_head; ++h) {
    const std::uint32_t col = static_cast<std::uint32_t>(h * hd);
    s.k_col.push_back(col), s.v_col.push_back(col);
    table.insert(table.end(),
                 {col, static_cast<std::uint32_t>(hd), col, static_cast<std::uint32_t>(hd), one_bits, 0u, 0u, 0u});
  }
  s.heads_table.upload(table.data(), table.size() * sizeof(std::uint32_t));
  s.head_scales.assign(static_cast<std::size_t>(a.n_head), 1.0f);
  s.sum_dk = s.sum_dv = q_dim;
  s.explicit_mask = s.has_padding = s.has_mask = false;
  s.causal = a.causal;
  s.mask_words = groupsFor(n, 32);
  s.mask.ensure(16);
  s.padding.ensure(16);
  for (GlBuffer* b : {&s.q, &s.k, &s.v, &s.concat}) b->ensure(static_cast<std::size_t>(n) * q_dim * sizeof(float));
  s.stats.ensure(static_cast<std::size_t>(a.n_head) * n * 2 * sizeof(float));

  // RoPE tables (compute/rope.h: the CPU's own rounded cos and sin), the local base's for Gemma 3's windowed layers.
  rope_half = 0;
  if (a.rotary_dims > 0) {
    std::vector<int> rows(n);
    for (unsigned i = 0; i < n; ++i) rows[i] = static_cast<int>(i);
    const auto put = [&](const RopeTable& t, GlBuffer& cos, GlBuffer& sin) {
      cos.upload(t.cosines().data(), t.cosines().size() * sizeof(float));
      sin.upload(t.sines().data(), t.sines().size() * sizeof(float));
    };
    put(RopeTable(rows, ropeInverseFrequencies(a.rope_theta, a.rotary_dims, a.rope_scaling)), rope_cos, rope_sin);
    if (a.rope_local_theta > 0)
      put(RopeTable(rows, ropeInverseFrequencies(a.rope_local_theta, a.rotary_dims, RopeScaling{})), rope_local_cos,
          rope_local_sin);
    rope_half = static_cast<unsigned>(a.rotary_dims / 2);
  }
  // Columns [col0, col0 + dims) of each of `count` heads of qkv normalised in place (head_norm.comp).
  const auto head_norms = [&](const DeviceVector& w, unsigned col0, unsigned count, unsigned dims) {
    const gpu::StageTimer::Scope timed = s.timer.scope("q/k norms and RoPE");
    s.head_norm.use();
    qkv.bind(0);
    w.buffer.bind(1);
    s.head_norm.set("u_rows", n);
    s.head_norm.set("u_ld", qkv_cols);
    s.head_norm.set("u_dims", dims);
    s.head_norm.set("u_eps", static_cast<float>(a.norm_eps));
    for (unsigned h = 0; h < count; ++h) {
      s.head_norm.set("u_col0", col0 + h * dims);
      dispatch(groupsFor(n, 64), 1);
    }
  };
  const auto rotate = [&](unsigned col0, bool local) {
    const gpu::StageTimer::Scope timed = s.timer.scope("q/k norms and RoPE");
    s.rope.use();
    qkv.bind(0);
    (local ? rope_local_cos : rope_cos).bind(1);
    (local ? rope_local_sin : rope_sin).bind(2);
    s.rope.set("u_rows", n);
    s.rope.set("u_ld", qkv_cols);
    s.rope.set("u_col0", col0);
    s.rope.set("u_half", rope_half);
    dispatch(groupsFor(rope_half, 64), std::min(n, 65535u));
  };
  const auto trace = [&](int row) {
    if (o.trace_position >= 0) readRows(x, a.hidden, o.trace_position, 1, r.trace.row(row).data());
  };

  embedTokens(ids);
  trace(0);

  const model::StageNames names = model::stageNames(a);
  for (int l = 0; l < a.n_layer; ++l) {
    layer_now = l;
    const LayerDevice& L = layers[static_cast<std::size_t>(l)];
    const SublayerNormsDevice &an = L.attn_norms, &mn = L.mlp_norms;
    if (an.in.g.present()) norm(x, an.in, n, normed, false);
    const GlBuffer& attn_in = an.in.g.present() ? normed : x;  // no input norm (OLMo 2, encoders): x itself
    checkFinite(attn_in, n, hidden, slotOf(l, kNorm1));
    if (o.keep_ln1) {
      Matrix& kept = r.ln1[static_cast<std::size_t>(l)];
      kept.resize(n_int, a.hidden);
      readRows(attn_in, a.hidden, 0, n_int, kept.data());
    }
    if (parallel) {  // both norms read the layer's input
      norm(x, mn.in, n, normed2, false);
      checkFinite(normed2, n, hidden, slotOf(l, kNorm2));
    }
    linear(names.qkv.c_str(), attn_in, n, L.w_qkv, &L.b_qkv, {.c = &qkv, .ldc = qkv_cols});
    if (a.qk_norm) {  // Qwen3: each head, before RoPE
      head_norms(L.q_norm, 0, static_cast<unsigned>(a.n_head), static_cast<unsigned>(hd));
      head_norms(L.k_norm, q_dim, static_cast<unsigned>(a.n_kv_head), static_cast<unsigned>(hd));
    }
    if (a.qk_norm_whole) {  // OLMo 2: the whole q and the whole k
      head_norms(L.q_norm, 0, 1, q_dim);
      head_norms(L.k_norm, q_dim, 1, static_cast<unsigned>(a.kvDim()));
    }
    if (rope_half > 0) {
      const bool local = a.rope_local_theta > 0 && a.window[static_cast<std::size_t>(l)] > 0;
      for (int h = 0; h < a.n_head + a.n_kv_head; ++h) rotate(static_cast<unsigned>(h * hd), local);
    }
    checkFinite(qkv, n, qkv_cols, slotOf(l, kQkv));
    attention(l, n, r);
    if (an.branch.g.present()) {  // x += norm(o_proj(heads))
      linear(names.attention_out.c_str(), s.concat, n, L.w_o, &L.b_o, {.c = &branch, .ldc = hidden});
      norm(branch, an.branch, n, x, true);
    } else {
      linear(names.attention_out.c_str(), s.concat, n, L.w_o, &L.b_o, {.c = &x, .ldc = hidden, .accumulate = true});
    }
    checkFinite(x, n, hidden, slotOf(l, kAttentionOut));
    trace(1 + 2 * l);
    if (an.out.g.present()) {  // x = norm(x + attn(x))
      norm(x, an.out, n, x_next, false);
      std::swap(x, x_next);
      checkFinite(x, n, hidden, slotOf(l, kNorm1));
    }
    if (!parallel && mn.in.g.present()) {
      norm(x, mn.in, n, normed, false);
      checkFinite(normed, n, hidden, slotOf(l, kNorm2));
    }
    const GlBuffer& mlp_in = parallel ? normed2 : mn.in.g.present() ? normed : x;
    // The MLP's output: into `branch` when a norm follows it, else added to x straight away (x is read before).
    const bool own_out = mn.branch.g.present();
    const LinearOut mlp_out =
        own_out ? LinearOut{.c = &branch, .ldc = hidden} : LinearOut{.c = &x, .ldc = hidden, .accumulate = true};
    if (own_out && a.n_experts > 0) {  // the experts add into it
      const std::vector<float> zeros(static_cast<std::size_t>(n) * hidden, 0.0f);
      branch.upload(zeros.data(), hidden_bytes);
    }
    if (a.n_experts > 0) {
      routedMlp(L, mlp_in, n, mlp_out);
    } else {
      linear(names.mlp_up.c_str(), mlp_in, n, L.w_up, &L.b_up, {.c = &up, .ldc = gated ? 2 * inter : inter});
      if (gated)
        activate(up, act, n, inter, true);
      else
        activate(up, up, n, inter, false);
      const GlBuffer& activated = gated ? act : up;
      checkFinite(activated, n, inter, slotOf(l, kMlpUp));
      linear(names.mlp_down.c_str(), activated, n, L.w_down, &L.b_down, mlp_out);
    }
    if (own_out) norm(branch, mn.branch, n, x, true);  // x += norm(mlp(...))
    checkFinite(x, n, hidden, slotOf(l, kMlpDown));
    if (mn.out.g.present()) {  // x = norm(x + mlp(x))
      norm(x, mn.out, n, x_next, false);
      std::swap(x, x_next);
      checkFinite(x, n, hidden, slotOf(l, kNorm2));
    }
    trace(2 + 2 * l);
    gpu::checkGl("a layer of the GPU forward");
    if (o.progress && !o.progress(l + 1)) throw model::ForwardCancelled();
  }
  const bool final_norm_present = final_norm.g.present();
  if (final_norm_present) norm(x, final_norm, n, x_next, false);
  const GlBuffer& out = final_norm_present ? x_next : x;
  checkFinite(out, n, hidden, slotOf(a.n_layer, 0));
  throwFirstOverflow(n);
  r.hidden.resize(n_int, a.hidden);
  readRows(out, a.hidden, 0, n_int, r.hidden.data());
  gpu::checkGl("reading the GPU forward back");
}

// [SECTION] public interface (each call in the backend's context: gpu::CallScope)
using gpu::CallScope;

GpuForward::GpuForward(const model::Weights& weights, const GpuOptions& options, const UploadProgress& progress)
    : state_(std::make_unique<State>(weights, options)) {
  State& st = *state_;
  CallScope scope(st.s.egl.get());
  const gpu::ShaderLibrary library(options.shader_dir);
  st.row_norm = gpu::ComputeProgram(library, "row_norm.comp");
  st.activation = gpu::ComputeProgram(library, "activation.comp");
  st.split_heads = gpu::ComputeProgram(library, "split_heads.comp");
  st.finite_rows = gpu::ComputeProgram(library, "finite_rows.comp");
  st.stats_map = gpu::ComputeProgram(library, "stats_map.comp");
  st.upload(progress);
}

GpuForward::~GpuForward() {
  if (state_) {
    CallScope scope(state_->s.egl.get());  // the buffers are deleted in the context that made them
    state_.reset();
  }
}

void GpuForward::forwardInto(const std::vector<int>& ids, model::ForwardResult& result,
                             const model::ForwardOptions& options) {
  State& st = *state_;
  ++st.check_seed;
  // ATTNSCOPE_TIMINGS: the forward's seconds (as the CPU forward prints them) and the GPU's milliseconds per stage
  // (GL timer queries, summed over the layers).
  const bool timings = flagSetting("ATTNSCOPE_TIMINGS");
  const auto start = std::chrono::steady_clock::now();
  try {
    CallScope scope(st.s.egl.get());
    st.s.timer.enable(timings);
    st.run(ids, result, options);
    if (timings) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "attnscope: timings: forward %.3f s (the GPU forward on %s)\n", seconds,
                   st.s.renderer.c_str());
      for (const auto& [stage, ms] : st.s.timer.take())
        std::fprintf(stderr, "attnscope: timings:   %-42s %9.2f ms of GPU time\n", stage.c_str(), ms);
    }
  } catch (const LayerCheckFailed& failed) {  // a wrong number on this card: the CPU's forward instead
    st.warnings.push_back("the GPU forward failed its run-time check at " + failed.text +
                          "; the forward was recomputed on the CPU");
    model::weightsForwardInto(st.weights, ids, result, options);
  }
}

void GpuForward::setCheck(bool on) { state_->run_time_check = on; }
const std::vector<std::string>& GpuForward::warnings() const { return state_->warnings; }

model::ForwardResult GpuForward::forward(const std::vector<int>& ids, const model::ForwardOptions& options) {
  model::ForwardResult r;
  forwardInto(ids, r, options);
  return r;
}

std::string GpuForward::device() const { return state_->backend.device(); }
std::size_t GpuForward::weightBytes() const { return state_->weight_bytes; }
std::string GpuForward::weightStorage() const { return state_->storage; }
bool GpuForward::embeddingOnDevice() const { return state_->embed_on_device; }

std::size_t GpuForward::State::activationBytes(int n, bool keep_maps) const {
  const model::Architecture& a = arch();
  const std::size_t nn = static_cast<std::size_t>(n), hidden = static_cast<std::size_t>(a.hidden);
  const std::size_t q = static_cast<std::size_t>(a.qDim()), kv = static_cast<std::size_t>(a.kvDim());
  const std::size_t inter = static_cast<std::size_t>(a.intermediate), heads = static_cast<std::size_t>(a.n_head);
  // x, its next value, two norm outputs, a branch; q|k|v; Q, K, V and the concat per query head; the MLP's up
  // (gated: 2 inter) and activation; the row statistics; Mixtral's logits and routed rows.
  std::size_t floats = nn * (5 * hidden + q + 2 * kv + 4 * q + 3 * inter + 2 * heads);
  if (a.n_experts > 0) floats += nn * (static_cast<std::size_t>(a.n_experts) + 2);
  if (a.rotary_dims > 0) floats += 2 * nn * static_cast<std::size_t>(a.rotary_dims);  // cos and sin, two bases
  if (keep_maps) {  // a layer's maps, a group of heads at a time (as many as one buffer holds)
    const std::size_t per = std::clamp<std::size_t>(s.max_block_bytes / (nn * nn * sizeof(float)), 1, heads);
    floats += per * nn * nn;
  }
  return floats * sizeof(float);
}

std::size_t GpuForward::activationBytes(int n, bool keep_maps) const { return state_->activationBytes(n, keep_maps); }

}  // namespace attnscope
