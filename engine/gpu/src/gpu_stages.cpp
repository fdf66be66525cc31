// The GPU backend's upload and compute stages: one dispatch per shader, a barrier after each so that the
// next stage sees its writes.
//
// Every hand-off, by the OpenGL 4.3 memory model (shader storage writes are incoherent: only the right
// glMemoryBarrier bit makes them visible to the command that consumes them):
//   dispatch -> dispatch reading a storage buffer      GL_SHADER_STORAGE_BARRIER_BIT (dispatch(), after each)
//   dispatch -> glGetBufferSubData                    GL_BUFFER_UPDATE_BARRIER_BIT (before the read-back)
//   dispatch -> glTexSubImage2D from the buffer (PBO)  GL_PIXEL_BUFFER_BARRIER_BIT (texture())
//   glBufferSubData -> dispatch                        none: an ordinary GL command, ordered by the API
// Within a dispatch, shared memory passes between invocations through memoryBarrierShared() + barrier(); no
// invocation reads storage another invocation of the same dispatch wrote (scores_softmax.comp re-reads only
// its own writes). Nothing relies on llvmpipe running a workgroup in lock step or a dispatch to completion.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>

#include "attnscope/compute/scene_rope.h"
#include "attnscope/scene/key_mask.h"
#include "attnscope/error.h"
#include "gpu_backend_impl.h"
#include "gpu_memory.h"

