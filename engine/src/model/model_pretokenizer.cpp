// GPT-2's pre-tokenizer regex, done by hand over Unicode code points. Letter, number and white-space classes
// come from ICU (libicu-dev): u_charType's general categories L* and N* are exactly \p{L} and \p{N}, and
// u_isUWhiteSpace is the White_Space property that Python's `regex` (GPT-2's own encoder.py) uses for \s.
#include <unicode/uchar.h>

#include <string>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/model/tokenizer.h"

namespace attnscope::model {

namespace {

struct CodePoint {
  char32_t c;
  std::size_t offset;  // byte offset in the text
};

// Strict UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF).
std::vector<CodePoint> decodeUtf8(const std::string& text) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    int len = 0;
    char32_t c = 0, min = 0;
    if (b < 0x80) {
      len = 1, c = b;
    } else if ((b & 0xE0) == 0xC0) {
      len = 2, c = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, c = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, c = b & 0x07, min = 0x10000;
    } else {
      throw InputError("text", "valid UTF-8", "byte " + std::to_string(b) + " at offset " + std::to_string(i));
    }
    if (i + static_cast<std::size_t>(len) > n)
      throw InputError("text", "valid UTF-8", "a character cut short at offset " + std::to_string(i));
    for (int k = 1; k < len; ++k) {
      if ((s[i + static_cast<std::size_t>(k)] & 0xC0) != 0x80)
        throw InputError("text", "valid UTF-8", "a broken character at offset " + std::to_string(i));
      c = (c << 6) | (s[i + static_cast<std::size_t>(k)] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
      throw InputError("text", "valid UTF-8", "an invalid character at offset " + std::to_string(i));
    out.push_back({c, i});
    i += static_cast<std::size_t>(len);
  }
  return out;
}

bool isLetter(char32_t c) {  // \p{L}: Lu Ll Lt Lm Lo
  const auto t = static_cast<UCharCategory>(u_charType(static_cast<UChar32>(c)));
  return t == U_UPPERCASE_LETTER || t == U_LOWERCASE_LETTER || t == U_TITLECASE_LETTER || t == U_MODIFIER_LETTER ||
         t == U_OTHER_LETTER;
}
bool isNumber(char32_t c) {  // \p{N}: Nd Nl No
  const auto t = static_cast<UCharCategory>(u_charType(static_cast<UChar32>(c)));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}
bool isSpace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }     // \s
bool isOther(char32_t c) { return !isSpace(c) && !isLetter(c) && !isNumber(c); }  // [^\s\p{L}\p{N}]

}  // namespace

std::vector<std::string> preTokenize(const std::string& text) {
  const std::vector<CodePoint> cps = decodeUtf8(text);
  const std::size_t n = cps.size();
  std::vector<std::string> pieces;
  const auto at = [&](std::size_t i) { return i < n ? cps[i].c : char32_t{0}; };
  const auto offset = [&](std::size_t i) { return i < n ? cps[i].offset : text.size(); };
  // Each alternative, tried in the regex's order at position i, returns the end of its match or i (no match).
  const auto run = [&](std::size_t i, bool (*cls)(char32_t)) {
    std::size_t j = i;
    while (j < n && cls(cps[j].c)) ++j;
    return j;
  };
  const auto optionalSpaceThen = [&](std::size_t i, bool (*cls)(char32_t)) {  // ` ?CLASS+`
    const std::size_t from = at(i) == U' ' ? i + 1 : i;
    if (from < n && cls(cps[from].c)) return run(from, cls);
    return i;
  };
  for (std::size_t i = 0; i < n;) {
    std::size_t end = i;
    // 's 't 're 've 'm 'll 'd (case-sensitive, as GPT-2's pattern has no IGNORECASE).
    if (at(i) == U'\'') {
      const char32_t a = at(i + 1), b = at(i + 2);
      if (a == U's' || a == U't' || a == U'm' || a == U'd')
        end = i + 2;
      else if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l'))
        end = i + 3;
    }
    if (end == i) end = optionalSpaceThen(i, isLetter);
    if (end == i) end = optionalSpaceThen(i, isNumber);
    if (end == i) end = optionalSpaceThen(i, isOther);
    if (end == i && isSpace(at(i))) {
      const std::size_t j = run(i, isSpace);
      // \s+(?!\S): the whole run at the end of the text; else the run less its last character, which
      // leaves that one for the next piece (" word"); a single space before a non-space falls to \s+.
      if (j == n)
        end = j;
      else if (j - 1 > i)
        end = j - 1;
      else
        end = j;
    }
    pieces.push_back(text.substr(offset(i), offset(end) - offset(i)));
    i = end;
  }
  return pieces;
}

}  // namespace attnscope::model
