// attnscope bench: times a full recompute (every head's weights and the output) of a random scene held in
// memory, and prints one JSON line.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/thread_limit.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/presets.h"
#include "backend_choice.h"
#include "cli/cli.h"

namespace attnscope::cli {

namespace {

// Multiply-adds counted as 2 flops: projections, scores, weighted sum, output projection.
double attentionFlops(const Scene& s) {
  const double n_q = s.nQ(), n_k = s.nK(), d = s.d_model;
  double flops = 0;
  for (int i = 0; i < s.numHeads(); ++i) {
    const double d_k = s.heads[static_cast<std::size_t>(i)].dK(), d_v = s.dV(i);
    flops += 2 * n_q * d * d_k + 2 * n_k * d * d_k + 2 * n_k * d * d_v;  // Q, K, V
    flops += 2 * n_q * n_k * d_k + 2 * n_q * n_k * d_v;                  // scores, weights V
  }
  if (s.w_o) flops += 2 * n_q * s.concatWidth() * d;
  return flops;
}

std::size_t peakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int runBench(Args& args) {
  RandomSceneSpec spec;
  spec.n = static_cast<int>(args.takeInt("--n", 512, 1, 1 << 20));
  spec.heads = static_cast<int>(args.takeInt("--heads", 8, 1, 64));
  spec.d_model = static_cast<int>(args.takeInt("--d-model", 512, 1, 1 << 16));
  spec.d_k = static_cast<int>(args.takeInt("--d-k", 0, 0, 1 << 16));
  spec.d_v = static_cast<int>(args.takeInt("--d-v", 0, 0, 1 << 16));
  spec.causal = args.takeChoice("--mask", {"none", "causal"}, "none") == "causal";
  spec.seed = static_cast<std::uint64_t>(args.takeInt("--seed", 0, 0, 1L << 62));
  const std::string backend_name = args.takeChoice("--backend", {"cpu", "gpu", "auto"}, "cpu");
  // 0: every hardware thread. Checked against the cap before a thread starts: libgomp's own failure is a crash.
  const long threads = args.takeInt("--threads", 0, 0, 1L << 30);
  if (threads > 0) checkThreadCount("--threads", threads);
  const int repeat = static_cast<int>(args.takeInt("--repeat", 7, 1, 100000));
  const bool analysis = args.takeFlag("--analysis");
  const bool stages = args.takeFlag("--stages");
  const std::string maps = args.takeChoice("--maps", {"auto", "keep", "drop"}, "auto");
  args.positionals(0);

  std::vector<std::string> warnings;
  std::unique_ptr<BenchTarget> target = makeBenchTarget(backend_name, static_cast<int>(threads), warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "attnscope: warning: %s\n", w.c_str());
  ComputeOptions options;
  options.keep_scores = false;  // weights and output, as a framework's forward pass keeps them
  options.analysis = analysis;
  options.maps = maps == "keep" ? MapPolicy::Keep : maps == "drop" ? MapPolicy::Drop : MapPolicy::Auto;
  Limits limits;  // either backend as --maps says: without maps the GPU runs its flash path (output, m and l)
  limits.with_maps = keepsMaps(randomSceneShape(spec), options);
  // The estimate before anything is made: a scene past the budget is refused in one line, not half-allocated.
  const RandomSceneEstimate estimate = estimateRandomScene(spec, limits.with_maps);
  checkRandomSceneBudget(spec, limits.with_maps);
  std::fprintf(stderr, "attnscope: bench: estimated %s (scene %s, result %s, maps %s)\n",
               byteString(estimate.total()).c_str(), byteString(estimate.scene_bytes).c_str(),
               byteString(estimate.result_bytes).c_str(), limits.with_maps ? "kept" : "on demand");
  const Scene scene = makeRandomScene(spec);
  validateScene(scene, limits);

  target->prepare(scene, options);
  target->run();  // warm-up
  if (stages && !target->timeStages())
    throw InputError("--stages", "the GPU backend (GL timer queries)", "--backend " + target->name());
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    target->run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  nlohmann::ordered_json out;
  out["backend"] = target->name();
  out["device"] = target->device();
  out["n"] = spec.n;
  out["heads"] = spec.heads;
  out["d_model"] = spec.d_model;
  out["d_k"] = scene.heads[0].dK();
  out["d_v"] = scene.dV(0);
  out["mask"] = spec.causal ? "causal" : "none";
  out["analysis"] = analysis;
  out["repeat"] = repeat;
  out["median_ms"] = median;
  out["min_ms"] = sorted.front();
  out["gflops"] = attentionFlops(scene) / (median * 1e-3) / 1e9;
  for (const auto& [key, value] : target->extraFields()) out[key] = value;
  if (stages)
    for (const auto& [stage, stage_ms] : target->stageMedians()) out["stage_median_ms"][stage] = stage_ms;
  // What a framework's flash forward keeps is the output and the row statistics (m, l); the maps are
  // materialised only when asked (--maps keep) or when they fit within ATTNSCOPE_MAPS_LIMIT (auto).
  out["maps_materialised"] = limits.with_maps;
  out["estimated_bytes"] = estimate.total();
  out["weights_bytes"] = static_cast<double>(spec.heads) * spec.n * spec.n * sizeof(float);
  out["peak_rss_bytes"] = peakRssBytes();
  // The device's name comes from the driver: invalid UTF-8 is written as U+FFFD.
  std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace attnscope::cli
