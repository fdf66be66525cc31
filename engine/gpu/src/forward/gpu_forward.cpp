// The whole checkpoint forward on the GPU (gpu_forward.h): model/arch/forward.cpp's loop, stage for stage, on
// device buffers. Each sublayer: x = out(x + branch(f(in(x)))), each norm where the layer has it; a parallel
// residual (GPT-NeoX) feeds both sublayers the layer's input. The attention runs on the GPU backend's flash stages
// (flash_forward.comp: grouped heads, sliding window, soft cap, causal or not) over Q, K, V laid out as the backend
// lays a scene's; kept maps are made from Q, K and the row statistics (stats_map.comp) a layer at a time. This file:
// the loop and the public interface; the state, the small stages and the memory model's hand-offs are in
// forward_state.h.
#include "attnscope/gpu_forward.h"

#include "forward/forward_state.h"

namespace attnscope {

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
    const GlBuffer& attn_in = an.in.g.present() ? normed : x;  // a layer without an input norm: x itself
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
    if (a.qk_norm) {  // per head, before RoPE
      head_norms(L.q_norm, 0, static_cast<unsigned>(a.n_head), static_cast<unsigned>(hd));
      head_norms(L.k_norm, q_dim, static_cast<unsigned>(a.n_kv_head), static_cast<unsigned>(hd));
    }
    if (a.qk_norm_whole) {  // over the whole q and the whole k
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
