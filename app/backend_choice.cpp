// Backend choice for the command line: the CPU reference, the OpenGL compute backend, or the GPU with a
// fallback to the CPU. What `bench` times on each.
#include "backend_choice.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/sampled_check.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/gpu_backend.h"

namespace attnscope::cli {

namespace {

// Median ms of the run-time check of `result` (makeBackend's, after each GPU compute): the CPU's sampled rows and
// the comparison, on one thread of work after the compute (the command line computes the CPU's rows while the
// GPU computes, so this is its most). Timed on both targets, so that one run compares it with a CPU compute.
double checkMs(const Scene& scene, const ComputeOptions& options, const Result& result) {
  std::vector<double> check;
  for (int r = 0; r < 3; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int> rows = sampledQueryRows(scene.nQ(), static_cast<std::uint64_t>(r + 1));
    const bool with_maps = keepsMaps(scene, options);
    (void)compareSampledRows(sampledRowsOf(result, rows),
                             referenceRows(scene, rows, with_maps, with_maps && options.keep_scores));
    check.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(check.begin(), check.end());
  return check[1];
}

class CpuBenchTarget final : public BenchTarget {
 public:
  explicit CpuBenchTarget(int threads) : backend_(threads) {}
  std::string name() const override { return backend_.name(); }
  std::string device() const override { return backend_.device(); }
  void prepare(const Scene& scene, const ComputeOptions& options) override {
    scene_ = &scene;
    options_ = options;
  }
  void run() override { backend_.computeInto(*scene_, result_, options_); }
  std::map<std::string, double> extraFields() override { return {{"check_ms", checkMs(*scene_, options_, result_)}}; }

 private:
  CpuBackend backend_;
  const Scene* scene_ = nullptr;
  ComputeOptions options_;
  Result result_;
};

// Times the resident recompute: the scene is uploaded once in prepare(); run() recomputes every head and the
// output on the GPU and waits for it (glFinish). The read-back (readback_ms) and a one-head edit (one_head_edit_ms)
// are timed on their own.
class GpuBenchTarget final : public BenchTarget {
 public:
  std::string name() const override { return backend_.name(); }
  std::string device() const override { return backend_.device(); }
  void prepare(const Scene& scene, const ComputeOptions& options) override {
    scene_ = &scene;
    options_ = options;
    backend_.computeResident(scene, options);
    backend_.finish();
  }
  void run() override {
    backend_.recomputeResident();
    backend_.finish();
    if (timing_)
      for (const auto& [stage, ms] : backend_.takeStageTimes()) {
        auto at = std::find_if(stages_.begin(), stages_.end(), [&](const auto& s) { return s.first == stage; });
        if (at == stages_.end()) at = stages_.insert(stages_.end(), {stage, {}});
        at->second.push_back(ms);
      }
  }
  bool timeStages() override {
    backend_.setStageTiming(true);
    timing_ = true;
    return true;
  }
  std::vector<std::pair<std::string, double>> stageMedians() override {
    std::vector<std::pair<std::string, double>> medians;
    for (auto& [stage, ms] : stages_) {
      std::sort(ms.begin(), ms.end());
      medians.emplace_back(stage, ms[ms.size() / 2]);
    }
    return medians;
  }
  std::map<std::string, double> extraFields() override {
    std::vector<double> ms;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      backend_.readBack(*scene_, result_, options_);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    // The live loop: one head's W changed (uploaded alone), that head, the output and the similarity redone.
    std::vector<double> edit;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      backend_.recomputeHeadResident(*scene_, 0);
      backend_.finish();
      edit.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(edit.begin(), edit.end());
    return {{"readback_ms", ms[1]}, {"one_head_edit_ms", edit[2]}, {"check_ms", checkMs(*scene_, options_, result_)}};
  }

 private:
  GpuBackend backend_;
  const Scene* scene_ = nullptr;
  ComputeOptions options_;
  Result result_;
  bool timing_ = false;
  std::vector<std::pair<std::string, std::vector<double>>> stages_;  // ms of each run, per stage
};

// The GPU, checked after each compute against the CPU on sampled query rows. `sticky` (auto): after a failed
// check the CPU computes everything; else (gpu) the GPU goes on, each failed result recomputed on the CPU.
class CheckedGpuBackend final : public Backend {
 public:
  CheckedGpuBackend(bool sticky, int threads) : sticky_(sticky), cpu_(threads) {}
  std::string name() const override { return last_on_cpu_ ? cpu_.name() : gpu_.name(); }
  std::string device() const override { return last_on_cpu_ ? cpu_.device() : gpu_.device(); }
  void computeInto(const Scene& scene, Result& result, const ComputeOptions& options) override {
    if (switched_) return cpu_.computeInto(scene, result, options);
    last_on_cpu_ = false;
    const std::vector<int> rows = sampledQueryRows(scene.nQ(), ++computes_);
    const bool with_maps = keepsMaps(scene, options);
    // The CPU's rows need nothing from the GPU: they are computed meanwhile (std::async joins on unwinding).
    std::future<RowReference> reference = std::async(std::launch::async, [&] {
      return referenceRows(scene, rows, with_maps, with_maps && options.keep_scores);
    });
    gpu_.computeInto(scene, result, options);
    recheck(scene, result, options, compareSampledRows(sampledRowsOf(result, rows), reference.get()));
  }
  void recomputeHead(const Scene& scene, int head, Result& result) override {
    if (switched_) return cpu_.recomputeHead(scene, head, result);
    last_on_cpu_ = false;
    gpu_.recomputeHead(scene, head, result);
    recheck(scene, result, {}, checkSampledRows(scene, result, ++computes_));
  }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  void recheck(const Scene& scene, Result& result, const ComputeOptions& options,
               const std::optional<CheckMismatch>& mismatch) {
    if (!mismatch) return;
    std::string warning = "the GPU's result failed its check against the CPU (" + mismatch->text() +
                          "); the CPU recomputed it";
    if (sticky_) warning += ", and computes the rest of this run (--backend auto)";
    failures_.push_back(warning);
    result = Result{};
    cpu_.computeInto(scene, result, options);
    result.warnings.push_back(warning);
    last_on_cpu_ = true;
    switched_ = sticky_;
  }

  bool sticky_;
  GpuBackend gpu_;
  CpuBackend cpu_;
  bool switched_ = false, last_on_cpu_ = false;
  std::uint64_t computes_ = 0;  // the sampled rows' seed: each compute checks other rows
  std::vector<std::string> failures_;
};

// `make` builds the GPU thing; "gpu" turns a missing GPU into a usage error, "auto" into the CPU and a warning.
template <typename Gpu, typename Cpu>
auto choose(const std::string& name, std::vector<std::string>& warnings, Gpu make_gpu, Cpu make_cpu)
    -> decltype(make_cpu()) {
  if (name == "cpu") return make_cpu();
  try {
    return make_gpu();
  } catch (const GpuUnavailable& e) {
    if (name == "gpu") throw InputError("--backend gpu", e.what());
    warnings.push_back(std::string("the GPU backend is unavailable (") + e.what() + "); using the CPU");
    return make_cpu();
  }
}

}  // namespace

std::unique_ptr<Backend> makeBackend(const std::string& name, int threads, std::vector<std::string>& warnings) {
  return choose(
      name, warnings,
      [&name, threads]() -> std::unique_ptr<Backend> { return std::make_unique<CheckedGpuBackend>(name == "auto", threads); },
      [threads]() -> std::unique_ptr<Backend> { return std::make_unique<CpuBackend>(threads); });
}

std::unique_ptr<GpuForward> makeGpuForward(const std::string& name, const model::Weights& weights,
                                           std::vector<std::string>& warnings) {
  return choose(
      name, warnings, [&weights]() { return std::make_unique<GpuForward>(weights); },
      []() { return std::unique_ptr<GpuForward>(); });
}

std::vector<std::string> gpuCheckWarnings(const Backend& backend) {
  const auto* checked = dynamic_cast<const CheckedGpuBackend*>(&backend);
  return checked ? checked->failures() : std::vector<std::string>{};
}

std::unique_ptr<BenchTarget> makeBenchTarget(const std::string& name, int threads, std::vector<std::string>& warnings) {
  return choose(
      name, warnings, []() -> std::unique_ptr<BenchTarget> { return std::make_unique<GpuBenchTarget>(); },
      [threads]() -> std::unique_ptr<BenchTarget> { return std::make_unique<CpuBenchTarget>(threads); });
}

}  // namespace attnscope::cli
