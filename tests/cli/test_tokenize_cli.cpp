// `attnscope tokenize` end to end: a small tokenizer.json's ids, labels and decoded text worked out by hand,
// GPT-2's vocab.json + merges.txt folder, and hostile tokenizer.json files (truncated, wrong types, unknown
// components, merges naming absent tokens, ids out of range, duplicate ids): exit 2, one line naming the
// file and the JSON path.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/test_model_support.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

model_test::CommandRun attnscope(const std::string& args) {
  return model_test::run(std::string("'") + ATTNSCOPE_BINARY + "' " + args);
}

// A byte-level BPE: the 256 byte symbols, merges "h i" and "Ġ hi", BOS "<s>" from a template, Llama 3's way.
json smallTokenizer() {
  json vocab = json::object();
  for (const std::string& sym : std::vector<std::string>{"h", "i", "\u0120", "!", "hi", "\u0120hi"})
    vocab[sym] = static_cast<int>(vocab.size());
  return {
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", 6}, {"content", "<s>"}, {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {6}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"h i", json::array({"\u0120", "hi"})})}}}};
}

std::string writeTokenizer(const std::string& text) {
  const std::string dir = model_test::tempDir() + "/tok";
  fs::create_directories(dir);
  model_test::spit(dir + "/tokenizer.json", text);
  return dir;
}

TEST(TokenizeCli, IdsLabelsAndText) {
  const std::string dir = writeTokenizer(smallTokenizer().dump());
  // "hi hi!": pieces "hi", " hi", "!" -> hi (4), Ġhi (5), ! (3), after BOS (6).
  model_test::CommandRun r = attnscope("tokenize '" + dir + "' --text 'hi hi!'");
  ASSERT_EQ(r.status, 0) << r.err;
  json out = json::parse(r.out);
  EXPECT_EQ(out["ids"], json({6, 4, 5, 3}));
  EXPECT_EQ(out["tokens"], json({"<s>", "hi", "\u2423hi", "!"}));
  EXPECT_EQ(out["text"], "<s>hi hi!");
  r = attnscope("tokenize '" + dir + "/tokenizer.json' --text 'hi hi!' --no-special");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["ids"], json({4, 5, 3}));
  const std::string text_file = model_test::tempDir() + "/text.txt";
  model_test::spit(text_file, "hi<s>");
  r = attnscope("tokenize '" + dir + "' --text-file '" + text_file + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["ids"], json({6, 4, 6}));  // the added token in the text is matched
}

TEST(TokenizeCli, Gpt2Folder) {
  const std::string dir = model_test::tinyCheckpoint();  // vocab.json + merges.txt (merges in test_model_tokenizer)
  const model_test::CommandRun r = attnscope("tokenize '" + dir + "' --text 'hello there'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["tokens"], json({"hello", "\u2423t", "he", "r", "e"}));
}

// Exit 2, one stderr line starting "attnscope: ", holding each needle; nothing on stdout.
void expectRefused(const std::string& args, const std::vector<std::string>& needles) {
  const model_test::CommandRun r = attnscope(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("attnscope: ", 0), 0u) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' in " << r.err;
}

void expectFileRefused(const std::string& tokenizer_json, const std::vector<std::string>& needles) {
  const std::string dir = writeTokenizer(tokenizer_json);
  std::vector<std::string> all = needles;
  all.push_back(dir + "/tokenizer.json: ");
  expectRefused("tokenize '" + dir + "' --text 'hi'", all);
}

TEST(TokenizeCli, HostileFiles) {
  const std::string good = smallTokenizer().dump();
  expectFileRefused(good.substr(0, good.size() / 2), {"expected JSON, got a syntax error"});  // truncated
  expectFileRefused("[]", {"(top level): expected an object"});
  json j = smallTokenizer();
  j["model"]["vocab"]["h"] = "zero";
  expectFileRefused(j.dump(), {"model.vocab['h']: expected an integer from 0 to 10000000, got string \"zero\""});
  j = smallTokenizer();
  j["model"]["vocab"]["h"] = -3;
  expectFileRefused(j.dump(), {"model.vocab['h']: expected an integer from 0 to 10000000"});  // id out of range
  j = smallTokenizer();
  j["model"]["vocab"]["h"] = 1;  // i has 1 too
  expectFileRefused(j.dump(), {"an id no other token has"});
  j = smallTokenizer();
  j["added_tokens"].push_back({{"id", 6}, {"content", "<t>"}});
  expectFileRefused(j.dump(), {"added_tokens[1].id: expected an id no other added token has, got 6 (also '<s>')"});
  j = smallTokenizer();
  j["added_tokens"][0]["id"] = 20'000'000;
  expectFileRefused(j.dump(), {"added_tokens[0].id: expected an integer from 0 to 10000000"});
  j = smallTokenizer();
  j["model"]["merges"].push_back("h q");
  expectFileRefused(j.dump(), {"model.merges[2]: expected tokens in model.vocab, got 'q', which is not"});
  j = smallTokenizer();
  j["model"]["merges"].push_back("i h");  // "ih" is not in the vocabulary
  expectFileRefused(j.dump(), {"model.merges[2]: expected tokens in model.vocab, got 'ih'"});
  j = smallTokenizer();
  j["model"]["merges"][0] = "h i x";
  expectFileRefused(j.dump(), {"model.merges[0]: expected \"a b\""});
  j = smallTokenizer();
  j["model"]["merges"].push_back(5);
  expectFileRefused(j.dump(), {"model.merges[2]: expected \"a b\" or [\"a\", \"b\"], got number 5"});
  j = smallTokenizer();
  j["model"]["merges"].push_back(json::array({"h"}));
  expectFileRefused(j.dump(), {"model.merges[2]: expected \"a b\" or [\"a\", \"b\"], got array [\"h\"]"});
  j = smallTokenizer();
  j["model"]["merges"].push_back(json::array({"h", "i", json::object()}));
  expectFileRefused(j.dump(), {"model.merges[2]: expected \"a b\" or [\"a\", \"b\"]"});
  j = smallTokenizer();
  j["model"]["vocab"]["h"] = json::object();
  expectFileRefused(j.dump(), {"model.vocab['h']: expected an integer from 0 to 10000000, got object {}"});
  j = smallTokenizer();
  j["model"]["vocab"] = json::array({"h", "i"});
  expectFileRefused(j.dump(), {"model.vocab: expected an object of token: id, got array"});
  j = smallTokenizer();
  j["model"]["merges"] = {{"h", "i"}};
  expectFileRefused(j.dump(), {"model.merges: expected an array, got object"});
  std::string twice = smallTokenizer().dump();
  twice.replace(twice.find("\"h\":0"), 5, "\"h\":0,\"h\":9");  // one token listed twice
  expectFileRefused(twice, {"model.vocab['h']: expected a token listed once"});
  expectFileRefused(std::string(300, '[') + std::string(300, ']'), {"expected JSON nested at most 256 deep"});
  j = smallTokenizer();
  j["normalizer"] = {{"type", "Lowercase"}};
  expectFileRefused(j.dump(),
                    {"normalizer.type: expected a normalizer type, one of NFC", "got 'Lowercase' (not supported)"});
  j = smallTokenizer();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({{{"type", "Whitespace"}}})}};
  expectFileRefused(j.dump(), {"pre_tokenizer.pretokenizers[0].type: expected a pre-tokenizer type", "'Whitespace'"});
  j = smallTokenizer();
  j["model"]["type"] = "Unigram";
  expectFileRefused(j.dump(),
                    {"model.type: expected a model type, one of BPE, WordPiece, got 'Unigram' (not supported)"});
  j = smallTokenizer();
  j["model"]["type"] = "WordPiece";  // its unk_token (by default [UNK]) must be in the vocabulary
  expectFileRefused(j.dump(), {"model.unk_token: expected tokens in model.vocab, got '[UNK]', which is not"});
  j = smallTokenizer();
  j["decoder"] = {{"type", "CTC"}};
  expectFileRefused(j.dump(), {"decoder.type: expected a decoder type", "'CTC'"});
  j = smallTokenizer();
  j["post_processor"] = {{"type", "Whatever"}};
  expectFileRefused(j.dump(), {"post_processor.type: expected a post-processor type", "'Whatever'"});
  j = smallTokenizer();
  j["post_processor"] = {{"type", "RobertaProcessing"}};  // without its cls and sep
  expectFileRefused(j.dump(), {"post_processor.cls: expected an array, got null"});
  j = smallTokenizer();
  j["post_processor"]["special_tokens"]["<s>"]["ids"] = {99};
  expectFileRefused(j.dump(), {"post_processor.special_tokens['<s>'].ids[0]: expected an id with a token"});
  j = smallTokenizer();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expectFileRefused(j.dump(), {"pre_tokenizer.pattern.Regex: expected a regex Oniguruma accepts"});
  j = smallTokenizer();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "x"}}}, {"behavior", "Sideways"}};
  expectFileRefused(j.dump(), {"pre_tokenizer.behavior: expected Removed, Isolated"});
  j = smallTokenizer();
  j["model"]["dropout"] = 0.1;
  expectFileRefused(j.dump(), {"model.dropout: expected null or 0"});
  j = smallTokenizer();
  j["model"]["unk_token"] = "<unk>";
  expectFileRefused(j.dump(), {"model.unk_token: expected tokens in model.vocab, got '<unk>'"});
  j = smallTokenizer();
  j["truncation"] = {{"max_length", 8}};
  expectFileRefused(j.dump(), {"truncation: expected null"});
  j = smallTokenizer();
  j["added_tokens"][0]["lstrip"] = "yes";
  expectFileRefused(j.dump(), {"added_tokens[0].lstrip: expected true or false, got string \"yes\""});
}

