// Backend choice for the command line. The GPU backend is linked when engine/gpu is built.
#include "backend_choice.h"

#include "attnscope/cpu_backend.h"
#include "attnscope/error.h"

namespace attnscope::cli {

namespace {

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

 private:
  CpuBackend backend_;
  const Scene* scene_ = nullptr;
  ComputeOptions options_;
  Result result_;
};

}  // namespace

std::unique_ptr<Backend> makeBackend(const std::string& name, int threads, std::vector<std::string>& warnings) {
  if (name == "gpu") throw InputError("--backend", "cpu (the GPU backend is not built yet)", "gpu");
  if (name == "auto") warnings.push_back("the GPU backend is not built yet; using the CPU");
  return std::make_unique<CpuBackend>(threads);
}

std::unique_ptr<BenchTarget> makeBenchTarget(const std::string& name, int threads, std::vector<std::string>& warnings) {
  if (name == "gpu") throw InputError("--backend", "cpu (the GPU backend is not built yet)", "gpu");
  if (name == "auto") warnings.push_back("the GPU backend is not built yet; using the CPU");
  return std::make_unique<CpuBenchTarget>(threads);
}

}  // namespace attnscope::cli
