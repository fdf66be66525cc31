// The GPU backend: OpenGL 4.3 compute shaders over a Scene uploaded into storage buffers, every result kept
// resident. This file: the context, the device's limits, read-back and the public interface.
#include "attnscope/gpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/scene_rope.h"
#include "attnscope/error.h"
#include "attnscope/compute/similarity.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/settings.h"
#include "gpu_backend_impl.h"
#include "gpu_memory.h"

namespace attnscope {

using gpu::groupsFor;
using gpu::shapeOf;

bool isSoftwareRenderer(const std::string& renderer) {
  for (const char* software : {"llvmpipe", "softpipe", "swrast", "SWR"})
    if (renderer.find(software) != std::string::npos) return true;
  return false;
}

GpuBackend::Impl::Impl(const GpuOptions& opts) : options(opts) {
  fault = flagSetting("ATTNSCOPE_GPU_FAULT");  // settings.cpp: "0" or "1", refused otherwise
  if (options.context == GlContextMode::OwnHeadless) egl = std::make_unique<gpu::EglContext>();
  const GLubyte* version_text = glGetString(GL_VERSION);
  if (!version_text) throw GpuUnavailable("no current OpenGL context to use");
  version = reinterpret_cast<const char*>(version_text);
  renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  if (epoxy_gl_version() < 43 || epoxy_is_desktop_gl() == 0)
    throw GpuUnavailable("OpenGL 4.3 with compute shaders is needed; " + renderer + " offers " + version);
  GLint64 driver_block_bytes = 0;
  glGetInteger64v(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &driver_block_bytes);
  max_block_bytes = static_cast<std::size_t>(std::max<GLint64>(driver_block_bytes, 0));
  if (options.max_buffer_bytes > 0) max_block_bytes = std::min(max_block_bytes, options.max_buffer_bytes);
  max_block_bytes = std::min(max_block_bytes, std::size_t{1} << 34);  // the shaders index floats with 32 bits
  glGetIntegerv(GL_MAX_TEXTURE_SIZE, &max_texture);
  glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_COUNT, 0, &max_groups_x);
  glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_COUNT, 1, &max_groups_y);
  std::optional<gpu::GlStateGuard> guard;
  if (!egl) guard.emplace();
  const gpu::ShaderLibrary library(options.shader_dir);
  // The GEMM stages' tile per device (the host reads it back from each program): 128 x 128 ran every stage
  // 1.5-2.3x faster than 64 x 64 on an H100; llvmpipe, which runs a workgroup's invocations in turn on one CPU
  // core, ran 512 x 8 heads ~6% slower with it, so a software renderer keeps 64 x 64.
  const unsigned tile = options.gemm_tile ? options.gemm_tile : isSoftwareRenderer(renderer) ? 64u : 128u;
  if (tile != 64 && tile != 128) throw InputError("gemm_tile", "64 or 128", std::to_string(tile));
  const std::string gemm = "#define GEMM_SIDE " + std::to_string(tile / gpu::ComputeProgram::kGemmPerInvocation) + "u\n";
  project = gpu::ComputeProgram(library, "project.comp", gemm);
  scores = gpu::ComputeProgram(library, "scores.comp", gemm);
  scores_softmax = gpu::ComputeProgram(library, "scores_softmax.comp", gemm);
  weighted_sum = gpu::ComputeProgram(library, "weighted_sum.comp", gemm);
  similarity_pair = gpu::ComputeProgram(library, "similarity_pair.comp");
  similarity_finish = gpu::ComputeProgram(library, "similarity_finish.comp");
  copy_columns = gpu::ComputeProgram(library, "copy_columns.comp");
  rope = gpu::ComputeProgram(library, "rope.comp");
  head_norm = gpu::ComputeProgram(library, "head_norm.comp");
  gpu::checkGl("building the compute shaders");
  const bool staged = options.readback == ReadbackPath::Staged ||
                      (options.readback == ReadbackPath::Auto && !isSoftwareRenderer(renderer));
  readback = std::make_unique<gpu::Readback>(staged);
  gpu::checkGl("mapping the read-back buffer");
}

