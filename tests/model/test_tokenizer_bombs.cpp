// Hostile tokenizer.json files: normalizers and decoders that grow the text without bound, regexes that
// backtrack for minutes, added tokens that share long prefixes. Each is refused with one line naming the file
// and the component, or matched in time linear in the text, well within a hang guard where the unbounded code
// took minutes or died with std::bad_alloc. Every expected count below is worked out by hand from the sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/model/tokenizer.h"

using nlohmann::json;
namespace model = attnscope::model;

namespace {

// A BPE model over the printable ASCII characters (ids 0..94 in code order) and `extra` (ids 95, 96, ...),
// ignore_merges on: a pre-tokenized piece in the vocabulary is one token, any other piece its characters.
json charModel(const std::vector<std::string>& extra = {}) {
  json vocab = json::object();
  for (int c = 32; c < 127; ++c) vocab[std::string(1, static_cast<char>(c))] = c - 32;
  for (const std::string& e : extra) vocab[e] = static_cast<int>(vocab.size());
  return {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"ignore_merges", true}};
}

json file(const json& model_json) {
  return {{"version", "1.0"},      {"truncation", nullptr},    {"padding", nullptr},  {"added_tokens", json::array()},
          {"normalizer", nullptr}, {"pre_tokenizer", nullptr}, {"model", model_json}, {"post_processor", nullptr},
          {"decoder", nullptr}};
}

