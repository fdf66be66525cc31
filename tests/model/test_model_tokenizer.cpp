// GPT-2's tokenizer on hand-worked cases: the pre-tokenizer's every rule, the byte-to-unicode map, BPE merges
// by rank on a tiny vocabulary, labels, round trips, and broken vocab/merges files. (The peer comparison on
// GPT-2's real vocabulary is test_model_tokenizer_peer.cpp.)
#include <gtest/gtest.h>

#include "attnscope/error.h"
#include "attnscope/model/tokenizer.h"
#include "model/test_model_support.h"

namespace model = attnscope::model;
using Pieces = std::vector<std::string>;

namespace {

TEST(ModelPreTokenizer, EveryRule) {
  EXPECT_EQ(model::preTokenize("Hello world"), (Pieces{"Hello", " world"}));
  // Contractions are lower-case only: "'S" is punctuation then a letter run.
  EXPECT_EQ(model::preTokenize("it's we're I'd IT'S"), (Pieces{"it", "'s", " we", "'re", " I", "'d", " IT", "'", "S"}));
  EXPECT_EQ(model::preTokenize("you'll they've I'm don't"),
            (Pieces{"you", "'ll", " they", "'ve", " I", "'m", " don", "'t"}));
  EXPECT_EQ(model::preTokenize("x 123 !!"), (Pieces{"x", " 123", " !!"}));
  EXPECT_EQ(model::preTokenize("a1b2"), (Pieces{"a", "1", "b", "2"}));
  // \s+(?!\S): a run of spaces before a word leaves its last space to the word.
  EXPECT_EQ(model::preTokenize("  a"), (Pieces{" ", " a"}));
  EXPECT_EQ(model::preTokenize("a   b"), (Pieces{"a", "  ", " b"}));
  // Newlines are white space but not the optional ' ': "\n\nb" is "\n" then "\n" then "b".
  EXPECT_EQ(model::preTokenize("a  \n\nb"), (Pieces{"a", "  \n", "\n", "b"}));
  EXPECT_EQ(model::preTokenize("end   "), (Pieces{"end", "   "}));  // trailing run, to the end
  EXPECT_EQ(model::preTokenize("\n"), (Pieces{"\n"}));
  EXPECT_EQ(model::preTokenize(" \t!x"), (Pieces{" ", "\t", "!", "x"}));
  // Letters and numbers beyond ASCII: Cyrillic, CJK, Devanagari digits, superscript two (No), Roman numeral (Nl).
  EXPECT_EQ(model::preTokenize("мир 世界 ४२ x² Ⅻ"), (Pieces{"мир", " 世界", " ४२", " x", "²", " Ⅻ"}));
  // An emoji is neither letter nor number: punctuation-like, and joins its neighbours of the same class.
  EXPECT_EQ(model::preTokenize("hi 👋🏽!"), (Pieces{"hi", " 👋🏽!"}));
  EXPECT_TRUE(model::preTokenize("").empty());
  EXPECT_THROW(model::preTokenize("bad \xff byte"), attnscope::InputError);
  EXPECT_THROW(model::preTokenize("cut \xe2\x82"), attnscope::InputError);
  EXPECT_THROW(model::preTokenize("overlong \xc0\xaf"), attnscope::InputError);
}

TEST(ModelTokenizer, ByteToUnicode) {
  const auto& t = model::byteToUnicode();
  EXPECT_EQ(t['A'], "A");
  EXPECT_EQ(t[' '], "\u0120");   // 'Ġ': 33 non-printables come before the space (0..32), so 256 + 32
  EXPECT_EQ(t['\n'], "\u010A");  // 'Ċ': 256 + 10
  EXPECT_EQ(t[0], "\u0100");
  EXPECT_EQ(t[0x7F], "\u0121");  // DEL: the 34th non-printable
  EXPECT_EQ(t[0xAD], "\u0143");  // soft hyphen: the last (68th) non-printable, 256 + 67
  EXPECT_EQ(t[0xE9], "\u00E9");  // é stands for itself
}

class TinyTokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = new std::string(model_test::tinyCheckpoint()); }
  static void TearDownTestSuite() { delete dir_; }
  static model::Tokenizer load() { return model::Tokenizer::load(*dir_ + "/vocab.json", *dir_ + "/merges.txt"); }
  static std::string* dir_;
};
std::string* TinyTokenizer::dir_ = nullptr;

TEST_F(TinyTokenizer, MergesByRank) {
  const model::Tokenizer t = load();
  // merges: h e, l l, he ll, hell o, Ġ t, Ġt h, e r, Ġth er, Ġther e. "hello" merges all the way; in
  // " there" "h e" (rank 0) goes first and takes the h that "Ġt h" needed: Ġt he r e.
  std::vector<std::string> labels;
  for (int id : t.encode("hello there")) labels.push_back(t.label(id));
  EXPECT_EQ(labels, (Pieces{"hello", "\u2423t", "he", "r", "e"}));
  labels.clear();
  for (int id : t.encode("hell\n")) labels.push_back(t.label(id));
  EXPECT_EQ(labels, (Pieces{"hell", "\u21B5"}));
  for (const std::string& s : std::vector<std::string>{"hello there", "", "  x\n\n",
                                                       "Ünïcödé 世界 👋🏽 it's 42", std::string("a\0b", 3)})
    EXPECT_EQ(t.decode(t.encode(s)), s);
}

TEST_F(TinyTokenizer, Labels) {
  EXPECT_EQ(model::tokenLabel(" the"), "\u2423the");
  EXPECT_EQ(model::tokenLabel("\t\n"), "\u21E5\u21B5");
  EXPECT_EQ(model::tokenLabel("\xf0\x9f"), "<0xF0><0x9F>");  // half an emoji
  EXPECT_EQ(model::tokenLabel("é"), "é");
}

TEST(ModelTokenizerFiles, BrokenVocabAndMerges) {
  const std::string dir = model_test::tinyCheckpoint();
  const std::string vocab = model_test::slurp(dir + "/vocab.json");
  const std::string merges = model_test::slurp(dir + "/merges.txt");
  const auto message = [&](const std::string& v, const std::string& m) -> std::string {
    try {
      model::Tokenizer::fromText(v, m);
    } catch (const attnscope::InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message(vocab, merges), "no error");
  EXPECT_NE(message("{\"a\": 1", merges).find("vocab.json: expected valid JSON"), std::string::npos);
  EXPECT_NE(message("[1, 2]", merges).find("vocab.json: expected a JSON object"), std::string::npos);
  EXPECT_NE(message("{\"a\": -1}", merges).find("vocab.json: token 'a': expected an id"), std::string::npos);
  EXPECT_NE(message("{\"a\": 1, \"b\": 1}", merges).find("an id no other token has"), std::string::npos);
  EXPECT_NE(message("{\"A\": 0}", merges).find("a token for every byte"), std::string::npos);
  EXPECT_NE(message(vocab, "#version: 0.2\nh e x\n").find("merges.txt: line 2: expected two symbols"),
            std::string::npos);
  EXPECT_NE(message(vocab, "#version: 0.2\nh qq\n").find("merges.txt: line 2: expected symbols in vocab.json"),
            std::string::npos);
  EXPECT_NE(message(vocab, "a b\n").find("merges.txt: line 1: expected a merge whose result is in vocab.json"),
            std::string::npos);
}

}  // namespace
