// tokenizer.json components on small hand-built files, each expectation worked out by hand from the rules of
// Hugging Face `tokenizers` (normalizer.rs split behaviours, metaspace.rs, digits.rs, byte_level.rs,
// models/bpe, added_vocabulary.rs, processors/template.rs, decoders/). Most files here use a vocabulary
// holding every short piece of the text with ignore_merges on, so each pre-tokenized piece comes back as
// one token and the labels show the pieces themselves.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/model/tokenizer.h"

using nlohmann::json;
namespace model = attnscope::model;
using Pieces = std::vector<std::string>;

namespace {

// A BPE model whose vocabulary is every substring of `texts` up to 12 bytes (whole UTF-8 characters) plus
// `extra`, ignore_merges on: a piece in the vocabulary is one token.
json pieceModel(const std::vector<std::string>& texts, const std::vector<std::string>& extra = {}) {
  json vocab = json::object();
  const auto add = [&](const std::string& s) {
    if (!vocab.contains(s)) vocab[s] = static_cast<int>(vocab.size());
  };
  for (const std::string& t : texts)
    for (std::size_t i = 0; i < t.size(); ++i) {
      if ((static_cast<unsigned char>(t[i]) & 0xC0) == 0x80) continue;
      for (std::size_t n = 1; n <= 12 && i + n <= t.size(); ++n)
        if (i + n == t.size() || (static_cast<unsigned char>(t[i + n]) & 0xC0) != 0x80) add(t.substr(i, n));
    }
  for (const std::string& e : extra) add(e);
  return {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"ignore_merges", true}};
}

json file(const json& model_json) {
  return {{"version", "1.0"},      {"truncation", nullptr},    {"padding", nullptr},  {"added_tokens", json::array()},
          {"normalizer", nullptr}, {"pre_tokenizer", nullptr}, {"model", model_json}, {"post_processor", nullptr},
          {"decoder", nullptr}};
}

model::Tokenizer make(const json& j, const std::string& config = "") {
  return model::Tokenizer::fromTokenizerJson(j.dump(), "tokenizer.json", config);
}

Pieces tokens(const model::Tokenizer& t, const std::string& text, bool special = true) {
  Pieces out;
  for (int id : t.encode(text, special)) out.push_back(t.token(id));
  return out;
}

json split(const json& pattern, const char* behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}};
}

