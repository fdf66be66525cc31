// The GPU backend's private state and stages, shared by gpu_backend.cpp (context, limits, read-back, the
// public interface) and gpu_stages.cpp (upload and the compute dispatches).
//
// Resident layout (row-major floats):
//   Q, K: (n_q | n_k, sum of d_k), head i in columns [k_col[i], k_col[i] + d_k)   -- the heads side by side
//   V, concat: (n_k | n_q, sum of d_v), head i in columns [v_col[i], ...)          -- a head's output is its
//                                                                                   slice of the concat
//   weights: (n_q, n_k) per head, as many heads back to back in a buffer as one storage block holds (copied to
//            an R32F texture only when the window asks); none on the flash path (maps not kept)
//   stats: (heads, n_q) vec2 (m, l), the row statistics tiles are recomputed from (both paths write them)
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/compute/tiles.h"
#include "attnscope/gpu_backend.h"
#include "egl_context.h"
#include "gl_resources.h"
#include "readback.h"
#include "shader_library.h"
#include "stage_timer.h"

namespace attnscope {

namespace gpu {
constexpr unsigned kFinishThreads = 64;  // local_size_x of similarity_finish.comp

inline unsigned groupsFor(std::size_t n, unsigned per) { return static_cast<unsigned>((n + per - 1) / per); }
// A dispatch whose writes the next command's storage reads see (GL_SHADER_STORAGE_BARRIER_BIT after it).
inline void dispatch(unsigned x, unsigned y, unsigned z = 1) {
  glDispatchCompute(std::max(x, 1u), std::max(y, 1u), std::max(z, 1u));
  glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
}

// Around each public call (the backend's, the checkpoint forward's): the backend's own headless context made current
// (a context is current on one thread; the caller's thread may change between calls), or, on a window's context,
// the caller's bindings saved and restored.
struct CallScope {
  explicit CallScope(const EglContext* egl) {
    if (egl)
      egl->makeCurrent();
    else
      guard.emplace();
  }
  std::optional<GlStateGuard> guard;
};

// What must match for resident results to be reused by an incremental recompute or a read-back.
struct Shape {
  int n_q = 0, n_k = 0, d_model = 0;
  std::vector<int> d_k, d_v;
  bool own_key = false, own_value = false, has_w_o = false;
  bool operator==(const Shape&) const = default;
};
Shape shapeOf(const Scene& scene);
}  // namespace gpu

struct GpuBackend::Impl {
  using GlBuffer = gpu::GlBuffer;

  std::unique_ptr<gpu::EglContext> egl;  // declared first so that it is destroyed last
  GpuOptions options;
  std::string renderer, version;
  std::size_t max_block_bytes = 0;  // one storage buffer's limit (the driver's, or GpuOptions::max_buffer_bytes)
  GLint max_texture = 0, max_groups_x = 0, max_groups_y = 0;
  gpu::ComputeProgram project, scores, scores_softmax, weighted_sum, similarity_pair, similarity_finish,
      copy_columns, rope, head_norm;
  // The flash forward and the tile shaders hold a row of q (and of o) in registers, FLASH_D floats: one set per
  // FLASH_D (the widest d_k or d_v rounded up to 8), built when a scene first needs it.
  struct FlashPrograms {
    gpu::ComputeProgram forward, tile, tile_to_image;
  };
  std::map<unsigned, FlashPrograms> flash_programs;

  // [SECTION] resident state
  bool resident = false, analysis = true, similarity_current = false;
  gpu::Shape shape;
  std::vector<unsigned> k_col, v_col;
  unsigned sum_dk = 0, sum_dv = 0, mask_words = 0, similarity_groups = 0;
  unsigned valid_rows = 0;       // query rows with at least one key allowed
  unsigned similarity_rows = 0;  // query rows per similarity workgroup
  bool has_mask = false, bias_q = false, bias_k = false, bias_v = false;
  // The flash path: maps not kept (MapPolicy), so no weights buffers; output and (m, l) from flash_forward.comp.
  bool flash = false;
  MapPolicy maps = MapPolicy::Keep;
  // The mask as the flash and tile shaders read it (common.glsl, ATTNSCOPE_KEY_MASK): an explicit mask from
  // `mask`'s bits, else causal from indices and key padding from `padding`'s bits (one per key).
  bool explicit_mask = false, causal = false, has_padding = false;
  unsigned window = 0;   // with causal: a sliding window (a forward's layer; a scene has none)
  float score_cap = 0;   // a soft cap on the scores (a forward's layer; a scene has none)
  GlBuffer padding, stats, tile_ranges, tile_values, tile_key_scale;  // tile_key_scale: (n_k) of a scaled tile
  std::vector<float> head_scales;  // scene.headScale(i), as in the head table
  GlBuffer x_q, x_k, x_v, w_q, w_k, w_v, b_q, b_k, b_v, w_o, b_o;
  GlBuffer rope_cos_q, rope_sin_q, rope_cos_k, rope_sin_k;  // (n_q | n_k, rope_half) each, with rope
  unsigned rope_half = 0;                                   // dims/2 of the scene's rope; 0 without
  GlBuffer q_norm_weight, k_norm_weight;                    // (d_k) each, with the scene's q_norm / k_norm
  std::optional<float> q_norm_eps, k_norm_eps;              // set when the scene has that norm
  GlBuffer q, k, v, mask, concat, output, partial, pairs, cosine, js, score_scratch, heads_table, head_scratch;
  // The heads' weights, (n_q, n_k) each: weight_groups[g] holds heads [g heads_per_group, ...) back to back,
  // as many as one storage block may hold, so that one dispatch covers them.
  std::vector<GlBuffer> weight_groups;
  unsigned heads_per_group = 1;
  std::vector<GLuint> textures;  // 0 until the window asks for that head's texture
  std::vector<char> texture_stale;
  mutable gpu::StageTimer timer;  // GPU time per stage, when enabled (bench --stages)
  std::unique_ptr<gpu::Readback> readback;  // made with the programs, the context current

