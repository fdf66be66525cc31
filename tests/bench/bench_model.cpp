// GPT-2 forward benchmarks: GPT-2 small's shape (12 layers, 12 heads, d = 768, vocab 50257, 1024 positions)
// with generated weights, the whole forward with every layer's maps kept. scripts/bench-model.sh runs it
// beside a NumPy forward of the same shape (tests/model/bench_numpy_forward.py) and prints the ratio.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "attnscope/model/model.h"
#include "random_model.h"

using namespace attnscope;

namespace {

// GPT-2 small's shapes with random weights (tests/random_model.h), no file involved.
const model::Model& gpt2Small() {
  static const model::Model m = [] {
    std::mt19937 rng(1);
    return test::randomGpt2({.layers = 12, .heads = 12, .d = 768, .vocab = 50257, .positions = 1024}, rng);
  }();
  return m;
}

void BM_Gpt2SmallForward(benchmark::State& state) {
  const model::Model& m = gpt2Small();
  const int n = static_cast<int>(state.range(0));
  std::vector<int> ids(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = (i * 7919) % m.architecture().vocab_size;
  // range(1) == 0: a fresh result each run (every map's pages touched for the first time, as on a first run);
  // 1: one result reused (modelForwardInto), as a window re-running text of the same length. Every map kept
  // (MapPolicy::Keep: past the maps limit Auto would keep none), as this measures.
  const model::ForwardOptions options{.keep_ln1 = false, .maps = attnscope::MapPolicy::Keep};
  model::ForwardResult kept;
  if (state.range(1) == 1) model::modelForwardInto(m, ids, kept, options);  // untimed first run
  for (auto _ : state) {
    if (state.range(1) == 0) {
      const model::ForwardResult f = model::modelForward(m, ids, options);
      benchmark::DoNotOptimize(f.hidden.data());
    } else {
      model::modelForwardInto(m, ids, kept, options);
      benchmark::DoNotOptimize(kept.hidden.data());
    }
  }
  const double maps = 12.0 * 12 * n * n * 4, weights = static_cast<double>(model::weightBytes(m.architecture()));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double rss = static_cast<double>(usage.ru_maxrss) * 1024;
  state.counters["weights_MiB"] = weights / (1 << 20);
  state.counters["maps_MiB"] = maps / (1 << 20);
  state.counters["peak_rss_MiB"] = rss / (1 << 20);
  state.counters["rss_over_weights_maps"] = rss / (weights + maps);
}
BENCHMARK(BM_Gpt2SmallForward)
    ->Args({128, 0})
    ->Args({1024, 0})
    ->Args({1024, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace
