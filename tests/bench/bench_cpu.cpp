// CPU engine benchmarks over the shapes (n, heads, d_model): a full recompute of every head's weights
// and the output, as `attnscope bench` times it. Counters: GFLOP/s and the bytes of weights held.
#include <benchmark/benchmark.h>

#include <thread>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/scene/presets.h"

using namespace attnscope;

static void BM_CpuFullRecompute(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), heads = static_cast<int>(state.range(1)),
            d_model = static_cast<int>(state.range(2));
  const Scene scene = makeRandomScene({.n = n, .heads = heads, .d_model = d_model, .seed = 1});
  CpuBackend backend(static_cast<int>(std::thread::hardware_concurrency()));
  ComputeOptions options;
  options.keep_scores = false;
  options.analysis = false;
  Result result;
  for (auto _ : state) {
    backend.computeInto(scene, result, options);
    benchmark::DoNotOptimize(result.output.data());
  }
  const double d_k = static_cast<double>(d_model) / heads;
  const double flops = 8.0 * n * d_model * d_model + 4.0 * heads * double(n) * n * d_k;  // Q,K,V,O + QK^T, WV
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weights_MiB"] = static_cast<double>(heads) * n * n * 4 / (1 << 20);
}
BENCHMARK(BM_CpuFullRecompute)
    ->Args({128, 8, 512})
    ->Args({512, 8, 512})
    ->Args({1024, 16, 1024})
    ->Args({2048, 16, 1024})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

static void BM_CpuRecomputeOneHead(benchmark::State& state) {
  // A live edit of one head's projections (the window's common case).
  const int n = static_cast<int>(state.range(0));
  Scene scene = makeRandomScene({.n = n, .heads = 8, .d_model = 512, .seed = 1});
  CpuBackend backend(static_cast<int>(std::thread::hardware_concurrency()));
  Result result = backend.compute(scene);
  for (auto _ : state) {
    scene.heads[3].w_q(0, 0) += 1e-3f;
    backend.recomputeHead(scene, 3, result);
    benchmark::DoNotOptimize(result.output.data());
  }
}
BENCHMARK(BM_CpuRecomputeOneHead)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
