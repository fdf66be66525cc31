// What goes onto the device for the GPU forward (forward_state.h): the weights, once, as stored and checked against
// the device's memory first; each forward's embedding.
#include "forward/forward_state.h"

namespace attnscope {

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

}  // namespace attnscope