GpuBackend::Impl::~Impl() {
  if (egl) egl->makeCurrent();
  readback.reset();
  if (!textures.empty()) glDeleteTextures(static_cast<GLsizei>(textures.size()), textures.data());
}

std::size_t GpuBackend::Impl::heldBytes() const {
  std::size_t bytes = 0;
  for (const GlBuffer* b :
       {&x_q, &x_k, &x_v, &w_q, &w_k, &w_v, &b_q, &b_k, &b_v, &w_o, &b_o, &q, &k, &v, &mask, &concat, &output,
        &q_norm_weight, &k_norm_weight, &partial, &pairs, &cosine, &js, &score_scratch, &heads_table, &head_scratch,
        &padding, &stats, &tile_ranges, &tile_values, &tile_key_scale})
    bytes += b->bytes();
  for (const GlBuffer& b : weight_groups) bytes += b.bytes();
  for (GLuint texture : textures)
    if (texture) bytes += static_cast<std::size_t>(shape.n_q) * static_cast<std::size_t>(shape.n_k) * sizeof(float);
  return bytes;
}

void GpuBackend::Impl::checkFits(const Scene& scene) const {
  const std::size_t n_q = static_cast<std::size_t>(scene.nQ()), n_k = static_cast<std::size_t>(scene.nK());
  const std::size_t largest = std::max({flash ? std::size_t{0} : n_q * n_k, n_q * static_cast<std::size_t>(scene.concatWidth()),
                                        std::max(n_q, n_k) * static_cast<std::size_t>(scene.d_model)}) *
                              sizeof(float);
  std::size_t widest = 0;
  for (const HeadParams& head : scene.heads) widest = std::max<std::size_t>(widest, head.dK());
  const std::size_t largest_qk = std::max(n_q, n_k) * widest * scene.heads.size() * sizeof(float);
  if (std::max(largest, largest_qk) > max_block_bytes)
    throw InputError("gpu buffer",
                     "at most " + std::to_string(max_block_bytes >> 20) + " MiB in one buffer (" + renderer + ")",
                     std::to_string(std::max(largest, largest_qk) >> 20) + " MiB for one head's weights or Q/K");
  if (n_q > static_cast<std::size_t>(max_groups_x) || groupsFor(n_q, scores_softmax.gemmTile()) > static_cast<unsigned>(max_groups_y))
    throw InputError("query rows", "at most " + std::to_string(max_groups_x) + " on " + renderer, std::to_string(n_q));
  const std::size_t need = estimateGpuBytes(scene, options.context == GlContextMode::UseCurrent && !flash, !flash);
  const gpu::MemoryBudget budget = gpu::memoryBudget(options.memory_budget_bytes, heldBytes());
  if (need > budget.bytes)
    throw InputError("gpu memory", "at most " + std::to_string(budget.bytes >> 20) + " MiB (" + budget.source + ")",
                     std::to_string(need >> 20) + " MiB for this scene");
}

void GpuBackend::Impl::requireResident(const Scene& scene) const {
  if (!resident) throw InputError("gpu backend", "computeResident before a read-back or recompute", "nothing computed");
  if (shapeOf(scene) != shape)
    throw InputError("scene", "the shape computed last (call computeResident after a shape change)", "another shape");
}

