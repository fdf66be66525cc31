// Opening a capture (attnscope/arrays/capture.h), reading a layer and drawing one head's first overview from it: a
// synthetic capture of 32 layers of 32 query heads in 8 KV groups, head_dim 128 (Llama-3-8B's attention shape; a
// 70B layer has 64 heads), causal, every layer naming the one layer file written (the disk holds one layer; the
// reader reads each layer's file as its own). Opening reads capture.json and the layer headers only; a layer is read
// (and its q and k converted) when first asked, O(n d); with the rows' log-sum-exp stored (attnscope_capture.py's
// lse=True) that is all, without it a head's row statistics cost one pass over the keys, O(n^2 d), on its first
// use. ru_maxrss is reported as peak_rss_mib (the process's peak so far: run one size per process to read it for
// that size alone, e.g. --benchmark_filter=CaptureReadLayer/131072).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attnscope/arrays/capture.h"

namespace {

constexpr int kLayers = 32, kHeads = 32, kKvHeads = 8, kHeadDim = 128;

double peakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Writes one tensor's header entry and returns its byte count.
std::size_t entry(std::string& header, const char* name, const std::vector<std::int64_t>& shape, std::size_t begin) {
  std::size_t count = 4;
  std::string dims;
  for (const std::int64_t d : shape) count *= static_cast<std::size_t>(d), dims += (dims.empty() ? "" : ",") + std::to_string(d);
  header += std::string(header.size() > 1 ? "," : "") + "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + dims +
            "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(begin + count) + "]}";
  return count;
}

// A capture folder of kLayers layers at n tokens, each naming one layer file (random q, k of unit-variance entries;
// lse, when asked, the exact log-sum-exp of a causal row of scores whose every score is 0: ln(i + 1), enough for
// the reader, which only checks it is finite). Written once per (n, lse) and reused.
std::string syntheticCapture(int n, bool lse) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/attnscope_bench_capture_" +
                          std::to_string(n) + (lse ? "_lse" : "");
  if (std::filesystem::exists(dir + "/capture.json")) return dir;
  std::filesystem::create_directories(dir);
  std::string header = "{";
  std::size_t at = 0;
  at += entry(header, "q", {kHeads, n, kHeadDim}, at);
  at += entry(header, "k", {kKvHeads, n, kHeadDim}, at);
  if (lse) at += entry(header, "lse", {kHeads, n}, at);
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::ofstream out(dir + "/layer_000.safetensors", std::ios::binary);
  const std::uint64_t length = header.size();
  out.write(reinterpret_cast<const char*>(&length), 8);
  out << header;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> row(static_cast<std::size_t>(kHeadDim));
  for (int r = 0; r < (kHeads + kKvHeads) * n; ++r) {
    for (float& x : row) x = normal(rng);
    out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * 4));
  }
  if (lse)
    for (int h = 0; h < kHeads; ++h)
      for (int i = 0; i < n; ++i) {
        const float v = std::log(static_cast<float>(i + 1));
        out.write(reinterpret_cast<const char*>(&v), 4);
      }
  out.close();
  std::string tokens, files;
  for (int i = 0; i < n; ++i) tokens += std::string(i ? "," : "") + "\"t" + std::to_string(i) + "\"";
  for (int l = 0; l < kLayers; ++l) files += std::string(l ? "," : "") + "\"layer_000.safetensors\"";
  std::ofstream(dir + "/capture.json")
      << "{\"format\":\"attnscope-capture\",\"version\":1,\"model\":\"synthetic\",\"n_layer\":" << kLayers
      << ",\"n_head\":" << kHeads
      << ",\"n_kv_head\":" << kKvHeads << ",\"head_dim\":" << kHeadDim << ",\"n_tokens\":" << n
      << ",\"scale\":" << 1.0 / std::sqrt(static_cast<double>(kHeadDim)) << ",\"causal\":true,\"tokens\":[" << tokens
      << "],\"files\":[" << files << "]}";
  return dir;
}

constexpr std::size_t kBudget = std::size_t{20} << 30;

// Opening alone: capture.json and the 32 layer headers.
void BM_CaptureOpen(benchmark::State& state) {
  const std::string dir = syntheticCapture(static_cast<int>(state.range(0)), true);
  for (auto _ : state) {
    const attnscope::arrays::AttentionTensor t = attnscope::arrays::readCapture(dir, kBudget);
    benchmark::DoNotOptimize(t.tokens.data());
  }
  state.counters["peak_rss_mib"] = peakRssMib();
}

// Opened, then layer 0 read whole (32 heads' q, k converted; m, l from the stored lse): the worker's first step.
void BM_CaptureReadLayer(benchmark::State& state) {
  const std::string dir = syntheticCapture(static_cast<int>(state.range(0)), true);
  for (auto _ : state) {
    const attnscope::arrays::AttentionTensor t = attnscope::arrays::readCapture(dir, kBudget);
    benchmark::DoNotOptimize(t.forward.layerStats(0).get());
  }
  state.counters["peak_rss_mib"] = peakRssMib();
}

// Without the stored lse: layer 0 read, then head 0's row statistics worked out (one pass over the keys).
void BM_CaptureRowStatistics(benchmark::State& state) {
  const std::string dir = syntheticCapture(static_cast<int>(state.range(0)), false);
  for (auto _ : state) {
    const attnscope::arrays::AttentionTensor t = attnscope::arrays::readCapture(dir, kBudget);
    benchmark::DoNotOptimize(t.forward.layerStats(0, 0).get());
  }
  state.counters["peak_rss_mib"] = peakRssMib();
}

// Opened (stored lse) and layer 0 read, then head 0's whole-map overview, max-pooled to 1024 x 1024: what the
// window's tile worker computes first for a run's full-size map (RunTiles through ForwardResult::tile), O(n^2 d).
void BM_CaptureFirstOverview(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const attnscope::arrays::AttentionTensor t = attnscope::arrays::readCapture(syntheticCapture(n, true), kBudget);
  const std::shared_ptr<const attnscope::Result> layer = t.forward.layerStats(0);  // read before the clock
  const int side = std::min(n, 1024);
  for (auto _ : state) {
    const attnscope::Tile tile =
        t.forward.tile(0, {.head = 0, .pooling = attnscope::Pooling::Max, .out_rows = side, .out_cols = side});
    benchmark::DoNotOptimize(tile.values.data());
  }
  state.counters["peak_rss_mib"] = peakRssMib();
}

}  // namespace

BENCHMARK(BM_CaptureOpen)->Arg(4096)->Arg(32768)->Arg(131072)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CaptureReadLayer)->Arg(4096)->Arg(32768)->Arg(131072)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CaptureRowStatistics)->Arg(4096)->Arg(32768)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CaptureFirstOverview)->Arg(4096)->Arg(32768)->Arg(131072)->Unit(benchmark::kMillisecond)->Iterations(1);
