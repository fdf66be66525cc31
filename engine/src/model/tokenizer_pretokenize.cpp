// Pre-tokenizers (ByteLevel, Split, Metaspace, Digits, Sequence) as `tokenizers` runs them: each cuts every
// piece by a pattern's matches and a split behaviour (normalizer.rs NormalizedString::split), dropping empty
// pieces; ByteLevel then maps each byte to GPT-2's printable symbol. Also GPT-2's own pre-tokenizer.
#include <unicode/uchar.h>

#include <algorithm>
#include <cstring>

#include "attnscope/model/tokenizer.h"
#include "model/tokenizer_spec.h"

namespace attnscope::model {

namespace tok {

namespace {

// GPT-2's pattern, which ByteLevel's use_regex applies (byte_level.rs).
const char* kByteLevelRegex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

using Span = std::pair<std::size_t, std::size_t>;

// normalizer.rs split(): the matches and gaps folded by behaviour into the spans kept.
std::vector<Span> applyBehavior(const std::vector<Pattern::Piece>& matches, SplitBehavior behavior) {
  std::vector<std::pair<Span, bool>> acc;  // (span, removed)
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const auto& m : matches) acc.push_back({{m.begin, m.end}, false});
      break;
    case SplitBehavior::Removed:
      for (const auto& m : matches) acc.push_back({{m.begin, m.end}, m.is_match});
      break;
    case SplitBehavior::Contiguous:
      for (const auto& m : matches) {
        if (m.is_match == previous_match && !acc.empty())
          acc.back().first.second = m.end;
        else
          acc.push_back({{m.begin, m.end}, false});
        previous_match = m.is_match;
      }
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const auto& m : matches) {
        if (m.is_match && !previous_match && !acc.empty())
          acc.back().first.second = m.end;
        else
          acc.push_back({{m.begin, m.end}, false});
        previous_match = m.is_match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (it->is_match && !previous_match && !acc.empty())
          acc.back().first.first = it->begin;
        else
          acc.push_back({{it->begin, it->end}, false});
        previous_match = it->is_match;
      }
      std::reverse(acc.begin(), acc.end());
      break;
  }
  std::vector<Span> kept;
  for (const auto& [span, removed] : acc)
    if (!removed) kept.push_back(span);
  return kept;
}

// pattern.rs's impl for Fn(char) -> bool: every matching character is a match of its own.
std::vector<Pattern::Piece> charMatches(const std::string& text, bool (*is)(char32_t, const std::string&),
                                        const std::string& arg) {
  if (text.empty()) return {{0, 0, false}};
  std::vector<Pattern::Piece> out;
  std::size_t last = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len = utf8Length(static_cast<unsigned char>(text[i]));
    if (is(codePointAt(text, i), arg)) {
      if (last < i) out.push_back({last, i, false});
      out.push_back({i, i + len, true});
      last = i + len;
    }
    i += len;
  }
  if (last < text.size()) out.push_back({last, text.size(), false});
  return out;
}

bool isNumeric(char32_t c, const std::string&) {  // Rust's char::is_numeric: Nd, Nl, No
  const auto t = static_cast<UCharCategory>(u_charType(static_cast<UChar32>(c)));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}
bool isChar(char32_t c, const std::string& ch) { return c == codePointAt(ch, 0); }
// BertPreTokenizer's classes: Rust's char::is_whitespace (White_Space); ASCII punctuation or Unicode P*.
bool isWhiteSpace(char32_t c, const std::string&) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }
bool isBertPunctuation(char32_t c, const std::string&) {
  if (c < 0x80)
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
  return u_ispunct(static_cast<UChar32>(c));  // Pc, Pd, Ps, Pe, Pi, Pf, Po
}

// Cuts every piece by `split` (a piece -> its spans); empty spans are dropped, as PreTokenizedString::split does.
template <class SplitFn>
void splitPieces(std::vector<Piece>& pieces, SplitFn split) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& piece : pieces) {
    for (const Span& s : split(piece.text)) {
      if (s.first == s.second) continue;
      out.push_back({piece.text.substr(s.first, s.second - s.first), piece.at_origin && s.first == 0});
    }
  }
  pieces.swap(out);
}

std::string replaceSpaces(const std::string& text, const std::string& with) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == ' ')
      out += with;
    else
      out += c;
  }
  return out;
}

}  // namespace

