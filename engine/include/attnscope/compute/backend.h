// Backend: turns a Scene into a Result. The CPU backend is the reference the GPU backend is tested against.
#pragma once

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>

#include "attnscope/compute/result.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// Whether a result keeps every head's (n_q, n_k) weight map. Keep: always (today's behaviour, what the window
// and the full JSON need). Auto: while the maps fit within mapsLimitBytes() (compute/tiles.h), else only Q, K,
// V, the row statistics and the outputs, O(n d) memory, with weights computed as tiles on demand. Drop: never.
enum class MapPolicy { Keep, Auto, Drop };

struct ComputeOptions {
  bool keep_scores = true;  // false: scores are not kept (the weights overwrite them), halving the n^2 memory
  bool analysis = true;     // false: skip head similarity and statistics (O(h^2 n^2); benchmarks time attention alone)
  MapPolicy maps = MapPolicy::Keep;
  // Not null: once it reads true, the CPU backend stops at its next block of query rows and throws
  // ComputeCancelled, the result left partial (a window's recompute of a long scene the user has since edited
  // again: its minutes of work would only delay the new one). The GPU backend does not look at it.
  const std::atomic<bool>* cancel = nullptr;
};

// Thrown by computeInto when ComputeOptions::cancel turned true.
class ComputeCancelled : public std::runtime_error {
 public:
  ComputeCancelled() : std::runtime_error("compute cancelled") {}
};

struct TileRequest;  // compute/tiles.h

// A result kept on the GPU, drawn by the window without a read-back (GpuBackend, when its result is resident):
// texture names are GL names (GLuint) in the backend's context or one sharing it, as `unsigned` so that this
// header needs no GL. A Backend offers it through residentMaps(); what each does is said at GpuBackend.
class ResidentMaps {
 public:
  virtual bool keepsResidentMaps() const = 0;  // false on the flash path: no (n_q, n_k) maps, draw tiles
  virtual unsigned weightsTexture(int head) const = 0;  // R32F, n_k wide, n_q tall; only while maps are kept
  // Output rows [y0, y1) of `request` written into `texture` (R32F) and, when not 0, `mask_texture` (R8).
  virtual void weightTileRowsToTexture(const TileRequest& request, int y0, int y1, unsigned texture,
                                       unsigned mask_texture) = 0;

 protected:
  ~ResidentMaps() = default;  // never owned through this interface
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;    // "cpu", "gpu"
  virtual std::string device() const = 0;  // what runs it: the CPU model, or the GL renderer string
  // Validates the scene, then computes everything into `result`, reusing its buffers when the shapes match
  // (a live edit or a benchmark loop then allocates nothing).
  virtual void computeInto(const Scene& scene, Result& result, const ComputeOptions& options = {}) = 0;
  Result compute(const Scene& scene, const ComputeOptions& options = {}) {
    Result result;
    computeInto(scene, result, options);
    return result;
  }
  // After only head `head`'s projections changed: recompute that head, then concat, output, similarity and
  // stats. `result` must come from compute() on a scene of the same shape.
  virtual void recomputeHead(const Scene& scene, int head, Result& result) = 0;
  // Its result's maps on the GPU, for a window to draw from (GpuBackend); null where the result is all in
  // Result (the CPU backend, and the command line's checked GPU, whose results are read back).
  virtual ResidentMaps* residentMaps() { return nullptr; }
};

}  // namespace attnscope
