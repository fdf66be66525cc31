// Opening a capture (attnscope/arrays/capture.h) and drawing one head's first overview from it: a synthetic
// capture of one layer of 32 query heads in 8 KV groups, head_dim 128 (a Llama-3-70B layer's shape has 64 of
// them), causal. With the rows' log-sum-exp stored (what attnscope_capture.py's lse=True writes) opening is
// O(n d): reading and converting q and k; without it attnscope works each row's statistics out itself, O(n^2 d)
// a head. ru_maxrss is reported as peak_rss_mib (the process's peak so far: run one size per process to read it
// for that size alone, e.g. --benchmark_filter=CaptureOpenStoredLse/131072).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "attnscope/arrays/capture.h"

namespace {

constexpr int kHeads = 32, kKvHeads = 8, kHeadDim = 128;

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

// A capture folder of one layer at n tokens (random q, k of unit-variance entries; lse, when asked, the exact
// log-sum-exp of a causal row of scores whose every score is 0: ln(i + 1), enough for the reader, which only
// checks it is finite). Written once per (n, lse) and reused.
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
  std::string tokens;
  for (int i = 0; i < n; ++i) tokens += std::string(i ? "," : "") + "\"t" + std::to_string(i) + "\"";
  std::ofstream(dir + "/capture.json")
      << "{\"format\":\"attnscope-capture\",\"version\":1,\"model\":\"synthetic\",\"n_layer\":1,\"n_head\":" << kHeads
      << ",\"n_kv_head\":" << kKvHeads << ",\"head_dim\":" << kHeadDim << ",\"n_tokens\":" << n
      << ",\"scale\":" << 1.0 / std::sqrt(static_cast<double>(kHeadDim)) << ",\"causal\":true,\"tokens\":[" << tokens
      << "],\"files\":[\"layer_000.safetensors\"]}";
  return dir;
}

void open(benchmark::State& state, bool lse) {
  const int n = static_cast<int>(state.range(0));
  const std::string dir = syntheticCapture(n, lse);
  for (auto _ : state) {
    const attnscope::arrays::AttentionTensor t = attnscope::arrays::readCapture(dir, std::size_t{20} << 30);
    benchmark::DoNotOptimize(t.forward.stats.data());
  }
  state.counters["peak_rss_mib"] = peakRssMib();
}

void BM_CaptureOpenStoredLse(benchmark::State& state) { open(state, true); }
void BM_CaptureOpenRowStatistics(benchmark::State& state) { open(state, false); }

// Opened (stored lse), then head 1's whole-map overview, max-pooled to 1024 x 1024: what the window's tile worker
// computes first for a run's full-size map (RunTiles through ForwardResult::tile), O(n^2 d).
void BM_CaptureFirstOverview(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const attnscope::arrays::AttentionTensor t =
      attnscope::arrays::readCapture(syntheticCapture(n, true), std::size_t{20} << 30);
  const int side = std::min(n, 1024);
  for (auto _ : state) {
    const attnscope::Tile tile =
        t.forward.tile(0, {.head = 0, .pooling = attnscope::Pooling::Max, .out_rows = side, .out_cols = side});
    benchmark::DoNotOptimize(tile.values.data());
  }
  state.counters["peak_rss_mib"] = peakRssMib();
}

}  // namespace

BENCHMARK(BM_CaptureOpenStoredLse)->Arg(4096)->Arg(32768)->Arg(131072)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CaptureOpenRowStatistics)->Arg(4096)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CaptureFirstOverview)->Arg(4096)->Arg(32768)->Arg(131072)->Unit(benchmark::kMillisecond)->Iterations(1);