std::vector<Pattern::Piece> Pattern::findMatches(const std::string& text) const {
  if (text.empty()) return {{0, 0, false}};
  std::vector<Piece> out;
  std::size_t prev = 0;
  const auto add = [&](std::size_t s, std::size_t e) {
    if (prev != s) out.push_back({prev, s, false});
    out.push_back({s, e, true});
    prev = e;
  };
  if (regex.valid()) {
    for (const auto& [s, e] : regex.findAll(text)) add(s, e);
  } else {
    // memmem (glibc's two-way search): linear, where std::string::find may take text x literal bytes.
    for (std::size_t at = 0; at + literal.size() <= text.size();) {
      const void* hit = memmem(text.data() + at, text.size() - at, literal.data(), literal.size());
      if (!hit) break;
      const auto s = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
      add(s, s + literal.size());
      at = s + literal.size();
    }
  }
  if (prev != text.size()) out.push_back({prev, text.size(), false});
  return out;
}

const Regex& byteLevelRegex() {
  static const Regex regex(kByteLevelRegex, "ByteLevel regex");
  return regex;
}

std::vector<std::string> splitByteLevelRegex(const std::string& text) {
  std::vector<std::string> out;
  Pattern p;
  p.regex = byteLevelRegex();
  for (const Span& s : applyBehavior(p.findMatches(text), SplitBehavior::Isolated))
    if (s.first != s.second) out.push_back(text.substr(s.first, s.second - s.first));
  return out;
}

std::string byteLevelMap(const std::string& text) {
  const std::vector<std::string>& table = byteToUnicode();
  std::string out;
  out.reserve(text.size() * 2);
  for (char c : text) out += table[static_cast<unsigned char>(c)];
  return out;
}

void preTokenize(const PreTokenizer& p, std::vector<Piece>& pieces) {
  switch (p.kind) {
    case PreTokenizer::Kind::Sequence:
      for (const PreTokenizer& child : p.children) preTokenize(child, pieces);
      return;
    case PreTokenizer::Kind::Split:
      splitPieces(pieces, [&](const std::string& text) {
        std::vector<Pattern::Piece> m = p.pattern.findMatches(text);
        if (p.invert)
          for (auto& piece : m) piece.is_match = !piece.is_match;
        return applyBehavior(m, p.behavior);
      });
      return;
    case PreTokenizer::Kind::Bert:  // pre_tokenizers/bert.rs: white space removed, then punctuation isolated
      splitPieces(pieces, [](const std::string& text) {
        return applyBehavior(charMatches(text, isWhiteSpace, ""), SplitBehavior::Removed);
      });
      splitPieces(pieces, [](const std::string& text) {
        return applyBehavior(charMatches(text, isBertPunctuation, ""), SplitBehavior::Isolated);
      });
      return;
    case PreTokenizer::Kind::Digits:
      splitPieces(pieces, [&](const std::string& text) {
        return applyBehavior(charMatches(text, isNumeric, ""),
                             p.individual_digits ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
      });
      return;
    case PreTokenizer::Kind::Metaspace:
      for (Piece& piece : pieces) {
        piece.text = replaceSpaces(piece.text, p.replacement);
        const bool starts = piece.text.rfind(p.replacement, 0) == 0;
        if (!starts && (p.prepend_scheme == PrependScheme::Always ||
                        (p.prepend_scheme == PrependScheme::First && piece.at_origin)))
          piece.text = p.replacement + piece.text;
      }
      if (p.split)
        splitPieces(pieces, [&](const std::string& text) {
          return applyBehavior(charMatches(text, isChar, p.replacement), SplitBehavior::MergedWithNext);
        });
      return;
    case PreTokenizer::Kind::ByteLevel:
      if (p.add_prefix_space)
        for (Piece& piece : pieces)
          if (piece.text.empty() || piece.text[0] != ' ') piece.text = " " + piece.text;
      if (p.use_regex)
        splitPieces(pieces, [&](const std::string& text) {
          Pattern re;
          re.regex = byteLevelRegex();
          return applyBehavior(re.findMatches(text), SplitBehavior::Isolated);
        });
      for (Piece& piece : pieces) piece.text = byteLevelMap(piece.text);
      return;
  }
}

}  // namespace tok

std::vector<std::string> preTokenize(const std::string& text) {
  tok::checkUtf8(text, "text");
  return tok::splitByteLevelRegex(text);
}

}  // namespace attnscope::model
