// Tokenizer benchmarks on Qwen 3's real tokenizer.json (151,643 vocabulary + 26 added tokens, 151,387 merges,
// 11 MB; fetched into build/hf-peer/ by scripts/fetch-hf-tokenizers.sh, which the peer test runs): loading the
// file, and encoding 1 MB of English (the five seed texts, repeated to 1 MiB).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "attnscope/model/tokenizer.h"

namespace {

const std::string kQwen3 = std::string(ATTNSCOPE_BUILD_DIR) + "/hf-peer/qwen3";

std::string englishMiB() {
  std::string seeds;
  for (const auto& entry : std::filesystem::directory_iterator(ATTNSCOPE_SEEDS_DIR)) {
    if (entry.path().extension() != ".txt") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    seeds += s.str() + "\n";
  }
  std::string text;
  while (text.size() < (1u << 20)) text += seeds;
  text.resize(1u << 20);
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
    text.pop_back();  // whole characters
  if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
  return text;
}

bool haveQwen3(benchmark::State& state) {
  if (std::filesystem::exists(kQwen3 + "/tokenizer.json")) return true;
  state.SkipWithError("no build/hf-peer/qwen3/tokenizer.json: run scripts/fetch-hf-tokenizers.sh build/hf-peer SEEDS");
  return false;
}

void BM_TokenizerLoadQwen3(benchmark::State& state) {
  if (!haveQwen3(state)) return;
  for (auto _ : state) benchmark::DoNotOptimize(attnscope::model::Tokenizer::loadTokenizerJson(kQwen3));
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(kQwen3 + "/tokenizer.json")) / 1e6;
}
BENCHMARK(BM_TokenizerLoadQwen3)->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(3);

void BM_TokenizerEncodeEnglishMiBQwen3(benchmark::State& state) {
  if (!haveQwen3(state)) return;
  const attnscope::model::Tokenizer tokenizer = attnscope::model::Tokenizer::loadTokenizerJson(kQwen3);
  const std::string text = englishMiB();
  std::size_t tokens = 0;
  for (auto _ : state) tokens = tokenizer.encode(text).size();
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["MB_per_s"] =
      benchmark::Counter(static_cast<double>(text.size()) / 1e6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TokenizerEncodeEnglishMiBQwen3)->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(3);

}  // namespace