namespace attnscope {

namespace gpu {

Shape shapeOf(const Scene& scene) {
  Shape s{scene.nQ(),           scene.nK(), scene.d_model, {}, {}, scene.key.has_value(), scene.value.has_value(),
          scene.w_o.has_value()};
  for (int i = 0; i < scene.numHeads(); ++i) {
    s.d_k.push_back(scene.heads[static_cast<std::size_t>(i)].dK());
    s.d_v.push_back(scene.dV(i));
  }
  return s;
}

}  // namespace gpu

namespace {

// Every head's W side by side, (d_model, sum of widths), and the biases (zeros where a head has none). get_w(i):
// head i's W; in a scene with kv_heads each head gets a copy of its group's W_K and W_V (so K and V are
// computed per head: the attention shaders read a head's K from its own columns).
template <typename GetW, typename GetB>
bool stackHeads(const Scene& scene, GetW get_w, GetB get_b, std::vector<float>& w, std::vector<float>& b) {
  int width = 0;
  for (int i = 0; i < scene.numHeads(); ++i) width += static_cast<int>(get_w(i).cols());
  w.assign(static_cast<std::size_t>(scene.d_model) * static_cast<std::size_t>(width), 0.0f);
  b.assign(static_cast<std::size_t>(width), 0.0f);
  Eigen::Map<Matrix> stacked(w.data(), scene.d_model, width);
  bool any_bias = false;
  int col = 0;
  for (int i = 0; i < scene.numHeads(); ++i) {
    const Matrix& hw = get_w(i);
    stacked.middleCols(col, hw.cols()) = hw;
    if (const std::optional<RowVector>& hb = get_b(i)) {
      std::copy(hb->data(), hb->data() + hb->size(), b.begin() + col);
      any_bias = true;
    }
    col += static_cast<int>(hw.cols());
  }
  return any_bias;
}

}  // namespace

using gpu::dispatch;
using gpu::groupsFor;
using gpu::kFinishThreads;
using gpu::kSimilarityRows;

void GpuBackend::Impl::uploadProjections(const Scene& scene) {
  std::vector<float> w, b;
  bias_q = stackHeads(
      scene, [&](int i) -> const Matrix& { return scene.heads[static_cast<std::size_t>(i)].w_q; },
      [&](int i) -> const std::optional<RowVector>& { return scene.heads[static_cast<std::size_t>(i)].b_q; }, w, b);
  w_q.upload(w.data(), w.size() * sizeof(float));
  b_q.upload(b.data(), b.size() * sizeof(float));
  bias_k = stackHeads(
      scene, [&](int i) -> const Matrix& { return scene.wK(i); },
      [&](int i) -> const std::optional<RowVector>& { return scene.bK(i); }, w, b);
  w_k.upload(w.data(), w.size() * sizeof(float));
  b_k.upload(b.data(), b.size() * sizeof(float));
  bias_v = stackHeads(
      scene, [&](int i) -> const Matrix& { return scene.wV(i); },
      [&](int i) -> const std::optional<RowVector>& { return scene.bV(i); }, w, b);
  w_v.upload(w.data(), w.size() * sizeof(float));
  b_v.upload(b.data(), b.size() * sizeof(float));
  uploadHeadTable(scene);
}

// The head table the attention shaders read (common.glsl, ATTNSCOPE_HEADS): two uvec4 per head.
void GpuBackend::Impl::uploadHeadTable(const Scene& scene) {
  std::vector<std::uint32_t> table;
  head_scales.clear();
  for (int i = 0; i < scene.numHeads(); ++i) {
    const std::size_t s = static_cast<std::size_t>(i);
    const float head_scale = scene.headScale(i);
    head_scales.push_back(head_scale);
    std::uint32_t scale_bits = 0;
    std::memcpy(&scale_bits, &head_scale, sizeof scale_bits);
    table.insert(table.end(), {k_col[s], static_cast<std::uint32_t>(shape.d_k[s]), v_col[s],
                               static_cast<std::uint32_t>(shape.d_v[s]), scale_bits, 0u, 0u, 0u});
  }
  heads_table.upload(table.data(), table.size() * sizeof(std::uint32_t));
}

// Head `head`'s W_Q, W_K, W_V and biases written into their columns of the stacked buffers on the GPU. False
// (nothing done) when the head's biases appeared or went, which changes what the projection adds: then the
// caller uploads everything.
bool GpuBackend::Impl::uploadHeadProjections(const Scene& scene, int head) {
  if (scene.grouped()) return false;  // a shared W_K or W_V is copied into every head of its group: upload all
  const HeadParams& p = scene.heads[static_cast<std::size_t>(head)];
  const bool any_q = std::any_of(scene.heads.begin(), scene.heads.end(), [](const HeadParams& x) { return x.b_q.has_value(); });
  const bool any_k = std::any_of(scene.heads.begin(), scene.heads.end(), [](const HeadParams& x) { return x.b_k.has_value(); });
  const bool any_v = std::any_of(scene.heads.begin(), scene.heads.end(), [](const HeadParams& x) { return x.b_v.has_value(); });
  if (any_q != bias_q || any_k != bias_k || any_v != bias_v) return false;
  const std::size_t i = static_cast<std::size_t>(head);
  const unsigned d = static_cast<unsigned>(shape.d_model);
  // (rows, width) of `values` into columns [col0, col0 + width) of `dst`, ld columns wide.
  auto place = [&](const float* values, unsigned rows, unsigned width, const GlBuffer& dst, unsigned ld,
                   unsigned col0) {
    head_scratch.upload(values, static_cast<std::size_t>(rows) * width * sizeof(float));
    copy_columns.use();
    head_scratch.bind(0);
    dst.bind(1);
    copy_columns.set("u_rows", rows);
    copy_columns.set("u_width", width);
    copy_columns.set("u_ld", ld);
    copy_columns.set("u_col0", col0);
    dispatch(groupsFor(width, 64), std::min(rows, 65535u));
  };
  const unsigned dk = static_cast<unsigned>(shape.d_k[i]), dv = static_cast<unsigned>(shape.d_v[i]);
  place(p.w_q.data(), d, dk, w_q, sum_dk, k_col[i]);
  place(p.w_k.data(), d, dk, w_k, sum_dk, k_col[i]);
  place(p.w_v.data(), d, dv, w_v, sum_dv, v_col[i]);
  const std::vector<float> zeros(std::max(dk, dv), 0.0f);
  place(p.b_q ? p.b_q->data() : zeros.data(), 1, dk, b_q, sum_dk, k_col[i]);
  place(p.b_k ? p.b_k->data() : zeros.data(), 1, dk, b_k, sum_dk, k_col[i]);
  place(p.b_v ? p.b_v->data() : zeros.data(), 1, dv, b_v, sum_dv, v_col[i]);
  uploadHeadTable(scene);
  return true;
}

// The mask's buffers: allowedMask(scene) packed 32 keys to a word (bit set = may attend) when `full_bits`, else a
// word of stand-in; and the key padding, one bit per key (set = padded). mask_words and has_padding set first.
void GpuBackend::Impl::uploadKeyMask(const Scene& scene, bool full_bits) {
  const std::size_t n_q = static_cast<std::size_t>(scene.nQ()), n_k = static_cast<std::size_t>(scene.nK());
  std::vector<std::uint32_t> bits(full_bits ? n_q * mask_words : 1, 0u);
  if (full_bits) {
    const MaskMatrix allowed = allowedMask(scene);
    for (std::size_t i = 0; i < n_q; ++i)
      for (std::size_t j = 0; j < n_k; ++j)
        if (allowed(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))) bits[i * mask_words + j / 32] |= 1u << (j % 32);
  }
  mask.upload(bits.data(), bits.size() * sizeof(std::uint32_t));
  std::vector<std::uint32_t> padded(mask_words, 0u);  // bit set = padded key
  if (has_padding)
    for (std::size_t j = 0; j < n_k; ++j)
      if (scene.key_padding[j]) padded[j / 32] |= 1u << (j % 32);
  padding.upload(padded.data(), padded.size() * sizeof(std::uint32_t));
}