json replace(const std::string& from, const std::string& to) {
  return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

json splitRegex(const std::string& re) {
  return {{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}};
}

model::Tokenizer make(const json& j) { return model::Tokenizer::fromTokenizerJson(j.dump(), "tok/tokenizer.json"); }

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Not a speed measurement (benchmarks measure speed) but a hang guard: the unbounded code ran for minutes (past 60
// s) or died of std::bad_alloc, where the bounded one takes 0.01 to 1 s here idle and up to 3 s on a loaded 2-core
// machine. 30 s fails the first and no machine's second.
constexpr double kHangGuardSeconds = 30;

// Runs `f`, expecting an InputError whose message holds every one of `needles`, within the hang guard.
template <typename F>
void expectRefusedWithin(F f, const std::vector<std::string>& needles) {
  const auto start = std::chrono::steady_clock::now();
  try {
    f();
    ADD_FAILURE() << "accepted";
  } catch (const attnscope::InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& n : needles) EXPECT_NE(message.find(n), std::string::npos) << n << " in: " << message;
  }
  EXPECT_LT(seconds(start), kHangGuardSeconds);
}

// [SECTION] normalizers and decoders that grow the text

TEST(TokenizerBombs, ReplaceGrowingTheTextIsRefusedBeforeWriting) {
  // Round 3's case: "a" -> 100,000 "b"s on 100 KB of "a": 10^5 matches x 10^5 bytes = 10^10 bytes (it took
  // 8.5 s and 3.2 GB to die with std::bad_alloc). The bound: 32 x 100000 + 4096 = 3204096 bytes.
  json f = file(charModel());
  f["normalizer"] = replace("a", std::string(100000, 'b'));
  const model::Tokenizer t = make(f);
  expectRefusedWithin([&] { t.encode(std::string(100000, 'a')); },
                      {"tok/tokenizer.json: normalizer (Replace)", "100000 bytes of text within", "(3204096 bytes)",
                       "a text of", "(10000000000 bytes) after it"});
}

TEST(TokenizerBombs, ChainedReplacesAreRefusedAtTheStepPastTheBound) {
  // Four Replaces of "a" by 16 "a"s on 8192 "a"s (4.5 GB unbounded): 8192 x 16 = 131072 bytes after the first
  // (within 32 x 8192 + 4096 = 266240), 131072 x 16 = 2097152 after the second, which is refused.
  json f = file(charModel());
  f["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array()}};
  for (int i = 0; i < 4; ++i) f["normalizer"]["normalizers"].push_back(replace("a", std::string(16, 'a')));
  const model::Tokenizer t = make(f);
  expectRefusedWithin([&] { t.encode(std::string(8192, 'a')); },
                      {"tok/tokenizer.json: normalizer.normalizers[1] (Replace)", "8192 bytes of text within",
                       "266240 bytes", "(2097152 bytes) after it"});
  // 16 "a"s: 256 and 4096 bytes are within 32 x 16 + 4096 = 4608, 65536 (normalizers[2]) is not.
  expectRefusedWithin([&] { t.encode(std::string(16, 'a')); }, {"normalizer.normalizers[2] (Replace)", "65536"});
  // One "a": 16, 256, 4096 are within 32 + 4096 = 4128; 65536 is past it at normalizers[3] too.
  expectRefusedWithin([&] { t.encode("a"); }, {"normalizer.normalizers[3] (Replace)", "4128 bytes"});
}

TEST(TokenizerBombs, PrependOnEverySegmentIsBounded) {
  // Prepend writes its text before every segment between added tokens: 5000 bytes before "a" is 5001 bytes
  // from 1, past 32 + 4096 = 4128.
  json f = file(charModel());
  f["normalizer"] = {{"type", "Prepend"}, {"prepend", std::string(5000, 'p')}};
  f["added_tokens"] = json::array({{{"id", 95}, {"content", "<S>"}, {"special", true}}});
  f["model"]["vocab"]["<S>"] = 95;
  const model::Tokenizer t = make(f);
  expectRefusedWithin([&] { t.encode("a<S>a<S>a"); },
                      {"tok/tokenizer.json: normalizer (Prepend)", "4128 bytes", "5001 bytes"});
  // A Prepend as Llama's ('▁', 3 bytes) grows any segment within the bound: "a" -> "▁a".
  f["normalizer"]["prepend"] = "\u2581";
  f["model"]["vocab"]["\u2581"] = 96;
  const std::vector<int> ids = make(f).encode("a<S>a", false);
  EXPECT_EQ(ids, (std::vector<int>{96, 'a' - 32, 95, 96, 'a' - 32}));
}

TEST(TokenizerBombs, NfkcExpansionWithinTheBoundIsKept) {
  // U+FDFA (3 bytes) is "صلى الله عليه وسلم" under NFKC: 18 characters, 33 bytes (11-fold); with Llama's
  // Replace of " " by '▁' (3 bytes for 1) 39 bytes (13-fold), within 32-fold. 1000 of them are 18000 tokens,
  // 3000 of them '▁'.
  const std::vector<std::string> letters = {"\u0635", "\u0644", "\u0649", "\u0627", "\u0647",
                                            "\u0639", "\u064A", "\u0648", "\u0633", "\u0645"};
  std::vector<std::string> extra = letters;
  extra.push_back("\u2581");
  json f = file(charModel(extra));
  f["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "NFKC"}}, replace(" ", "\u2581")})}};
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "\uFDFA";
  const std::vector<int> ids = make(f).encode(text, false);
  EXPECT_EQ(ids.size(), 18000u);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 95 + static_cast<int>(letters.size())), 3000);
  // The same NFKC followed by a Replace of 'ل' (2 bytes; 5 per U+FDFA: صلى الله عليه وسلم) by 100 bytes:
  // 1000 x (33 + 5 x 98) = 523000 bytes from 3000, past 32 x 3000 + 4096 = 100096.
  f["normalizer"]["normalizers"][1] = replace("\u0644", std::string(100, 'l'));
  const model::Tokenizer t = make(f);
  expectRefusedWithin([&] { t.encode(text); }, {"normalizer.normalizers[1] (Replace)", "100096", "523000 bytes"});
}

TEST(TokenizerBombs, DecoderReplaceIsBounded) {
  // A decoder Replace of "a" by 100,000 "b"s over 1000 "a" tokens: 10^8 bytes from 1000 (bound 36096).
  json f = file(charModel());
  f["decoder"] = replace("a", std::string(100000, 'b'));
  const model::Tokenizer t = make(f);
  const std::vector<int> ids(1000, 'a' - 32);
  expectRefusedWithin([&] { t.decode(ids); },
                      {"tok/tokenizer.json: decoder (Replace)", "36096 bytes", "(100000000 bytes) after it"});
  // One token's label alone: 100000 bytes from 1, past 4128.
  expectRefusedWithin([&] { t.label('a' - 32); }, {"decoder (Replace)", "4128 bytes", "100000 bytes"});
  EXPECT_EQ(t.decode({'x' - 32, 'y' - 32}), "xy");  // no match: unchanged
}

// [SECTION] runs of combining marks (canonical reordering sorts a run by insertion: the square of its length)

// "a" then `pairs` x (U+0301 acute, class 230; U+0316 grave below, class 220): alternating classes, so canonical
// order moves every mark past half the run. 1 + 4 x pairs bytes.
std::string alternatingMarks(std::size_t pairs) {
  std::string s = "a";
  for (std::size_t i = 0; i < pairs; ++i) s += "\u0301\u0316";
  return s;
}

TEST(TokenizerBombs, LongRunOfCombiningMarksIsRefusedBeforeNfc) {
  // Trust round 4: "a" and 10^6 marks (2 MB) took past 60 s in NFC. The 257th mark starts at byte
  // 1 + 2 x 256 = 513: one past the limit of 256.
  json f = file(charModel({"\u00E1", "\u0316", "\u0301"}));
  f["normalizer"] = {{"type", "NFC"}};
  const model::Tokenizer t = make(f);
  expectRefusedWithin([&] { t.encode(alternatingMarks(500000)); },
                      {"tok/tokenizer.json: normalizer (NFC)", "runs of at most 256 combining marks",
                       "a longer run at byte 513"});
  // 256 marks are within the limit and put in canonical order (the 220s first), then the first acute composes
  // with "a" (the grave-below marks, class 220 < 230, do not block it): á (95), 128 x U+0316 (96), 127 x U+0301
  // (97), as Python's unicodedata.normalize("NFC", ...) gives.
  std::vector<int> expected(1, 95);
  expected.insert(expected.end(), 128, 96);
  expected.insert(expected.end(), 127, 97);
  EXPECT_EQ(t.encode(alternatingMarks(128), false), expected);
}

TEST(TokenizerBombs, LongRunOfCombiningMarksIsRefusedBeforeStripAccents) {
  // BertNormalizer's strip_accents is NFD (canonical reordering) then every Mn dropped: the same 2 MB run,
  // refused at the same byte (clean_text and the CJK spacing leave "a" and the marks as they are).
  json f = file(charModel());
  f["normalizer"] = {{"type", "BertNormalizer"}, {"lowercase", true}, {"strip_accents", true}};
  const model::Tokenizer t = make(f);
  expectRefusedWithin([&] { t.encode(alternatingMarks(500000)); },
                      {"tok/tokenizer.json: normalizer (BertNormalizer)", "runs of at most 256", "byte 513"});
  // Within the limit every mark is stripped: "A" + 256 marks is "a".
  std::string within = alternatingMarks(128);
  within[0] = 'A';
  EXPECT_EQ(t.encode(within, false), (std::vector<int>{'a' - 32}));
}

TEST(TokenizerBombs, CombiningRunsAreCountedInTheirDecompositions) {
  // U+0F73 (3 bytes) is a starter (class 0) that decomposes to U+0F71 U+0F72 (classes 129, 130): 200 of them
  // are a run of 400 marks. The 129th brings it to 257, at byte 1 + 3 x 128 = 385.
  json f = file(charModel());
  f["normalizer"] = {{"type", "NFD"}};
  std::string text = "a";
  for (int i = 0; i < 200; ++i) text += "\u0F73";
  expectRefusedWithin([&] { make(f).encode(text); }, {"normalizer (NFD)", "256", "byte 385"});
  // A starter between them ends each run: "\u0F73a" x 200 is within it (NFD then the ids: a starter's 2 marks
  // are unknown characters here, so only count the "a"s).
  text.clear();
  for (int i = 0; i < 200; ++i) text += "\u0F73a";
  const std::vector<int> ids = make(f).encode(text, false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 'a' - 32), 200);
}

