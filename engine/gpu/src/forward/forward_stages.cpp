// A layer's larger stages of the GPU forward (forward_state.h): the attention on the backend's flash stages and its
// maps or statistics read back, the run-time check of each layer, Mixtral-style routed experts, and the overflow
// flags turned into the CPU forward's message.
#include "forward/forward_state.h"

namespace attnscope {

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

}  // namespace attnscope