void GpuBackend::Impl::upload(const Scene& scene) {
  const gpu::Shape previous = shape;
  shape = gpu::shapeOf(scene);
  if (previous.n_q != shape.n_q || previous.n_k != shape.n_k) {  // textures have a fixed size: new ones on demand
    if (!textures.empty()) glDeleteTextures(static_cast<GLsizei>(textures.size()), textures.data());
    textures.clear();
  }
  const std::size_t n_q = static_cast<std::size_t>(shape.n_q), n_k = static_cast<std::size_t>(shape.n_k);
  const std::size_t d = static_cast<std::size_t>(shape.d_model), h = shape.d_k.size();
  k_col.clear();
  v_col.clear();
  sum_dk = sum_dv = 0;
  for (std::size_t i = 0; i < h; ++i) {
    k_col.push_back(sum_dk);
    v_col.push_back(sum_dv);
    sum_dk += static_cast<unsigned>(shape.d_k[i]);
    sum_dv += static_cast<unsigned>(shape.d_v[i]);
  }
  x_q.upload(scene.query.data(), n_q * d * sizeof(float));
  if (scene.key) x_k.upload(scene.key->data(), n_k * d * sizeof(float));
  if (scene.value) x_v.upload(scene.value->data(), n_k * d * sizeof(float));
  uploadProjections(scene);
  uploadRope(scene);
  if (scene.w_o) {
    w_o.upload(scene.w_o->data(), static_cast<std::size_t>(scene.w_o->size()) * sizeof(float));
    const RowVector bias = scene.b_o ? *scene.b_o : RowVector::Zero(shape.d_model);
    b_o.upload(bias.data(), d * sizeof(float));
    output.ensure(n_q * d * sizeof(float));
  }

  // allowedMask(scene), the one place masks combine, packed 32 keys to a word; bit set = may attend. Only for
  // the map path or an explicit mask: the flash path and tiles evaluate causal and padding masks from indices
  // (a 32k causal scene would otherwise upload 128 MiB of bits and build a 1 GiB mask on the host).
  has_mask = scene.hasMask();
  explicit_mask = scene.mask == MaskKind::Explicit;
  causal = scene.mask == MaskKind::Causal;
  window = 0, score_cap = 0;  // a scene has neither (validateScene)
  has_padding = !scene.key_padding.empty() &&
                std::any_of(scene.key_padding.begin(), scene.key_padding.end(), [](std::uint8_t p) { return p != 0; });
  mask_words = groupsFor(n_k, 32);
  uploadKeyMask(scene, has_mask && (!flash || explicit_mask));
  valid_rows = static_cast<unsigned>(n_q);
  if (has_mask) {
    const KeyMask key_mask(scene);
    for (std::size_t i = 0; i < n_q; ++i)
      if (key_mask.allowedCount(static_cast<int>(i)) == 0) --valid_rows;
  }
  stats.ensure(h * n_q * 2 * sizeof(float));

  q.ensure(n_q * sum_dk * sizeof(float));
  k.ensure(n_k * sum_dk * sizeof(float));
  v.ensure(n_k * sum_dv * sizeof(float));
  concat.ensure(n_q * sum_dv * sizeof(float));
  // As many heads' maps back to back in one buffer as one storage block may hold (so a dispatch covers them).
  // None on the flash path.
  const std::size_t map_bytes = n_q * n_k * sizeof(float);
  heads_per_group = static_cast<unsigned>(
      std::clamp<std::size_t>(max_block_bytes / map_bytes, 1, std::max<std::size_t>(h, 1)));
  weight_groups.resize(flash ? 0 : groupsFor(h, heads_per_group));
  for (unsigned g = 0; g < weight_groups.size(); ++g) weight_groups[g].ensure(groupSize(g) * map_bytes);
  if (textures.size() > h) {
    glDeleteTextures(static_cast<GLsizei>(textures.size() - h), textures.data() + h);
    textures.resize(h);
  }
  texture_stale.assign(h, 1);
  // At least ~2048 weights per workgroup, so that short rows do not leave most invocations idle.
  similarity_rows = std::max<unsigned>(kSimilarityRows, 2048 / static_cast<unsigned>(n_k));
  similarity_groups = groupsFor(n_q, similarity_rows);
  partial.ensure(h * h * similarity_groups * 2 * sizeof(float));
  pairs.ensure(h * (h + 1) / 2 * 4 * sizeof(std::uint32_t));
  cosine.ensure(h * h * sizeof(float));
  js.ensure(h * h * sizeof(float));
  similarity_current = false;
  gpu::checkGl("uploading the scene");
}