  // [SECTION] gpu_backend.cpp: context, limits, read-back
  explicit Impl(const GpuOptions& opts);
  ~Impl();
  int heads() const { return static_cast<int>(shape.d_k.size()); }
  unsigned groupSize(unsigned g) const {
    return std::min(heads_per_group, static_cast<unsigned>(heads()) - g * heads_per_group);
  }
  // Head `head`'s weights: its buffer and the byte offset of its map there.
  const GlBuffer& weightsOf(int head, std::size_t& byte_offset) const {
    const unsigned h = static_cast<unsigned>(head);
    byte_offset = static_cast<std::size_t>(h % heads_per_group) * static_cast<std::size_t>(shape.n_q) *
                  static_cast<std::size_t>(shape.n_k) * sizeof(float);
    return weight_groups[h / heads_per_group];
  }
  std::size_t heldBytes() const;
  // Refuses a scene the device cannot hold before allocating any of it.
  void checkFits(const Scene& scene) const;
  void requireResident(const Scene& scene) const;
  // Export, the command line; only_head >= 0 reads that head alone (and the shared results).
  void readBack(const Scene& scene, Result& result, const ComputeOptions& opts, int only_head);
  // Head `head`'s weights texture, created and refreshed from the weights buffer on the GPU when stale.
  GLuint texture(int head);

  // [SECTION] gpu_stages.cpp: upload and dispatches
  const GlBuffer& keyInput() const { return shape.own_key ? x_k : x_q; }
  const GlBuffer& valueInput() const { return shape.own_value ? x_v : keyInput(); }
  void uploadProjections(const Scene& scene);
  void uploadRope(const Scene& scene);  // and the q_norm / k_norm weights
  // Columns [col0, col0 + dims) of every row of x (rows, sum_dk) normalised in place (head_norm.comp).
  void normColumns(const GlBuffer& x, const GlBuffer& weight, float eps, unsigned rows, unsigned col0,
                   unsigned dims) const;
  void rotateColumns(const GlBuffer& x, const GlBuffer& cosines, const GlBuffer& sines, unsigned rows,
                     unsigned col0) const;
  void uploadHeadTable(const Scene& scene);
  // Only head `head`'s projections changed: writes its columns of the stacked W and biases on the GPU. False
  // when its biases appeared or went (then uploadProjections must run).
  bool uploadHeadProjections(const Scene& scene, int head);
  void upload(const Scene& scene);
  void uploadKeyMask(const Scene& scene, bool full_bits);  // the mask's bits and the key padding's
  // out[:, col0 : col0 + width] = input (rows, k) W[:, col0 : col0 + width] + bias; W, bias and out have ld columns.
  void projectColumns(const GlBuffer& input, unsigned rows, unsigned k_size, const GlBuffer& w, const GlBuffer& bias,
                      bool with_bias, const GlBuffer& out, unsigned ld, unsigned col0, unsigned width) const;
  // Q, K, V of the heads whose columns are [k0, k0 + dk) and [v0, v0 + dv) (all heads, or one).
  void projectHeads(unsigned k0, unsigned dk, unsigned v0, unsigned dv) const;
  // Uses `program` (a stage that includes ATTNSCOPE_HEADS) for heads from head0 on, with the weights buffer
  // that starts with head buffer_head0; binds the head table and sets n_q, n_k.
  void bindHeadsStage(const gpu::ComputeProgram& program, unsigned head0, unsigned buffer_head0) const;
  // Binds Q, K and the mask and sets the rest of a scores stage's uniforms (scores or scores_softmax).
  void bindScoreInputs(const gpu::ComputeProgram& program) const;
  // Scaled, masked scores of head `head` into `out` (n_q, n_k): for a read-back of the scores only.
  void scoreHead(int head, const GlBuffer& out) const;
  // Scores, softmax and weighted sum of heads [first, first + count) (their Q, K, V already projected).
  void attendHeads(int first, int count);
  void outputProjection() const;
  // ATTNSCOPE_GPU_FAULT=1 (`fault`): the last head's weights (flash: its l) made wrong after attendHeads' softmax.
  bool fault = false;
  void injectFault();
  // Partials of the pairs (a, b), a <= b, that involve `head` (every pair when head < 0), then the matrices.
  void similarity(int head);
  // Every stage from the uploaded inputs (and the similarity when `analysis`).
  void computeAll();

  // [SECTION] flash/flash_stages.cpp: the flash forward and tiles
  unsigned flashWidth() const;  // FLASH_D for this scene
  const FlashPrograms& flashPrograms();
  void bindKeyMask(const gpu::ComputeProgram& program) const;
  // Output and (m, l) of heads [first, first + count), key blocks with an online softmax, no (n_q, n_k) buffer.
  void flashHeads(int first, int count);
  // One head's given Q and K (and row statistics, else found by flashHeads) as the resident head 0, flash path.
  void loadHead(const Scene& scene, const GivenHead& head);
  // Output rows [y0, y1) (y1 -1: every row) of the tile `request` asks for, into `tile` (read back) or, when
  // texture != 0, into that R32F texture (and the R8 `mask_texture` when not 0) at texel rows y0 .. y1 - 1.
  void weightTile(const TileRequest& request, int y0, int y1, Tile* tile, GLuint texture, GLuint mask_texture);
};

}  // namespace attnscope
