// The GPU backend: OpenGL 4.3 compute shaders. Results stay resident on the GPU (the window samples the
// weight textures directly); read back only for export and the command line.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/compute/backend.h"
#include "attnscope/compute/tiles.h"

namespace attnscope {

enum class GlContextMode {
  OwnHeadless,  // make an EGL context of its own (surfaceless on Mesa, the NVIDIA device when present)
  UseCurrent,   // use the context current on this thread (the window's); the caller keeps it current
};

// How results come back to the CPU. Staged: the GPU copies them by DMA into a persistently mapped buffer in
// chunks while the CPU copies the previous chunk out (GL 4.4 or ARB_buffer_storage); Direct: glGetBufferSubData.
// Auto: staged on a hardware GPU, direct on a software renderer, where the buffers already are host memory
// and the extra copy only costs.
enum class ReadbackPath { Auto, Staged, Direct };

// Mesa's software rasterisers (llvmpipe, softpipe, swrast, SWR), by GL_RENDERER: they run compute shaders on
// the CPU, tens of times slower than the CPU backend.
bool isSoftwareRenderer(const std::string& renderer);

// One head's numbers given rather than projected (GpuBackend::residentHead). Not owned; read during the call.
struct GivenHead {
  const Matrix* q = nullptr;  // (n_q, d), the scale folded in; d at most 256
  const Matrix* k = nullptr;  // (n_k, d)
  const RowVector* row_max = nullptr;  // m and l (n_q each) when known, both or neither (compute/tiles.h)
  const RowVector* row_sum = nullptr;
  float score_cap = 0;  // s -> cap tanh(s / cap) when > 0 (Result::score_cap)
};

struct GpuOptions {
  GlContextMode context = GlContextMode::OwnHeadless;
  std::size_t memory_budget_bytes = 0;  // 0 = what the driver reports free (NVX/ATI), else a default budget
  // Folder of the GLSL files; empty = $ATTNSCOPE_SHADER_DIR when set, else the shaders embedded at build time.
  std::string shader_dir = {};
  // Most bytes in one storage buffer: 0 = the driver's GL_MAX_SHADER_STORAGE_BLOCK_SIZE. Heads' weights share
  // a buffer up to this size (one dispatch covers them); a smaller number splits them over more buffers.
  std::size_t max_buffer_bytes = 0;
  ReadbackPath readback = ReadbackPath::Auto;
  // Side of the matrix-product stages' square tile: 0 = per device (128 on hardware GPUs, 64 on a software
  // renderer), else 64 or 128 (tests run the hardware tile on llvmpipe).
  unsigned gemm_tile = 0;
};

// Bytes the GPU backend allocates for this scene (inputs, projections, Q K V, every head's weights, the
// concat, the output, the mask, similarity and a score buffer for read-back), plus one R32F texture per head
// when `with_textures` (the window's heatmaps). Checked against the budget before anything is allocated.
// Without `with_maps` (the flash path) no (n_q, n_k) buffer: the weights, score buffer, similarity and (for
// causal or padded scenes) the mask bits are left out, and the row statistics (m, l) are counted.
std::size_t estimateGpuBytes(const Scene& scene, bool with_textures, bool with_maps = true);

// Which paths the backend took, for tests that assert a path ran: the storage buffers the heads' weights
// are spread over (set by the last upload), and the read-back chunks copied through the staging buffer since
// construction (0 on the direct path).
struct GpuPathCounts {
  std::size_t weight_buffers = 0;
  std::size_t staged_chunks = 0;
};

class GpuBackend final : public Backend, public ResidentMaps {
 public:
  // Throws GpuUnavailable (a std::runtime_error) with a clear reason when no GL 4.3 context can be had.
  explicit GpuBackend(const GpuOptions& options = {});
  ~GpuBackend() override;
  std::string name() const override { return "gpu"; }
  std::string device() const override;  // GL_RENDERER, GL_VERSION
  // Full recompute, then read everything back into `result`.
  void computeInto(const Scene& scene, Result& result, const ComputeOptions& options = {}) override;
  void recomputeHead(const Scene& scene, int head, Result& result) override;
  ResidentMaps* residentMaps() override { return this; }