void GpuBackend::Impl::readBack(const Scene& scene, Result& result, const ComputeOptions& opts, int only_head) {
  requireResident(scene);
  if (opts.analysis && !similarity_current && !flash) similarity(-1);
  const int h = heads();
  const Eigen::Index n_q = shape.n_q, n_k = shape.n_k;
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
  Matrix qs(n_q, sum_dk), ks(n_k, sum_dk), vs(n_k, sum_dv);
  readback->read(q, 0, qs.data(), static_cast<std::size_t>(qs.size()) * sizeof(float));
  readback->read(k, 0, ks.data(), static_cast<std::size_t>(ks.size()) * sizeof(float));
  readback->read(v, 0, vs.data(), static_cast<std::size_t>(vs.size()) * sizeof(float));
  result.concat.resize(n_q, sum_dv);
  readback->read(concat, 0, result.concat.data(), static_cast<std::size_t>(result.concat.size()) * sizeof(float));
  if (shape.has_w_o) {
    result.output.resize(n_q, shape.d_model);
    readback->read(output, 0, result.output.data(), static_cast<std::size_t>(result.output.size()) * sizeof(float));
  } else {
    result.output = result.concat;
  }
  result.heads.resize(static_cast<std::size_t>(h));
  std::map<int, int> group_owner;  // key/value head -> the first query head read back in it: K and V held once
  for (int i = 0; i < h; ++i) {
    if (only_head >= 0 && i != only_head) continue;
    const std::size_t s = static_cast<std::size_t>(i);
    HeadResult& hr = result.heads[s];
    hr.q = qs.middleCols(k_col[s], shape.d_k[s]);
    const auto owner = group_owner.emplace(scene.kvOf(i), i);
    if (owner.second) {
      hr.ownK() = ks.middleCols(k_col[s], shape.d_k[s]);
      hr.ownV() = vs.middleCols(v_col[s], shape.d_v[s]);
    } else {
      hr.shareKeyValues(result.heads[static_cast<std::size_t>(owner.first->second)]);
    }
    hr.output = result.concat.middleCols(v_col[s], shape.d_v[s]);
    // Row statistics (m, l), written by both paths: (n_q) vec2, head i's at i n_q.
    std::vector<float> row_stats(static_cast<std::size_t>(n_q) * 2);
    readback->read(stats, s * static_cast<std::size_t>(n_q) * 2 * sizeof(float), row_stats.data(),
                   row_stats.size() * sizeof(float));
    hr.row_max.resize(n_q);
    hr.row_sum.resize(n_q);
    for (Eigen::Index r = 0; r < n_q; ++r) {
      hr.row_max[r] = row_stats[static_cast<std::size_t>(2 * r)];
      hr.row_sum[r] = row_stats[static_cast<std::size_t>(2 * r + 1)];
    }
    if (flash) {  // no maps: every consumer reads weights through tiles (compute/tiles.h), from Q, K, m and l
      hr.weights.resize(0, 0);
      hr.scores.resize(0, 0);
      continue;
    }
    hr.weights.resize(n_q, n_k);
    std::size_t offset = 0;
    const GlBuffer& buffer = weightsOf(i, offset);
    readback->read(buffer, offset, hr.weights.data(), static_cast<std::size_t>(hr.weights.size()) * sizeof(float));
    if (opts.keep_scores) {  // scores are not kept resident (the softmax overwrites them): recompute them
      score_scratch.ensure(static_cast<std::size_t>(n_q * n_k) * sizeof(float));
      scoreHead(i, score_scratch);
      glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
      hr.scores.resize(n_q, n_k);
      readback->read(score_scratch, 0, hr.scores.data(), static_cast<std::size_t>(hr.scores.size()) * sizeof(float));
    } else {
      hr.scores.resize(0, 0);
    }
  }
  checkResultFinite(scene, result);  // as the CPU's finish: an overflowing scene is refused, never read as NaN
  result.warnings = fullyMaskedRowWarnings(scene);
  if (opts.analysis && flash) {
    analyseHeadsStreamed(scene, result);  // the CPU's streamed analysis over tiles of the read-back Q, K, m, l
  } else if (opts.analysis) {
    result.similarity.cosine.resize(h, h);
    result.similarity.js.resize(h, h);
    cosine.download(result.similarity.cosine.data(), static_cast<std::size_t>(h * h) * sizeof(float));
    js.download(result.similarity.js.data(), static_cast<std::size_t>(h * h) * sizeof(float));
    // Statistics on the CPU from the read-back weights: the same function as the reference, so exact to it.
    const std::vector<std::uint8_t> single_key_rows = singleKeyRows(scene);
    if (only_head < 0 || result.stats.size() != static_cast<std::size_t>(h)) {
      result.stats.clear();
      for (const HeadResult& hr : result.heads) result.stats.push_back(headStats(hr.weights, single_key_rows));
    } else {
      result.stats[static_cast<std::size_t>(only_head)] =
          headStats(result.heads[static_cast<std::size_t>(only_head)].weights, single_key_rows);
    }
  } else {
    result.similarity = {};
    result.stats.clear();
  }
  gpu::checkGl("reading results back");
}