// [SECTION] WordPiece's longest match

json wordPiece(const std::vector<std::string>& vocab_list, long long max_chars) {
  json vocab = json::object();
  for (const std::string& v : vocab_list) vocab[v] = static_cast<int>(vocab.size());
  return {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
          {"max_input_chars_per_word", max_chars}, {"vocab", vocab}};
}

TEST(TokenizerBombs, WordPieceTokenPastTheLimitIsRefused) {
  // Trust round 4: a 1 MB word with max_input_chars_per_word 10^12 took past 60 s: each start looked up every
  // candidate end up to the longest token (here 10^6 bytes), each lookup hashing it. A token past 256 bytes
  // is refused at load, naming it.
  const std::string huge(1000000, 'a');
  expectRefusedWithin([&] { make(file(wordPiece({"[UNK]", "a", "##a", huge}, 1'000'000'000'000))); },
                      {"tok/tokenizer.json: model.vocab['aaaa", "expected WordPiece tokens of at most 256 bytes",
                       "got 1000000 bytes"});
}

TEST(TokenizerBombs, WordPieceLongestMatchOnAMegabyteWord) {
  // Tokens at the limit (256 bytes) that fail on their last byte: from each start the search walks 254 bytes
  // of "a"s and finds only "a" / "##a". 10^6 "a"s are "a" (1) then 999999 x "##a" (2).
  const std::string first = std::string(255, 'a') + "b", next = "##" + std::string(253, 'a') + "b";
  ASSERT_EQ(first.size(), 256u);
  ASSERT_EQ(next.size(), 256u);
  const model::Tokenizer t = make(file(wordPiece({"[UNK]", "a", "##a", first, next}, 1'000'000'000'000)));
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> ids = t.encode(std::string(1000000, 'a'), false);
  EXPECT_LT(seconds(start), kHangGuardSeconds);
  ASSERT_EQ(ids.size(), 1000000u);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 999999);
  // The long tokens still match where the word holds them: "a" x 255 + "b" is one token (3); then "##" + "a" x
  // 253 + "b" after it (4); a "b" no piece continues makes the whole word [UNK] (0).
  EXPECT_EQ(t.encode(first + std::string(253, 'a') + "b", false), (std::vector<int>{3, 4}));
  EXPECT_EQ(t.encode(first + "b", false), (std::vector<int>{0}));
  EXPECT_EQ(t.encode("aab", false), (std::vector<int>{0}));
  EXPECT_EQ(t.encode("aaa", false), (std::vector<int>{1, 2, 2}));
}

