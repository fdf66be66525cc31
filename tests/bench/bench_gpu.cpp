// GPU backend benchmarks beside the CPU engine over the issue's shapes (n, heads, d_k), d_model = 512: the
// resident recompute of every head's weights and the output (inputs already uploaded, finished with glFinish),
// the read-back on its own, and the same recompute on the CPU. Skipped with the reason where there is no GL 4.3.
#include <benchmark/benchmark.h>

#include <memory>
#include <thread>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/gpu_backend.h"
#include "attnscope/scene/presets.h"

using namespace attnscope;

namespace {

constexpr int kDModel = 512;

Scene benchScene(const benchmark::State& state) {
  return makeRandomScene({.n = static_cast<int>(state.range(0)),
                          .heads = static_cast<int>(state.range(1)),
                          .d_model = kDModel,
                          .d_k = static_cast<int>(state.range(2)),
                          .d_v = 0,
                          .causal = false,
                          .with_w_o = true,
                          .seed = 1});
}

GpuBackend* sharedGpu(benchmark::State& state) {
  static std::string unavailable;
  static std::unique_ptr<GpuBackend> gpu = [] {
    try {
      return std::make_unique<GpuBackend>();
    } catch (const GpuUnavailable& e) {
      unavailable = e.what();
      return std::unique_ptr<GpuBackend>();
    }
  }();
  if (!gpu) state.SkipWithError(("no OpenGL 4.3 context: " + unavailable).c_str());
  return gpu.get();
}

// Multiply-adds as 2 flops: Q, K, V, scores, weights V, output projection.
void countFlops(benchmark::State& state, const Scene& s) {
  const double n = s.nQ(), d = s.d_model, h = s.numHeads(), d_k = s.heads[0].dK(), d_v = s.dV(0);
  const double flops = h * (2 * n * d * (2 * d_k + d_v) + 2 * n * n * (d_k + d_v)) + 2 * n * h * d_v * d;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

const ComputeOptions kAttentionOnly{.keep_scores = false, .analysis = false};

}  // namespace

static void BM_GpuResidentRecompute(benchmark::State& state) {
  GpuBackend* gpu = sharedGpu(state);
  if (!gpu) return;
  const Scene scene = benchScene(state);
  gpu->computeResident(scene, kAttentionOnly);
  gpu->finish();
  for (auto _ : state) {
    gpu->recomputeResident();
    gpu->finish();
  }
  countFlops(state, scene);
  state.SetLabel(gpu->device());
}

static void BM_GpuReadBack(benchmark::State& state) {
  GpuBackend* gpu = sharedGpu(state);
  if (!gpu) return;
  const Scene scene = benchScene(state);
  gpu->computeResident(scene, kAttentionOnly);
  Result result;
  for (auto _ : state) gpu->readBack(scene, result, kAttentionOnly);
  state.counters["weights_MiB"] = static_cast<double>(scene.numHeads()) * scene.nQ() * scene.nK() * 4 / (1 << 20);
}

static void BM_CpuBesideGpu(benchmark::State& state) {
  const Scene scene = benchScene(state);
  CpuBackend cpu(static_cast<int>(std::thread::hardware_concurrency()));
  Result result;
  for (auto _ : state) {
    cpu.computeInto(scene, result, kAttentionOnly);
    benchmark::DoNotOptimize(result.output.data());
  }
  countFlops(state, scene);
  state.SetLabel(cpu.device());
}

static void issueShapes(benchmark::internal::Benchmark* b) {  // (n, heads, d_k)
  b->Args({512, 8, 64})->Args({2048, 16, 64})->Args({4096, 32, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_GpuResidentRecompute)->Apply(issueShapes);
BENCHMARK(BM_GpuReadBack)->Apply(issueShapes);
BENCHMARK(BM_CpuBesideGpu)->Apply(issueShapes);