GLuint GpuBackend::Impl::texture(int head) {
  const std::size_t i = static_cast<std::size_t>(head);
  if (flash)
    throw InputError("weights texture", "maps kept (MapPolicy::Keep) for a whole-map texture",
                     "no maps on the flash path: draw tiles with weightTileToTexture");
  if (shape.n_k > max_texture || shape.n_q > max_texture)
    throw InputError("weights texture", "at most " + std::to_string(max_texture) + " texels a side on " + renderer,
                     shapeString(shape.n_q, shape.n_k));
  if (textures.size() <= i) textures.resize(static_cast<std::size_t>(heads()), 0);
  if (!textures[i]) {
    glGenTextures(1, &textures[i]);
    glBindTexture(GL_TEXTURE_2D, textures[i]);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_R32F, shape.n_k, shape.n_q);  // n_k wide, n_q tall: row i = query i
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    texture_stale[i] = 1;
  }
  if (texture_stale[i]) {  // a copy on the GPU, from the weights buffer through the pixel-unpack binding
    glMemoryBarrier(GL_PIXEL_BUFFER_BARRIER_BIT);
    std::size_t offset = 0;
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, weightsOf(head, offset).id());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    glBindTexture(GL_TEXTURE_2D, textures[i]);
    // With a pixel-unpack buffer bound, the pointer argument is a byte offset into it.
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, shape.n_k, shape.n_q, GL_RED, GL_FLOAT,
                    reinterpret_cast<const void*>(offset));
    texture_stale[i] = 0;
  }
  gpu::checkGl("updating a weights texture");
  return textures[i];
}

// [SECTION] public interface: each call makes the context current and, on the window's, restores its state
using gpu::CallScope;

GpuBackend::GpuBackend(const GpuOptions& options) : impl_(std::make_unique<Impl>(options)) {}
GpuBackend::~GpuBackend() = default;

std::string GpuBackend::device() const { return impl_->renderer + ", OpenGL " + impl_->version; }

void GpuBackend::computeResident(const Scene& scene, const ComputeOptions& options) {
  Limits limits;  // a result without maps costs no (n_q, n_k) memory on the host either
  limits.with_maps = keepsMaps(scene, options);
  validateScene(scene, limits);
  CallScope scope(impl_->egl.get());
  impl_->resident = false;
  impl_->maps = options.maps;
  impl_->flash = !keepsMaps(scene, options);
  impl_->checkFits(scene);
  impl_->analysis = options.analysis;
  impl_->upload(scene);
  impl_->computeAll();
  impl_->resident = true;
}

void GpuBackend::recomputeResident() {
  CallScope scope(impl_->egl.get());
  if (!impl_->resident) throw InputError("gpu backend", "computeResident before recomputeResident", "nothing computed");
  impl_->computeAll();
}

void GpuBackend::recomputeHeadResident(const Scene& scene, int head) {
  if (head < 0 || head >= scene.numHeads())
    throw InputError("head", "0 to " + std::to_string(scene.numHeads() - 1), std::to_string(head));
  // A new shape, or a shared W_K / W_V, rope tables or q/k norms that one head's upload would not refresh:
  // everything (and every check).
  if (!impl_->resident || shapeOf(scene) != impl_->shape || scene.grouped() || scene.rope || hasHeadNorm(scene)) {
    validateScene(scene);
    computeResident(scene, {.keep_scores = true, .analysis = impl_->analysis, .maps = impl_->maps});
    return;
  }
  validateHead(scene, head);  // the rest was checked when it was uploaded
  CallScope scope(impl_->egl.get());
  Impl& s = *impl_;
  const std::size_t i = static_cast<std::size_t>(head);
  if (!s.uploadHeadProjections(scene, head)) s.uploadProjections(scene);
  s.projectHeads(s.k_col[i], static_cast<unsigned>(s.shape.d_k[i]), s.v_col[i], static_cast<unsigned>(s.shape.d_v[i]));
  s.attendHeads(head, 1);
  s.outputProjection();
  if (s.similarity_current) s.similarity(head);
  gpu::checkGl("recomputing a head");
}

unsigned GpuBackend::weightsTexture(int head) const {
  if (!impl_->resident) throw InputError("gpu backend", "computeResident before weightsTexture", "nothing computed");
  if (head < 0 || head >= impl_->heads())
    throw InputError("head", "0 to " + std::to_string(impl_->heads() - 1), std::to_string(head));
  CallScope scope(impl_->egl.get());
  return impl_->texture(head);
}