// [SECTION] regexes that backtrack

TEST(TokenizerBombs, CatastrophicSplitRegexIsRefusedNamingThePattern) {
  // Round 3's case: ((a+)(b+)?)+$c on "ab" x N backtracks O(N) at each of the N starts (5.6 s at N = 20k,
  // 94 s at 80k); here N = 20k is stopped by the retry limit.
  json f = file(charModel());
  f["pre_tokenizer"] = splitRegex("((a+)(b+)?)+$c");
  const model::Tokenizer t = make(f);
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "ab";
  expectRefusedWithin([&] { t.encode(text); },
                      {"tok/tokenizer.json: pre_tokenizer.pattern.Regex", "'((a+)(b+)?)+$c'", "backtracks at most",
                       "40000 bytes", "retry"});
}

TEST(TokenizerBombs, OtherCatastrophicRegexesAreRefused) {
  // Nested quantifiers over the same characters, each failing at the end of a long run (on 5000 "a"s each
  // took a second, then stopped silently at Oniguruma's default 10^7 retries, the matches cut short).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(a+)+$b", std::string(30000, 'a')},
      {"(.*a){20}$z", std::string(30000, 'a')},
      {"(a|aa)+$b", std::string(30000, 'a')},
  };
  for (const auto& [re, text] : cases) {
    json f = file(charModel());
    f["pre_tokenizer"] = splitRegex(re);
    const model::Tokenizer t = make(f);
    expectRefusedWithin([&] { t.encode(text); }, {"pre_tokenizer.pattern.Regex", "'" + re + "'"});
  }
}

TEST(TokenizerBombs, RealPatternsOnLongWhiteSpaceStayWithinTheLimit) {
  // Llama 3's pattern on a million spaces then "x": \s*[\r\n]+ backs out of the whole run (a million
  // retries) before \s+(?!\S) takes all but the last space, which " x" then takes: two pieces.
  const std::string re =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  json f = file(charModel({std::string(999999, ' '), " x"}));
  f["pre_tokenizer"] = splitRegex(re);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(make(f).encode(std::string(1000000, ' ') + "x", false), (std::vector<int>{95, 96}));
  EXPECT_LT(seconds(start), kHangGuardSeconds);
}

// [SECTION] added tokens

json addedToken(int id, const std::string& content, json flags = json::object()) {
  flags["id"] = id;
  flags["content"] = content;
  return flags;
}

