// The token strip's words (model::tokenWords): byte-level pieces read as words, bytes split across tokens merged
// into their character, WordPiece's "##" continuations joined; each case worked by hand from the labels
// (tokenLabel's: U+2423 a space, U+21B5 a newline, <0xNN> a byte that is not a whole character).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attnscope/model/tokenizer.h"

namespace {

using attnscope::model::TokenWord;
using attnscope::model::tokenWords;

std::vector<std::string> texts(const std::vector<TokenWord>& words) {
  std::vector<std::string> out;
  for (const TokenWord& w : words) out.push_back(w.text);
  return out;
}

TEST(TokenWords, ByteLevelPiecesReadAsWords) {
  // GPT-2's "hello there cats!": hello, ␣there, ␣c, ats, ! -> three words, the last of three tokens.
  const std::vector<TokenWord> w = tokenWords({"hello", "\u2423there", "\u2423c", "ats", "!"});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(texts(w), (std::vector<std::string>{"hello", "there", "cats!"}));
  EXPECT_EQ(w[2].first, 2);
  EXPECT_EQ(w[2].last, 4);
}

TEST(TokenWords, BytesSplitAcrossTokensMergeIntoTheirCharacter) {
  // "caf\u00e9 ok": é is C3 A9, split over two byte tokens; a lone C3 at the end is not a character: a word of
  // that token alone reads as its label; within a longer word it is U+FFFD.
  const std::vector<TokenWord> w = tokenWords({"caf", "<0xC3>", "<0xA9>", "\u2423ok", "\u2423<0xC3>", "\u2423a", "<0xC3>"});
  EXPECT_EQ(texts(w), (std::vector<std::string>{"caf\u00e9", "ok", "\u2423<0xC3>", "a\uFFFD"}));
}

TEST(TokenWords, RandomBytesReadAsTheirLabels) {
  // Random byte tokens (the tiny trained model's repeated text): a control byte and a lone byte read as their
  // labels, a printable one as itself.
  const std::vector<TokenWord> w = tokenWords({"&", "<0xD7>", "<0x10>", "~"});
  EXPECT_EQ(texts(w), (std::vector<std::string>{"&", "<0xD7>", "<0x10>", "~"}));
}

TEST(TokenWords, NewlinesEndWordsAndStandAlone) {
  // "a\nb": a, ↵, b -> a word after the newline too; the newline alone keeps its label.
  const std::vector<TokenWord> w = tokenWords({"\u2423a", "\u21B5", "b"});
  EXPECT_EQ(texts(w), (std::vector<std::string>{"a", "\u21B5", "b"}));
}

TEST(TokenWords, WordPieceJoinsItsContinuationsAndOtherwiseEveryTokenIsAWord) {
  const std::vector<TokenWord> w = tokenWords({"[CLS]", "play", "##ing", "cards", "[SEP]"});
  EXPECT_EQ(texts(w), (std::vector<std::string>{"[CLS]", "playing", "cards", "[SEP]"}));
  EXPECT_EQ(w[1].first, 1);
  EXPECT_EQ(w[1].last, 2);
  EXPECT_TRUE(tokenWords({}).empty());
}

}  // namespace