// Trust round 4: templates naming what is not there. Each crashed (SIGSEGV: the message's JSON path read a
// Node that was gone); now each is refused at load with the path and the token.
TEST(TokenizeCli, HostilePostProcessors) {
  const json cls = {{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}};
  const json sep = {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}};
  const json seq_a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, seq_b = {{"Sequence", {{"id", "B"}, {"type_id", 1}}}};
  // `single` names [SEP], which special_tokens lacks.
  json j = smallTokenizer();
  j["post_processor"]["single"] = json::array({cls, seq_a, sep});
  expectFileRefused(j.dump(), {"post_processor.single[2].SpecialToken.id: expected a token named in special_tokens, "
                               "got '[SEP]', which is not"});
  // `pair` names it (attnscope encodes one sequence, but the file is checked whole, as tokenizers does).
  j = smallTokenizer();
  j["post_processor"]["pair"] = json::array({cls, seq_a, seq_b, sep});
  expectFileRefused(j.dump(), {"post_processor.pair[3].SpecialToken.id: expected a token named in special_tokens, "
                               "got '[SEP]', which is not"});
  // A special_tokens entry whose id has no token (ids run 0..6 here), whether or not a template uses it.
  j = smallTokenizer();
  j["post_processor"]["special_tokens"]["[MASK]"] = {{"id", "[MASK]"}, {"ids", {103}}, {"tokens", {"[MASK]"}}};
  expectFileRefused(j.dump(), {"post_processor.special_tokens['[MASK]'].ids[0]: expected an id with a token "
                               "(model.vocab or added_tokens), got 103 for '[MASK]', which has no token"});
  // ...or with no id at all for its token.
  j["post_processor"]["special_tokens"]["[MASK]"]["ids"] = json::array();
  expectFileRefused(j.dump(), {"post_processor.special_tokens['[MASK]'].tokens: expected 0 tokens, one for each of "
                               "ids, got 1"});
  // `single` holding the second sequence.
  j = smallTokenizer();
  j["post_processor"]["single"] = json::array({cls, seq_a, seq_b});
  expectFileRefused(j.dump(), {"post_processor.single[2].Sequence.id: expected \"A\" (the one sequence of `single`), "
                               "got 'B'"});
  // A Sequence post-processor holding such a template.
  j = smallTokenizer();
  json bad = j["post_processor"];
  bad["single"] = json::array({cls, seq_a, sep});
  j["post_processor"] = {{"type", "Sequence"}, {"processors", json::array({{{"type", "ByteLevel"}}, bad})}};
  expectFileRefused(j.dump(), {"post_processor.processors[1].single[2].SpecialToken.id", "'[SEP]'"});
  // The well-formed pair template of a BERT file is accepted: "hi" is <s> then "hi" (id 4).
  j = smallTokenizer();
  j["post_processor"]["pair"] = json::array({cls, seq_a, seq_b});
  const std::string dir = writeTokenizer(j.dump());
  const model_test::CommandRun r = attnscope("tokenize '" + dir + "' --text 'hi'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["ids"], json::parse("[6, 4]"));
}

TEST(TokenizeCli, BadUsageAndText) {
  const std::string dir = writeTokenizer(smallTokenizer().dump());
  expectRefused("tokenize '" + dir + "/nothing.json' --text hi", {"nothing.json"});
  expectRefused("tokenize '" + dir + "'", {"--text: expected the text to tokenize"});
  model_test::spit(dir + "/bad.txt", "bad \xff byte");
  expectRefused("tokenize '" + dir + "' --text-file '" + dir + "/bad.txt'",
                {"text: expected valid UTF-8, got byte 255 at offset 4"});
  model_test::spit(dir + "/tokenizer_config.json", "{\"tokenizer_class\": ");
  expectRefused("tokenize '" + dir + "' --text hi", {dir + "/tokenizer_config.json: expected JSON"});
}

}  // namespace