TEST(HfTokenizer, SplitBehaviours) {
  const std::string text = "a-b--c";
  json f = file(pieceModel({text}));
  const auto pieces = [&](const json& pre) {
    f["pre_tokenizer"] = pre;
    return tokens(make(f), text);
  };
  const json dash = {{"String", "-"}};
  // Matches of "-": a | - | b | - | - | c.
  EXPECT_EQ(pieces(split(dash, "Removed")), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(pieces(split(dash, "Isolated")), (Pieces{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(pieces(split(dash, "MergedWithPrevious")), (Pieces{"a-", "b-", "-", "c"}));
  EXPECT_EQ(pieces(split(dash, "MergedWithNext")), (Pieces{"a", "-b", "-", "-c"}));
  EXPECT_EQ(pieces(split(dash, "Contiguous")), (Pieces{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(pieces(split(dash, "Removed", true)), (Pieces{"-", "-", "-"}));  // inverted: the letters go
  EXPECT_EQ(pieces(split({{"Regex", "-+"}}, "Isolated")), (Pieces{"a", "-", "b", "--", "c"}));
}

TEST(HfTokenizer, RegexSplitAsOniguruma) {
  // Llama 3's pattern: case-insensitive contractions, a letter run with one non-letter before it, numbers in
  // threes, \s+(?!\S) leaving a run's last space to the word after it, newlines kept with what precedes them.
  const std::string re =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const std::vector<std::string> texts = {"IT'S We'Ll", "a   b", "12345", "x!!\n\ny", "end  "};
  json f = file(pieceModel(texts));
  f["pre_tokenizer"] = split({{"Regex", re}}, "Isolated");
  const model::Tokenizer t = make(f);
  EXPECT_EQ(tokens(t, "IT'S We'Ll"), (Pieces{"IT", "'S", " We", "'Ll"}));
  EXPECT_EQ(tokens(t, "a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(tokens(t, "12345"), (Pieces{"123", "45"}));
  EXPECT_EQ(tokens(t, "x!!\n\ny"), (Pieces{"x", "!!\n\n", "y"}));
  EXPECT_EQ(tokens(t, "end  "), (Pieces{"end", "  "}));
}

TEST(HfTokenizer, MetaspaceAndDigits) {
  const std::string bar = "\u2581";
  json f = file(pieceModel({bar + "hi" + bar + bar + "there", "<s>hi", "a12b345"}, {"<s>"}));
  f["added_tokens"] = json::array({{{"id", 0}, {"content", "<s>"}, {"special", true}, {"normalized", false}}});
  f["model"]["vocab"].erase("<s>");
  for (auto& [k, v] : f["model"]["vocab"].items()) v = v.get<int>() + 1;
  f["model"]["vocab"]["<s>"] = 0;
  const auto meta = [](const char* scheme) {
    return json{{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", scheme}, {"split", true}};
  };
  f["pre_tokenizer"] = meta("always");
  // "hi  there" -> "▁hi▁▁there", cut before each ▁ (MergedWithNext): a lone ▁ between.
  EXPECT_EQ(tokens(make(f), "hi  there"), (Pieces{bar + "hi", bar, bar + "there"}));
  EXPECT_EQ(tokens(make(f), "<s>hi"), (Pieces{"<s>", bar + "hi"}));
  f["pre_tokenizer"] = meta("first");  // only the piece at the start of the text gets a ▁
  EXPECT_EQ(tokens(make(f), "hi"), (Pieces{bar + "hi"}));
  EXPECT_EQ(tokens(make(f), "<s>hi"), (Pieces{"<s>", "hi"}));
  f["pre_tokenizer"] = meta("never");
  EXPECT_EQ(tokens(make(f), "hi"), (Pieces{"hi"}));
  f["pre_tokenizer"] = {{"type", "Digits"}, {"individual_digits", true}};
  EXPECT_EQ(tokens(make(f), "a12b345"), (Pieces{"a", "1", "2", "b", "3", "4", "5"}));
  f["pre_tokenizer"] = {{"type", "Digits"}, {"individual_digits", false}};
  EXPECT_EQ(tokens(make(f), "a12b345"), (Pieces{"a", "12", "b", "345"}));
}

TEST(HfTokenizer, ByteLevelPrefixSpaceAndNormalizers) {
  // ByteLevel maps ' ' to 'Ġ' (U+0120) and, with add_prefix_space, puts one before a piece without.
  json f = file(pieceModel({"\u0120hi", "caf\u00e9", "caffi"}));
  f["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(tokens(make(f), "hi"), (Pieces{"\u0120hi"}));
  f["pre_tokenizer"] = nullptr;
  f["normalizer"] = {{"type", "NFC"}};  // e + U+0301 composes to é
  EXPECT_EQ(tokens(make(f), "cafe\u0301"), (Pieces{"caf\u00e9"}));
  f["normalizer"] = {{"type", "NFKC"}};  // the ligature ﬁ (U+FB01) becomes f i
  EXPECT_EQ(tokens(make(f), "\uFB01"), (Pieces{"fi"}));
  f["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers", json::array({{{"type", "Replace"}, {"pattern", {{"String", "x"}}}, {"content", "fi"}},
                                   {{"type", "Prepend"}, {"prepend", "caf"}}})}};
  EXPECT_EQ(tokens(make(f), "x"), (Pieces{"caffi"}));  // x -> fi, then caf before it
  EXPECT_TRUE(tokens(make(f), "").empty());            // Prepend adds nothing to an empty text
}

TEST(HfTokenizer, BpeOptions) {
  // Merges by rank, leftmost first among equal ranks: "aaa" with "a a" merges the first pair.
  json vocab = {{"a", 0}, {"b", 1}, {"aa", 2}, {"ab", 3}, {"<unk>", 4}, {"<0x78>", 5}, {"<0x79>", 6}};
  json m = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a a", json::array({"a", "b"})})}};
  EXPECT_EQ(tokens(make(file(m)), "aaa"), (Pieces{"aa", "a"}));
  EXPECT_EQ(tokens(make(file(m)), "aab"), (Pieces{"aa", "b"}));  // "a a" (rank 0) before "a b" (rank 1)
  m["merges"] = json::array({"a b", "a a"});
  EXPECT_EQ(tokens(make(file(m)), "aab"), (Pieces{"a", "ab"}));
  // Unknown characters: dropped without unk_token (so a and b meet and merge); one <unk> each; one for a
  // run with fuse_unk; bytes with byte_fallback when every byte has a <0xHH> token (x is 0x78, y 0x79; z has
  // none, so it is <unk>, which model.rs writes only when the next character is found in the vocabulary or
  // the word ends: y's fallback bytes go in before it).
  EXPECT_EQ(tokens(make(file(m)), "azzb"), (Pieces{"ab"}));
  m["unk_token"] = "<unk>";
  EXPECT_EQ(tokens(make(file(m)), "azzb"), (Pieces{"a", "<unk>", "<unk>", "b"}));
  m["fuse_unk"] = true;
  EXPECT_EQ(tokens(make(file(m)), "azzb"), (Pieces{"a", "<unk>", "b"}));
  m["byte_fallback"] = true;
  EXPECT_EQ(tokens(make(file(m)), "xzy"), (Pieces{"<0x78>", "<0x79>", "<unk>"}));
  EXPECT_EQ(tokens(make(file(m)), "xza"), (Pieces{"<0x78>", "<unk>", "a"}));
  // continuing_subword_prefix and end_of_word_suffix: "ab" is a + ##b</w>; the merge "a ##b</w>" makes
  // "ab</w>" (the prefix's length cut from the right part).
  json w = {{"type", "BPE"},
            {"vocab", {{"a", 0}, {"##b</w>", 1}, {"ab</w>", 2}, {"##a", 3}}},
            {"merges", json::array({"a ##b</w>"})},
            {"continuing_subword_prefix", "##"},
            {"end_of_word_suffix", "</w>"}};
  EXPECT_EQ(tokens(make(file(w)), "ab"), (Pieces{"ab</w>"}));
  EXPECT_EQ(tokens(make(file(w)), "aab"), (Pieces{"a", "##a", "##b</w>"}));
  // ignore_merges: a word in the vocabulary is taken whole even when the merges would not reach it.
  json g = {{"type", "BPE"}, {"vocab", {{"x", 0}, {"y", 1}, {"xy", 2}}}, {"merges", json::array()}};
  EXPECT_EQ(tokens(make(file(g)), "xy"), (Pieces{"x", "y"}));
  g["ignore_merges"] = true;
  EXPECT_EQ(tokens(make(file(g)), "xy"), (Pieces{"xy"}));
}

TEST(HfTokenizer, AddedTokenFlags) {
  json f = file(pieceModel({"a b", "ab", " ", "a[W]", "\u2581a[X]"}, {"[X]"}));
  const auto added = [&](int id, const char* content, json flags) {
    flags["id"] = id;
    flags["content"] = content;
    return flags;
  };
  const int base = static_cast<int>(f["model"]["vocab"].size());
  f["added_tokens"] =
      json::array({added(base, "[S]", {{"special", true}}), added(base + 1, "[W]", {{"single_word", true}}),
                   added(base + 2, "[L]", {{"lstrip", true}}), added(base + 3, "[R]", {{"rstrip", true}})});
  const model::Tokenizer t = make(f);
  EXPECT_EQ(tokens(t, "a[S]b"), (Pieces{"a", "[S]", "b"}));
  EXPECT_EQ(tokens(t, "a[S]b", false), (Pieces{"a", "[S]", "b"}));  // matched with or without special tokens
  // single_word: not next to a word character.
  EXPECT_EQ(tokens(t, "a [W] b"), (Pieces{"a ", "[W]", " b"}));
  EXPECT_EQ(tokens(t, "a[W]"), (Pieces{"a[W]"}));  // text, not the token
  // lstrip takes the white space before it, rstrip the white space after it.
  EXPECT_EQ(tokens(t, "a  [L] b"), (Pieces{"a", "[L]", " b"}));
  EXPECT_EQ(tokens(t, "a [R]  b"), (Pieces{"a ", "[R]", "b"}));
  // normalized tokens are matched in the normalised text, as the normalizer writes them: with Prepend ▁,
  // "[X]" is looked for as "▁[X]" (tokenizers' own behaviour), so "[X]" inside text is not found...
  json g = f;
  g["normalizer"] = {{"type", "Prepend"}, {"prepend", "\u2581"}};
  g["added_tokens"] = json::array({added(base + 4, "[X]", {{"normalized", true}})});
  EXPECT_EQ(tokens(make(g), "a[X]"), (Pieces{"\u2581a[X]"}));
  // ...but a text that starts with it is.
  EXPECT_EQ(tokens(make(g), "[X]"), (Pieces{"[X]"}));
}

TEST(HfTokenizer, TemplateAndConfig) {
  json f = file(pieceModel({"hi"}, {"<s>", "</s>"}));
  const int bos = f["model"]["vocab"]["<s>"], eos = f["model"]["vocab"]["</s>"];
  const json special = {{"<s>", {{"id", "<s>"}, {"ids", {bos}}, {"tokens", {"<s>"}}}}};
  f["post_processor"] = {
      {"type", "Sequence"},
      {"processors", json::array({{{"type", "ByteLevel"}},
                                  {{"type", "TemplateProcessing"},
                                   {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                                   {"pair", json::array()},
                                   {"special_tokens", special}}})}};
  EXPECT_EQ(tokens(make(f), "hi"), (Pieces{"<s>", "hi"}));
  EXPECT_EQ(tokens(make(f), "hi", false), (Pieces{"hi"}));
  EXPECT_EQ(tokens(make(f), ""), (Pieces{"<s>"}));
  // A Llama-class tokenizer_config.json rebuilds the template from add_bos_token / add_eos_token.
  const std::string config =
      R"({"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false, "add_eos_token": true, "bos_token": "<s>",
          "eos_token": {"content": "</s>", "__type": "AddedToken"}})";
  EXPECT_EQ(tokens(make(f, config), "hi"), (Pieces{"hi", "</s>"}));
  EXPECT_EQ(make(f, config).encode("hi"), (std::vector<int>{f["model"]["vocab"]["hi"].get<int>(), eos}));
  // Another class keeps the file's own template.
  EXPECT_EQ(tokens(make(f, R"({"tokenizer_class": "Qwen2Tokenizer", "add_eos_token": true})"), "hi"),
            (Pieces{"<s>", "hi"}));
}

TEST(HfTokenizer, DecodersAndLabels) {
  const std::string bar = "\u2581";
  json f = file({{"type", "BPE"},
                 {"vocab", {{bar + "hi", 0}, {bar, 1}, {"<0xC3>", 2}, {"<0xA9>", 3}, {"<0xF0>", 4}, {"x", 5}}},
                 {"merges", json::array()}});
  // Llama 2's chain: ▁ -> ' ', bytes joined, fused, one leading space stripped.
  f["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", bar}}}, {"content", " "}},
                                            {{"type", "ByteFallback"}},
                                            {{"type", "Fuse"}},
                                            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  const model::Tokenizer t = make(f);
  EXPECT_EQ(t.decode({0, 1, 2, 3, 5}), "hi \u00e9x");  // C3 A9 is é
  EXPECT_EQ(t.decode({4, 5}), "\uFFFDx");              // a byte that is no character: U+FFFD per byte
  EXPECT_EQ(t.label(0), "\u2423hi");                   // ▁ shown as ␣, as GPT-2's space
  EXPECT_EQ(t.label(4), "<0xF0>");                     // a partial byte, as GPT-2's
  f["decoder"] = {{"type", "Metaspace"}, {"replacement", bar}, {"prepend_scheme", "always"}};
  EXPECT_EQ(make(f).decode({0, 0, 1}), "hi hi ");  // the first token's ▁ dropped
  f["decoder"] = nullptr;                          // no decoder: tokens joined by spaces
  EXPECT_EQ(make(f).decode({5, 5}), "x x");
  EXPECT_THROW(make(f).decode({6}), attnscope::InputError);
}

}  // namespace
