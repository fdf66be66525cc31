// Choosing a backend by name for the command line (cpu, gpu, auto), and what bench times on each.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/compute/backend.h"
#include "attnscope/gpu_forward.h"

namespace attnscope::cli {

// cpu: the Eigen reference. gpu: the OpenGL compute backend (an error when no GL 4.3 context can be made).
// auto: the GPU when it starts, else the CPU with a warning appended to `warnings`.
// The GPU's every result is checked against the CPU on sampled query rows (compute/sampled_check.h; the CPU's
// rows computed on a worker thread while the GPU computes). A result that fails is recomputed on the CPU, with a
// warning in its `warnings` naming the head, row and error; under auto every later result is the CPU's too.
std::unique_ptr<Backend> makeBackend(const std::string& name, int threads, std::vector<std::string>& warnings);
// The warnings of the failed checks so far of a backend made by makeBackend (empty for the CPU): for callers
// that keep no Result of their own (a model's layers).
std::vector<std::string> gpuCheckWarnings(const Backend& backend);

// The checkpoint forward by name: null for cpu (the forward's own loop), else the whole forward on the GPU over
// `weights` (kept alive by the caller), checked as it runs (GpuForward::warnings); auto: null and a warning where no
// GPU context starts, gpu: a usage error there.
std::unique_ptr<GpuForward> makeGpuForward(const std::string& name, const model::Weights& weights,
                                           std::vector<std::string>& warnings);

// What `bench` times: prepare() does the one-off work (upload), run() one full recompute, finished.
class BenchTarget {
 public:
  virtual ~BenchTarget() = default;
  virtual std::string name() const = 0;
  virtual std::string device() const = 0;
  virtual void prepare(const Scene& scene, const ComputeOptions& options) = 0;
  virtual void run() = 0;
  // Extra JSON fields (the GPU reports its read-back time here).
  virtual std::map<std::string, double> extraFields() { return {}; }
  // Time each stage of every run() (GL timer queries); false where the target cannot.
  virtual bool timeStages() { return false; }
  // Median milliseconds per stage over the runs since timeStages(), in the order the stages run.
  virtual std::vector<std::pair<std::string, double>> stageMedians() { return {}; }
};
std::unique_ptr<BenchTarget> makeBenchTarget(const std::string& name, int threads, std::vector<std::string>& warnings);

}  // namespace attnscope::cli