Tile GpuBackend::weightTile(const TileRequest& request) {
  Tile tile;
  weightTileRows(request, 0, -1, tile);
  return tile;
}

void GpuBackend::weightTileRows(const TileRequest& request, int y0, int y1, Tile& tile) {
  if (!impl_->resident) throw InputError("gpu backend", "computeResident before weightTile", "nothing computed");
  CallScope scope(impl_->egl.get());
  impl_->weightTile(request, y0, y1, &tile, 0, 0);
}

void GpuBackend::weightTileToTexture(const TileRequest& request, unsigned texture, unsigned mask_texture) {
  weightTileRowsToTexture(request, 0, -1, texture, mask_texture);
}

void GpuBackend::weightTileRowsToTexture(const TileRequest& request, int y0, int y1, unsigned texture,
                                         unsigned mask_texture) {
  if (!impl_->resident)
    throw InputError("gpu backend", "computeResident before weightTileToTexture", "nothing computed");
  if (texture == 0) throw InputError("texture", "a GL texture name (GL_R32F)", "0");
  CallScope scope(impl_->egl.get());
  impl_->weightTile(request, y0, y1, nullptr, texture, mask_texture);
}

void GpuBackend::residentHead(const Scene& scene, const GivenHead& head, RowVector* found_max, RowVector* found_sum) {
  CallScope scope(impl_->egl.get());
  Impl& s = *impl_;
  s.resident = false;
  const bool find = !head.row_max || !head.row_sum;
  s.loadHead(scene, head);
  s.resident = true;
  if (!find || (!found_max && !found_sum)) return;
  const std::size_t n_q = static_cast<std::size_t>(scene.nQ());
  std::vector<float> ml(2 * n_q);
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);  // glGetBufferSubData reads what the flash pass wrote
  s.stats.download(ml.data(), ml.size() * sizeof(float));
  if (found_max) found_max->resize(scene.nQ());
  if (found_sum) found_sum->resize(scene.nQ());
  for (std::size_t i = 0; i < n_q; ++i) {
    if (found_max) (*found_max)[static_cast<Eigen::Index>(i)] = ml[2 * i];
    if (found_sum) (*found_sum)[static_cast<Eigen::Index>(i)] = ml[2 * i + 1];
  }
  gpu::checkGl("reading row statistics back");
}

bool GpuBackend::keepsResidentMaps() const { return impl_->resident && !impl_->flash; }

void GpuBackend::readBack(const Scene& scene, Result& result, const ComputeOptions& options) {
  CallScope scope(impl_->egl.get());
  impl_->readBack(scene, result, options, -1);
}

void GpuBackend::finish() {
  CallScope scope(impl_->egl.get());
  glFinish();
  gpu::checkGl("finishing");
}

void GpuBackend::setStageTiming(bool on) { impl_->timer.enable(on); }

GpuPathCounts GpuBackend::pathCounts() const {
  return {.weight_buffers = impl_->weight_groups.size(),
          .staged_chunks = impl_->readback ? impl_->readback->stagedChunks() : 0};
}

std::vector<std::pair<std::string, double>> GpuBackend::takeStageTimes() {
  CallScope scope(impl_->egl.get());
  return impl_->timer.take();
}

void GpuBackend::computeInto(const Scene& scene, Result& result, const ComputeOptions& options) {
  computeResident(scene, options);
  readBack(scene, result, options);
}

void GpuBackend::recomputeHead(const Scene& scene, int head, Result& result) {
  const bool same = impl_->resident && shapeOf(scene) == impl_->shape && !scene.grouped() &&
                    result.heads.size() == static_cast<std::size_t>(scene.numHeads());
  if (!same) {
    computeInto(scene, result);
    return;
  }
  const bool keep_scores = result.heads[static_cast<std::size_t>(head)].scores.size() > 0;
  recomputeHeadResident(scene, head);
  CallScope scope(impl_->egl.get());
  impl_->readBack(scene, result, {.keep_scores = keep_scores, .analysis = true}, head);
}

}  // namespace attnscope