// out[:, col0 : col0 + width] = input (rows, k) W[:, col0 : col0 + width] + bias; W, bias and out have ld columns.
void GpuBackend::Impl::projectColumns(const GlBuffer& input, unsigned rows, unsigned k_size, const GlBuffer& w,
                                      const GlBuffer& bias, bool with_bias, const GlBuffer& out, unsigned ld,
                                      unsigned col0, unsigned width) const {
  project.use();
  input.bind(0);
  w.bind(1);
  bias.bind(2);
  out.bind(3);
  project.set("u_m", rows);
  project.set("u_n", width);
  project.set("u_k", k_size);
  project.set("u_ld", ld);
  project.set("u_col0", col0);
  project.set("u_has_bias", with_bias);
  dispatch(groupsFor(width, project.gemmTile()), groupsFor(rows, project.gemmTile()));
}

// Q, K, V of the heads whose columns are [k0, k0 + dk) and [v0, v0 + dv) (all heads, or one), then the
// rotation of their q and k when the scene has rope.
void GpuBackend::Impl::projectHeads(unsigned k0, unsigned dk, unsigned v0, unsigned dv) const {
  const unsigned n_q = static_cast<unsigned>(shape.n_q), n_k = static_cast<unsigned>(shape.n_k);
  const unsigned d = static_cast<unsigned>(shape.d_model);
  const gpu::StageTimer::Scope timed = timer.scope("projections");
  projectColumns(x_q, n_q, d, w_q, b_q, bias_q, q, sum_dk, k0, dk);
  projectColumns(keyInput(), n_k, d, w_k, b_k, bias_k, k, sum_dk, k0, dk);
  projectColumns(valueInput(), n_k, d, w_v, b_v, bias_v, v, sum_dv, v0, dv);
  if (rope_half == 0 && !q_norm_eps && !k_norm_eps) return;
  for (std::size_t i = 0; i < k_col.size(); ++i) {
    if (k_col[i] < k0 || k_col[i] >= k0 + dk) continue;
    const unsigned head_dk = static_cast<unsigned>(shape.d_k[i]);
    if (q_norm_eps) normColumns(q, q_norm_weight, *q_norm_eps, n_q, k_col[i], head_dk);  // before the rotation
    if (k_norm_eps) normColumns(k, k_norm_weight, *k_norm_eps, n_k, k_col[i], head_dk);
    if (rope_half == 0) continue;
    rotateColumns(q, rope_cos_q, rope_sin_q, n_q, k_col[i]);
    rotateColumns(k, rope_cos_k, rope_sin_k, n_k, k_col[i]);
  }
}