TEST(TokenizerBombs, ManyAddedTokensSharingALongPrefixMatchInLinearTime) {
  // 1000 added tokens "x" x 1000 + "0000" .. "0999" (ids 95..1094) on 100 KB of "x" x 999 + "y": every
  // position starts 1000 near-matches (about 5 x 10^10 bytes compared before, seconds; linear now). Two
  // tokens inside the text are found, each once, and the rest is its characters.
  json f = file(charModel());
  const std::string prefix(1000, 'x');
  char digits[8];
  for (int k = 0; k < 1000; ++k) {
    std::snprintf(digits, sizeof digits, "%04d", k);
    f["added_tokens"].push_back(addedToken(95 + k, prefix + digits, {{"special", true}}));
  }
  const model::Tokenizer t = make(f);
  std::string block = prefix.substr(0, 999) + "y", text;
  for (int i = 0; i < 100; ++i) text += block;
  text += prefix + "0007" + block + prefix + "0123";
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> ids = t.encode(text, false);
  EXPECT_LT(seconds(start), kHangGuardSeconds);
  // 100 blocks of 1000 characters, token 0007, one block, token 0123.
  ASSERT_EQ(ids.size(), 100u * 1000 + 1 + 1000 + 1);
  EXPECT_EQ(ids[100000], 95 + 7);
  EXPECT_EQ(ids[101001], 95 + 123);
  EXPECT_EQ(std::count_if(ids.begin(), ids.end(), [](int id) { return id >= 95; }), 2);
}

TEST(TokenizerBombs, AddedTokensLeftmostLongest) {
  // ids: "ab" 95, "abcd" 96, "bc" 97, "bcdef" 98, "abc" 99, "bcdefgh" 100.
  json f = file(charModel());
  for (const char* c : {"ab", "abcd", "bc", "bcdef", "abc", "bcdefgh"})
    f["added_tokens"].push_back(addedToken(95 + static_cast<int>(f["added_tokens"].size()), c));
  const model::Tokenizer t = make(f);
  const int e = 'e' - 32, g = 'g' - 32, x = 'x' - 32, d = 'd' - 32;
  // At 0 "ab", "abc", "abcd" start: the longest; a longer token starting later ("bcdefgh") loses to it.
  EXPECT_EQ(t.encode("abcdefg", false), (std::vector<int>{96, e, 'f' - 32, g}));
  EXPECT_EQ(t.encode("abcdefgh", false), (std::vector<int>{96, e, 'f' - 32, g, 'h' - 32}));
  EXPECT_EQ(t.encode("xbcdefgh", false), (std::vector<int>{x, 100}));
  EXPECT_EQ(t.encode("xbcdefx", false), (std::vector<int>{x, 98, x}));
  EXPECT_EQ(t.encode("abcx", false), (std::vector<int>{99, x}));
  EXPECT_EQ(t.encode("abd", false), (std::vector<int>{95, d}));
}

TEST(TokenizerBombs, NestedAddedTokensOnARun) {
  // "a" x 1 .. 50 as added tokens (ids 95..144): on "a" x 1003 the leftmost-longest cut is 20 x "a" x 50,
  // then "a" x 3.
  json f = file(charModel());
  for (int k = 1; k <= 50; ++k) f["added_tokens"].push_back(addedToken(94 + k, std::string(k, 'a')));
  const model::Tokenizer t = make(f);
  std::vector<int> expected(20, 144);
  expected.push_back(97);
  EXPECT_EQ(t.encode(std::string(1003, 'a'), false), expected);
}

TEST(TokenizerBombs, SingleWordAmongSharedPrefixes) {
  // "ab" single_word (95) and "abc" (96): "abc" at 0 is the longest; "ab" before "x" is inside a word and
  // stays text (the search goes on after it); the last "ab" stands alone.
  json f = file(charModel());
  f["added_tokens"] =
      json::array({addedToken(95, "ab", {{"single_word", true}}), addedToken(96, "abc", json::object())});
  const int sp = 0, a = 'a' - 32, b = 'b' - 32, x = 'x' - 32;
  EXPECT_EQ(make(f).encode("abc abx ab", false), (std::vector<int>{96, sp, a, b, x, sp, 95}));
}

}  // namespace
