// GPT-2 forward benchmarks: GPT-2 small's shape (12 layers, 12 heads, d = 768, vocab 50257, 1024 positions)
// with generated weights, the whole forward with every layer's maps kept. scripts/bench-model.sh runs it
// beside a NumPy forward of the same shape (tests/model/bench_numpy_forward.py) and prints the ratio.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "attnscope/model/gpt2.h"

using namespace attnscope;

namespace {

// Uniform weights in [-s, s] with LayerNorm gains of 1: GPT-2 small's shapes, no file involved.
const model::Gpt2Weights& gpt2Small() {
  static const model::Gpt2Weights w = [] {
    model::Gpt2Weights g;
    g.config = {.n_layer = 12, .n_head = 12, .n_embd = 768, .n_positions = 1024, .vocab_size = 50257};
    const int d = 768;
    std::srand(1);
    g.wte = Matrix::Random(g.config.vocab_size, d) * 0.1f;
    g.wpe = Matrix::Random(g.config.n_positions, d) * 0.02f;
    for (int l = 0; l < g.config.n_layer; ++l) {
      model::Gpt2Block b;
      b.ln_1_g = b.ln_2_g = RowVector::Ones(d);
      b.ln_1_b = b.ln_2_b = RowVector::Zero(d);
      b.c_attn_w = Matrix::Random(d, 3 * d) * 0.08f;
      b.c_attn_b = RowVector::Random(3 * d) * 0.02f;
      b.c_proj_w = Matrix::Random(d, d) * 0.05f;
      b.c_proj_b = RowVector::Zero(d);
      b.fc_w = Matrix::Random(d, 4 * d) * 0.05f;
      b.fc_b = RowVector::Zero(4 * d);
      b.mlp_proj_w = Matrix::Random(4 * d, d) * 0.03f;
      b.mlp_proj_b = RowVector::Zero(d);
      g.blocks.push_back(std::move(b));
    }
    g.ln_f_g = RowVector::Ones(d);
    g.ln_f_b = RowVector::Zero(d);
    return g;
  }();
  return w;
}

void BM_Gpt2SmallForward(benchmark::State& state) {
  const model::Gpt2Weights& w = gpt2Small();
  const int n = static_cast<int>(state.range(0));
  std::vector<int> ids(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = (i * 7919) % w.config.vocab_size;
  // range(1) == 0: a fresh result each run (every map's pages touched for the first time, as on a first run);
  // 1: one result reused (gpt2ForwardInto), as a window re-running text of the same length. Every map kept
  // (MapPolicy::Keep: past the maps limit Auto would keep none), as this measures.
  const model::ForwardOptions options{.keep_ln1 = false, .maps = attnscope::MapPolicy::Keep};
  model::ForwardResult kept;
  if (state.range(1) == 1) model::gpt2ForwardInto(w, ids, kept, options);  // untimed first run
  for (auto _ : state) {
    if (state.range(1) == 0) {
      const model::ForwardResult f = model::gpt2Forward(w, ids, options);
      benchmark::DoNotOptimize(f.hidden.data());
    } else {
      model::gpt2ForwardInto(w, ids, kept, options);
      benchmark::DoNotOptimize(kept.hidden.data());
    }
  }
  const double maps = 12.0 * 12 * n * n * 4, weights = static_cast<double>(model::gpt2WeightBytes(w.config));
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