void GpuBackend::Impl::normColumns(const GlBuffer& x, const GlBuffer& weight, float eps, unsigned rows,
                                   unsigned col0, unsigned dims) const {
  head_norm.use();
  x.bind(0);
  weight.bind(1);
  head_norm.set("u_rows", rows);
  head_norm.set("u_ld", sum_dk);
  head_norm.set("u_col0", col0);
  head_norm.set("u_dims", dims);
  head_norm.set("u_eps", eps);
  dispatch(groupsFor(rows, 64), 1);
}

// The scene's rope tables (scene_rope.h: the CPU backend's own cos and sin), (rows, dims/2) each; none
// (rope_half 0) without rope.
void GpuBackend::Impl::uploadRope(const Scene& scene) {
  q_norm_eps.reset();
  k_norm_eps.reset();
  if (scene.q_norm) {
    q_norm_weight.upload(scene.q_norm->weight.data(), static_cast<std::size_t>(scene.q_norm->weight.size()) * sizeof(float));
    q_norm_eps = static_cast<float>(scene.q_norm->eps);
  }
  if (scene.k_norm) {
    k_norm_weight.upload(scene.k_norm->weight.data(), static_cast<std::size_t>(scene.k_norm->weight.size()) * sizeof(float));
    k_norm_eps = static_cast<float>(scene.k_norm->eps);
  }
  const std::optional<SceneRopeTables> tables = sceneRopeTables(scene);
  rope_half = tables ? static_cast<unsigned>(tables->query.dims() / 2) : 0;
  if (!tables) return;
  const auto put = [](GlBuffer& buffer, const std::vector<float>& values) {
    buffer.upload(values.data(), values.size() * sizeof(float));
  };
  put(rope_cos_q, tables->query.cosines());
  put(rope_sin_q, tables->query.sines());
  put(rope_cos_k, tables->key.cosines());
  put(rope_sin_k, tables->key.sines());
}

// Columns [col0, col0 + 2 rope_half) of every row of x (rows, sum_dk) rotated in place (rope.comp).
void GpuBackend::Impl::rotateColumns(const GlBuffer& x, const GlBuffer& cosines, const GlBuffer& sines,
                                     unsigned rows, unsigned col0) const {
  rope.use();
  x.bind(0);
  cosines.bind(1);
  sines.bind(2);
  rope.set("u_rows", rows);
  rope.set("u_ld", sum_dk);
  rope.set("u_col0", col0);
  rope.set("u_half", rope_half);
  dispatch(groupsFor(rope_half, 64), std::min(rows, 65535u));
}

void GpuBackend::Impl::bindHeadsStage(const gpu::ComputeProgram& program, unsigned head0,
                                      unsigned buffer_head0) const {
  program.use();
  heads_table.bind(4);
  program.set("u_n_q", static_cast<unsigned>(shape.n_q));
  program.set("u_n_k", static_cast<unsigned>(shape.n_k));
  program.set("u_head0", head0);
  program.set("u_buffer_head0", buffer_head0);
}

void GpuBackend::Impl::bindScoreInputs(const gpu::ComputeProgram& program) const {
  q.bind(0);
  k.bind(1);
  mask.bind(2);
  program.set("u_ld", sum_dk);
  program.set("u_has_mask", has_mask);
  program.set("u_mask_words", mask_words);
}

