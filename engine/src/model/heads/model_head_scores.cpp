// Head-type scores over a whole forward, layer by layer: the tokens compared by id, the kept maps read in place
// or each layer's rows recomputed in blocks from its stats (analysis/analysis_head_types.cpp); and the
// repeated-random-tokens text that makes induction heads show.
#include <algorithm>
#include <random>
#include <string>

#include "attnscope/error.h"
#include "attnscope/model/head_finding.h"
#include "model/arch/stage_timings.h"

namespace attnscope::model {

std::vector<std::vector<HeadTypeScores>> modelHeadScores(const ForwardResult& forward, const std::vector<int>& ids,
                                                          int local_window) {
  if (static_cast<int>(ids.size()) != forward.n)
    throw InputError("ids", std::to_string(forward.n) + " token ids (the forward's)", std::to_string(ids.size()));
  std::vector<std::string> tokens;  // ids as the scores' token identity: equal ids, equal tokens
  tokens.reserve(ids.size());
  for (int id : ids) tokens.push_back(std::to_string(id));
  return modelHeadScores(forward, tokens, local_window);
}

std::vector<std::vector<HeadTypeScores>> modelHeadScores(const ForwardResult& forward,
                                                          const std::vector<std::string>& tokens, int local_window) {
  StageTimings timings("head scores");
  const HeadLayout& layout = forward.layout;
  if (static_cast<int>(tokens.size()) != forward.n)
    throw InputError("tokens", std::to_string(forward.n) + " tokens (the maps' side)", std::to_string(tokens.size()));
  std::vector<std::vector<HeadTypeScores>> scores(static_cast<std::size_t>(layout.n_layer));
  for (int l = 0; l < layout.n_layer; ++l) {
    Scene scene = forward.tileScene(l);
    scene.query_tokens = tokens;
    auto& layer = scores[static_cast<std::size_t>(l)];
    if (forward.keepsMaps()) {
      layer.resize(static_cast<std::size_t>(layout.n_head));
#pragma omp parallel for schedule(dynamic, 1)
      for (int h = 0; h < layout.n_head; ++h)
        layer[static_cast<std::size_t>(h)] = headTypeScores(scene, forward.keptMap(l * layout.n_head + h), local_window);
    } else {
      layer = allHeadTypeScores(scene, *forward.layerStats(l), local_window);
    }
    timings.mark(forward.keepsMaps() ? "kept maps" : "recomputed rows");
  }
  return scores;
}

std::vector<int> tokenizerIds(const Tokenizer& tokenizer, int vocab_size) {
  std::vector<int> ids;
  const int end = std::min(vocab_size, tokenizer.maxId() + 1);
  ids.reserve(static_cast<std::size_t>(std::max(0, std::min(end, tokenizer.vocabSize()))));
  for (int id = 0; id < end; ++id) {
    try {
      (void)tokenizer.token(id);  // refuses an id the vocabulary skips
      ids.push_back(id);
    } catch (const InputError&) {
    }
  }
  return ids;
}

std::vector<int> repeatedRandomTokens(const std::vector<int>& vocabulary, int length, std::uint64_t seed,
                                      int max_tokens) {
  if (length < 1 || static_cast<long long>(length) * 2 > max_tokens)
    throw InputError("--repeated-random", "a length from 1 to " + std::to_string(max_tokens / 2) +
                                              " (twice it must fit the model's " + std::to_string(max_tokens) +
                                              " positions)",
                     std::to_string(length));
  if (vocabulary.empty())
    throw InputError("vocabulary", "at least one token id to draw (below vocab_size, with a token)", "none");
  // mt19937_64's sequence is fixed by the standard; the draw is by modulo of its raw output (not
  // uniform_int_distribution, whose algorithm differs between standard libraries). The bias is at most
  // vocab / 2^64. A vocabulary without holes (0 .. V - 1) draws id r % V.
  std::mt19937_64 generator(seed);
  std::vector<int> ids(static_cast<std::size_t>(length) * 2);
  for (int i = 0; i < length; ++i) {
    const int id = vocabulary[static_cast<std::size_t>(generator() % vocabulary.size())];
    ids[static_cast<std::size_t>(i)] = id;
    ids[static_cast<std::size_t>(i + length)] = id;
  }
  return ids;
}

std::vector<int> repeatedRandomTokens(int vocab_size, int length, std::uint64_t seed, int max_tokens) {
  if (vocab_size < 1) throw InputError("vocab_size", "at least 1", std::to_string(vocab_size));
  std::vector<int> vocabulary(static_cast<std::size_t>(vocab_size));
  for (int id = 0; id < vocab_size; ++id) vocabulary[static_cast<std::size_t>(id)] = id;
  return repeatedRandomTokens(vocabulary, length, seed, max_tokens);
}

}  // namespace attnscope::model
