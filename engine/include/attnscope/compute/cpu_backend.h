// The reference backend: Eigen on the CPU, threaded over heads with OpenMP.
#pragma once

#include <string>
#include <vector>

#include "attnscope/compute/backend.h"

namespace attnscope {

// Buffers the projections reuse from one compute to the next (a live edit or a benchmark loop then neither
// allocates nor page-faults 2 x d_model x 3 sum(d_k) floats each time).
struct ProjectionWorkspace {
  Matrix stacked_weights;  // (d_model, sum of the stacked widths)
  Matrix projected;        // (n, sum of the stacked widths)
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads = 0);  // 0 = all hardware threads
  std::string name() const override { return "cpu"; }
  std::string device() const override;
  void computeInto(const Scene& scene, Result& result, const ComputeOptions& options = {}) override;
  void recomputeHead(const Scene& scene, int head, Result& result) override;
  int threads() const { return threads_; }

 private:
  int threads_;
  ProjectionWorkspace workspace_;
};

// The steps after the heads, shared by every backend's CPU-side finish: concat, output, similarity, stats and
// the fully-masked-row warnings. Reads result.heads[*].weights and .output.
// changed_head >= 0: only that head's weights changed since the last finish, so only its similarity row and
// column and its statistics are recomputed (when the result holds a full analysis to update).
void finishResult(const Scene& scene, Result& result, bool analysis = true, int changed_head = -1);
// Throws InputError naming the head, the matrix, the row (and its token) and why, when any of q, k, v, weights,
// a head's output, the concat or the output holds NaN or inf: finite inputs whose products overflow float32.
// finishResult calls it before any analysis, so no statistic, view or exporter sees such a Result.
void checkResultFinite(const Scene& scene, const Result& result);
// The warnings for query rows whose keys are all masked (the first few named, the rest counted); used by
// finishResult and by the GPU backend's read-back.
std::vector<std::string> fullyMaskedRowWarnings(const Scene& scene);

}  // namespace attnscope