// Scaled, masked scores of head `head` into `out` (n_q, n_k): for a read-back of the scores only.
void GpuBackend::Impl::scoreHead(int head, const GlBuffer& out) const {
  const unsigned h = static_cast<unsigned>(head);
  bindHeadsStage(scores, h, h);
  bindScoreInputs(scores);
  out.bind(3);
  dispatch(groupsFor(static_cast<std::size_t>(shape.n_k), scores.gemmTile()),
           groupsFor(static_cast<std::size_t>(shape.n_q), scores.gemmTile()), 1);
}

// Heads [first, first + count): weights (scores and softmax in one dispatch, a workgroup per 64 query rows of
// a head), then the weighted sum; one dispatch of each per weights buffer, the heads side by side in z.
void GpuBackend::Impl::attendHeads(int first, int count) {
  if (flash) {  // no maps: output and (m, l) by key blocks (flash/flash_stages.cpp)
    flashHeads(first, count);
    if (fault && first + count == heads()) injectFault();
    return;
  }
  const unsigned begin = static_cast<unsigned>(first), end = static_cast<unsigned>(first + count);
  const std::size_t n_q = static_cast<std::size_t>(shape.n_q);
  unsigned widest_dv = 0;
  for (unsigned i = begin; i < end; ++i) widest_dv = std::max(widest_dv, static_cast<unsigned>(shape.d_v[i]));
  for (unsigned g = begin / heads_per_group; g * heads_per_group < end; ++g) {
    const unsigned group_first = g * heads_per_group;
    const unsigned h0 = std::max(begin, group_first), h1 = std::min(end, group_first + groupSize(g));
    {
      const gpu::StageTimer::Scope timed = timer.scope("scores and softmax");
      bindHeadsStage(scores_softmax, h0, group_first);
      bindScoreInputs(scores_softmax);
      weight_groups[g].bind(3);
      stats.bind(7);
      dispatch(1, groupsFor(n_q, scores_softmax.gemmTile()), h1 - h0);
    }
    if (fault && h1 == static_cast<unsigned>(heads())) injectFault();  // before the weighted sum reads them
    const gpu::StageTimer::Scope timed = timer.scope("weighted sum");
    bindHeadsStage(weighted_sum, h0, group_first);
    weight_groups[g].bind(0);
    v.bind(1);
    concat.bind(2);
    weighted_sum.set("u_ld", sum_dv);
    dispatch(groupsFor(widest_dv, weighted_sum.gemmTile()), groupsFor(n_q, weighted_sum.gemmTile()), h1 - h0);
  }
  for (unsigned i = begin; i < end; ++i) texture_stale[i] = 1;
}

// ATTNSCOPE_GPU_FAULT=1, a test aid: the last head's weights made wrong as a race would, so that the run-time
// check (compute/sampled_check.h) has something to catch on a GPU that computes right. With maps: in every row
// half the largest weight moves to the first other key of weight > 0 (an allowed one: masked weights are exactly
// 0), the row's sum kept, before the weighted sum reads them. Flash (no maps): each row's l doubles, so every
// weight a tile recomputes halves. A read, a change on the host and a write back: cost is no concern here.
void GpuBackend::Impl::injectFault() {
  const std::size_t head = static_cast<std::size_t>(heads() - 1);
  const std::size_t n_q = static_cast<std::size_t>(shape.n_q), n_k = static_cast<std::size_t>(shape.n_k);
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
  std::size_t offset = head * n_q * 2 * sizeof(float);
  const GlBuffer* buffer = &stats;
  std::vector<float> values(n_q * 2);
  if (!flash) {
    buffer = &weightsOf(static_cast<int>(head), offset);
    values.resize(n_q * n_k);
  }
  buffer->download(values.data(), values.size() * sizeof(float), offset);
  for (std::size_t r = 0; r < n_q; ++r) {
    if (flash) {
      values[2 * r + 1] *= 2.0f;
      continue;
    }
    float* row = values.data() + r * n_k;
    const std::size_t a = static_cast<std::size_t>(std::max_element(row, row + n_k) - row);
    std::size_t b = 0;
    while (b < n_k && (b == a || !(row[b] > 0.0f))) ++b;
    if (b == n_k) continue;  // one allowed key (or none): nothing to move
    const float moved = 0.5f * row[a];
    row[a] -= moved;
    row[b] += moved;
  }
  glBindBuffer(GL_COPY_WRITE_BUFFER, buffer->id());
  glBufferSubData(GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(offset),
                  static_cast<GLsizeiptr>(values.size() * sizeof(float)), values.data());
  gpu::checkGl("ATTNSCOPE_GPU_FAULT");
}