  // [SECTION] resident use (the window, the benchmark)
  // Uploads the scene and computes every head (and, with options.analysis, the head similarity); nothing is
  // read back. Throws InputError when the scene does not fit the memory budget or the device's limits.
  void computeResident(const Scene& scene, const ComputeOptions& options = {});
  // Recomputes everything from the inputs already uploaded (what `bench` times); nothing is read back.
  void recomputeResident();
  // Only head `head`'s projections changed: recompute that head, the output and the similarity; no read-back.
  void recomputeHeadResident(const Scene& scene, int head);
  // GL texture name of head `head`'s weights: GL_TEXTURE_2D, GL_R32F, n_k texels wide, n_q tall (row i = query i).
  // Refreshed on the GPU when stale; after computeResident with other n_q or n_k the name changes.
  // Throws InputError on the flash path (no maps): draw tiles with weightTileToTexture there.
  unsigned weightsTexture(int head) const override;
  // Whether the resident result keeps its maps; false on the flash path (ComputeOptions::maps Drop, or Auto past
  // mapsLimitBytes()), where each head's output and row statistics come from key blocks with an online softmax
  // (flash_forward.comp) and no (n_q, n_k) buffer is allocated.
  bool keepsResidentMaps() const override;

  // [SECTION] tiles (compute/tiles.h): recomputed on the GPU from Q, K and the row statistics on either path,
  // w_ij = exp(s_ij - m_i) / l_i, the CPU's weightTile semantics (pooledRange blocks; masked cells 0 and left
  // out of a mean). Within 1e-5 of the CPU's weightTile (tests/gpu/test_gpu_flash.cpp states what was seen).
  Tile weightTile(const TileRequest& request);
  // The same tile written into `texture` (GL_TEXTURE_2D, GL_R32F, made in this backend's context or one sharing
  // it, at least out_cols x out_rows texels, or cols x rows unpooled): texel (x, y) = cell (y, x), masked cells
  // 0. When `mask_texture` is not 0 (GL_R8, the same size), its texel (x, y) becomes 1 where the cell (some cell
  // of the block) may attend and 0 where every cell is masked, so that a drawing tells masked cells from weight
  // 0 (the heatmap shader's mask). Nothing is read back; a barrier is issued so the next draw that samples them,
  // or a later image store or texture update, sees the tile.
  void weightTileToTexture(const TileRequest& request, unsigned texture, unsigned mask_texture = 0);
  // Bounded work: only output rows [y0, y1) of `request` (0 <= y0 < y1 <= its out_rows, or rows unpooled), each
  // row's blocks the same pooledRange blocks as the whole request's, written at texel rows y0 .. y1 - 1; other
  // texels are left as they were. A caller fills a whole tile a band per frame (the window's overviews). The
  // GPU's counterpart of the CPU's maxPooledRows (compute/tiles.h), for any pooling.
  void weightTileRowsToTexture(const TileRequest& request, int y0, int y1, unsigned texture,
                               unsigned mask_texture = 0) override;
  // The same rows read back into `tile`, resized to (out_rows, out_cols) when its shape differs; other rows are
  // left as they were (as maxPooledRows does).
  void weightTileRows(const TileRequest& request, int y0, int y1, Tile& tile);
  // [SECTION] attention from given Q and K (a capture, a forward's layer past the maps limit: ForwardResult)
  // Makes one head resident as head 0, for the tile functions above: `head`'s q and k under `scene`'s mask
  // (ForwardResult::tileScene: causal with its sliding window, key padding, or explicit; only n_q, n_k and the
  // mask read) and soft cap. Without row statistics the flash pass finds them on the GPU and, when the pointers
  // are not null, reads them back into found_max, found_sum (n_q), for the CPU's tiles to keep. Throws InputError
  // naming the field for shapes that disagree or do not fit the device.
  void residentHead(const Scene& scene, const GivenHead& head, RowVector* found_max = nullptr,
                    RowVector* found_sum = nullptr);
  // Reads every resident matrix back into `result` (as computeInto would have produced).
  void readBack(const Scene& scene, Result& result, const ComputeOptions& options = {});
  // Blocks until the GPU has finished all submitted work (glFinish).
  void finish();
  // GPU time per stage (GL timer queries): off by default. takeStageTimes waits for the stages computed since
  // the last call and returns milliseconds per stage, in the order they first ran.
  void setStageTiming(bool on);
  std::vector<std::pair<std::string, double>> takeStageTimes();
  GpuPathCounts pathCounts() const;

 private:
  friend class GpuForward;  // the checkpoint forward runs its layers' attention on these stages
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class GpuUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A shader that does not compile or link: names the file, the line and carries the driver's log.
class ShaderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace attnscope