void GpuBackend::Impl::outputProjection() const {
  if (!shape.has_w_o) return;
  const unsigned d = static_cast<unsigned>(shape.d_model);
  const gpu::StageTimer::Scope timed = timer.scope("output projection");
  projectColumns(concat, static_cast<unsigned>(shape.n_q), sum_dv, w_o, b_o, true, output, d, 0, d);
}

// Partials of the pairs (a, b), a <= b, that involve `head` (every pair when head < 0), then the matrices.
// When every map lies in one weights buffer, one dispatch takes every pair; else one dispatch per pair, with
// the buffers of its two heads bound.
void GpuBackend::Impl::similarity(int head) {
  const gpu::StageTimer::Scope timed = timer.scope("similarity");
  const unsigned h = static_cast<unsigned>(heads());
  std::vector<std::uint32_t> list;  // (a, b as indices within their buffers, first partial, 0) per pair
  std::vector<std::pair<unsigned, unsigned>> buffers;  // the weights buffers of a and b, per pair
  for (unsigned a = 0; a < h; ++a)
    for (unsigned b = a; b < h; ++b)
      if (head < 0 || a == static_cast<unsigned>(head) || b == static_cast<unsigned>(head)) {
        list.insert(list.end(), {a % heads_per_group, b % heads_per_group, (a * h + b) * similarity_groups, 0u});
        buffers.emplace_back(a / heads_per_group, b / heads_per_group);
      }
  const unsigned count = static_cast<unsigned>(buffers.size());
  pairs.upload(list.data(), list.size() * sizeof(std::uint32_t));
  similarity_pair.use();
  partial.bind(2);
  pairs.bind(3);
  similarity_pair.set("u_n_q", static_cast<unsigned>(shape.n_q));
  similarity_pair.set("u_n_k", static_cast<unsigned>(shape.n_k));
  similarity_pair.set("u_rows_per_group", similarity_rows);
  similarity_pair.set("u_head_stride", static_cast<unsigned>(shape.n_q) * static_cast<unsigned>(shape.n_k));
  if (weight_groups.size() == 1) {
    weight_groups[0].bind(0);
    weight_groups[0].bind(1);
    similarity_pair.set("u_first_pair", 0u);
    glDispatchCompute(similarity_groups, count, 1);
  } else {
    for (unsigned p = 0; p < count; ++p) {  // pairs write disjoint partials: one barrier after all
      weight_groups[buffers[p].first].bind(0);
      weight_groups[buffers[p].second].bind(1);
      similarity_pair.set("u_first_pair", p);
      glDispatchCompute(similarity_groups, 1, 1);
    }
  }
  glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
  similarity_finish.use();
  partial.bind(0);
  cosine.bind(1);
  js.bind(2);
  similarity_finish.set("u_heads", h);
  similarity_finish.set("u_groups", similarity_groups);
  similarity_finish.set("u_valid_rows", valid_rows);
  dispatch(groupsFor(h * h, kFinishThreads), 1);
  similarity_current = true;
}

void GpuBackend::Impl::computeAll() {
  projectHeads(0, sum_dk, 0, sum_dv);
  attendHeads(0, heads());
  outputProjection();
  similarity_current = false;
  if (analysis && !flash) similarity(-1);  // the flash path's analysis streams over tiles at read-back
  gpu::checkGl("computing attention");
}

}  // namespace attnscope
