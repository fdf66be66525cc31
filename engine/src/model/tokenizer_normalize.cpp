// Normalizers (NFC, NFKC, NFD, NFKD through ICU's Normalizer2; Prepend; Replace; Sequence) and the UTF-8
// helpers every tokenizer stage shares. Text is UTF-8 throughout; it is checked once, on the way in.
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

#include "attnscope/error.h"
#include "attnscope/scene/scene.h"
#include "model/tokenizer_spec.h"

namespace attnscope::model::tok {

std::size_t utf8Length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

char32_t codePointAt(const std::string& s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const std::size_t len = utf8Length(b);
  char32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (std::size_t k = 1; k < len && i + k < s.size(); ++k)
    c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return c;
}

// Strict UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF).
void checkUtf8(const std::string& text, const std::string& field) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    std::size_t len = 0;
    char32_t c = 0, min = 0;
    if (b < 0x80) {
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      len = 2, c = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, c = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, c = b & 0x07, min = 0x10000;
    } else {
      throw InputError(field, "valid UTF-8", "byte " + std::to_string(b) + " at offset " + std::to_string(i));
    }
    if (i + len > n) throw InputError(field, "valid UTF-8", "a character cut short at offset " + std::to_string(i));
    for (std::size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        throw InputError(field, "valid UTF-8", "a broken character at offset " + std::to_string(i));
      c = (c << 6) | (s[i + k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
      throw InputError(field, "valid UTF-8", "an invalid character at offset " + std::to_string(i));
    i += len;
  }
}

void checkCombiningRuns(const std::string& text, const std::string& where) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfkd = icu::Normalizer2::getNFKDInstance(status);
  if (U_FAILURE(status)) throw InputError(where, "ICU's NFKD data", u_errorName(status));
  icu::UnicodeString decomposition;
  std::size_t run = 0;  // non-starters since the last starter
  const auto count = [&](UChar32 c, std::size_t at) {
    run = u_getCombiningClass(c) == 0 ? 0 : run + 1;
    if (run > kMaxCombiningRun)
      throw InputError(where,
                       "runs of at most " + std::to_string(kMaxCombiningRun) +
                           " combining marks (non-starters, counted in NFKD; canonical reordering costs the square "
                           "of a run)",
                       "a longer run at byte " + std::to_string(at));
  };
  for (std::size_t i = 0; i < text.size(); i += utf8Length(static_cast<unsigned char>(text[i]))) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {  // ASCII: a starter with no decomposition
      run = 0;
      continue;
    }
    const auto c = static_cast<UChar32>(codePointAt(text, i));
    if (!nfkd->getDecomposition(c, decomposition)) {
      count(c, i);
      continue;
    }
    for (int32_t k = 0; k < decomposition.length();) {
      const UChar32 d = decomposition.char32At(k);
      count(d, i);
      k += U16_LENGTH(d);
    }
  }
}

namespace {

// Refuses a run of marks past kMaxCombiningRun first: ICU sorts a run by insertion (a million marks of
// alternating classes took minutes).
std::string icuNormalize(const icu::Normalizer2* (*instance)(UErrorCode&), const std::string& text,
                         const std::string& where) {
  checkCombiningRuns(text, where);
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = instance(status);
  const icu::UnicodeString in = icu::UnicodeString::fromUTF8(text);
  if (U_SUCCESS(status) && n->isNormalized(in, status) && U_SUCCESS(status)) return text;  // the common case
  status = U_ZERO_ERROR;
  const icu::UnicodeString out = n->normalize(in, status);
  if (U_FAILURE(status)) throw InputError("text", "text ICU can normalise", u_errorName(status));
  std::string bytes;
  out.toUTF8String(bytes);
  return bytes;
}

}  // namespace

std::size_t growthLimit(std::size_t origin) {
  const std::size_t grown = origin > (SIZE_MAX - kNormalizedSlack) / kMaxNormalizedGrowth
                                ? SIZE_MAX
                                : origin * kMaxNormalizedGrowth + kNormalizedSlack;
  return std::min(grown, defaultMemoryBudget() / 4);
}

void checkGrowth(const std::string& where, std::size_t origin, std::size_t bytes) {
  const std::size_t limit = growthLimit(origin);
  if (bytes <= limit) return;
  throw InputError(where,
                   "a component that keeps " + std::to_string(origin) + " bytes of text within " + byteString(limit) +
                       " (" + std::to_string(kMaxNormalizedGrowth) + " times plus " + std::to_string(kNormalizedSlack) +
                       " bytes, and a quarter of the memory budget)",
                   "a text of " + byteString(bytes) + " after it");
}

std::size_t replacedSize(const std::vector<Pattern::Piece>& pieces, const std::string& content) {
  std::size_t bytes = 0;
  for (const Pattern::Piece& p : pieces) {
    const std::size_t add = p.is_match ? content.size() : p.end - p.begin;
    bytes = add > SIZE_MAX - bytes ? SIZE_MAX : bytes + add;
  }
  return bytes;
}

std::string replacePieces(const std::string& text, const std::vector<Pattern::Piece>& pieces,
                          const std::string& content) {
  std::string out;
  out.reserve(replacedSize(pieces, content));
  for (const Pattern::Piece& p : pieces)
    if (p.is_match)
      out += content;
    else
      out.append(text, p.begin, p.end - p.begin);
  return out;
}

namespace {

const char* kindName(Normalizer::Kind kind) {
  switch (kind) {
    case Normalizer::Kind::NFC:
      return "NFC";
    case Normalizer::Kind::NFKC:
      return "NFKC";
    case Normalizer::Kind::NFD:
      return "NFD";
    case Normalizer::Kind::NFKD:
      return "NFKD";
    case Normalizer::Kind::Prepend:
      return "Prepend";
    case Normalizer::Kind::Replace:
      return "Replace";
    case Normalizer::Kind::Bert:
      return "BertNormalizer";
    case Normalizer::Kind::Sequence:
      return "Sequence";
  }
  return "?";
}

// normalizers/bert.rs's character classes, through ICU: control is `is_other` (Cc, Cf, Cn, Co, Cs) but tab, LF
// and CR, which are white space (else Rust's char::is_whitespace, White_Space); the CJK ideograph blocks.
bool isBertControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const auto t = static_cast<UCharCategory>(u_charType(static_cast<UChar32>(c)));
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR || t == U_UNASSIGNED || t == U_PRIVATE_USE_CHAR || t == U_SURROGATE;
}
bool isChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// One character lowercased as Rust's char::to_lowercase: the full mapping (U+0130 -> i + U+0307), no context (a
// final capital sigma is σ, as tokenizers lowercases character by character).
void appendLower(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  UChar in[2], low[8];
  int32_t n = 0;
  U16_APPEND_UNSAFE(in, n, static_cast<UChar32>(c));
  UErrorCode status = U_ZERO_ERROR;
  const int32_t len = u_strToLower(low, 8, in, n, "", &status);
  if (U_FAILURE(status)) {  // no mapping ICU can write: the character as it is
    out += utf8(c);
    return;
  }
  for (int32_t i = 0; i < len;) {
    UChar32 cp;
    U16_NEXT(low, i, len, cp);
    out += utf8(static_cast<char32_t>(cp));
  }
}

// BertNormalizer (normalize_str): clean_text, handle_chinese_chars, strip_accents, lowercase, in that order.
std::string bertNormalize(const Normalizer& n, const std::string& text) {
  std::string s;
  s.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); i += utf8Length(static_cast<unsigned char>(text[i]))) {
    const char32_t c = codePointAt(text, i);
    if (n.clean_text && (c == 0 || c == 0xFFFD || isBertControl(c))) continue;
    if (n.clean_text && (c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace(static_cast<UChar32>(c)))) {
      s += ' ';
    } else if (n.handle_chinese_chars && isChineseChar(c)) {
      s += ' ' + utf8(c) + ' ';
    } else {
      s += utf8(c);
    }
  }
  if (n.strip_accents) {  // NFD, then every non-spacing mark (Mn) dropped
    const std::string nfd = icuNormalize(&icu::Normalizer2::getNFDInstance, s, n.where + " (BertNormalizer)");
    s.clear();
    for (std::size_t i = 0; i < nfd.size(); i += utf8Length(static_cast<unsigned char>(nfd[i]))) {
      const char32_t c = codePointAt(nfd, i);
      if (u_charType(static_cast<UChar32>(c)) != U_NON_SPACING_MARK) s += utf8(c);
    }
  }
  if (n.lowercase) {
    std::string low;
    low.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); i += utf8Length(static_cast<unsigned char>(s[i])))
      appendLower(codePointAt(s, i), low);
    s.swap(low);
  }
  return s;
}

// Each component's text checked against the size of the text the normalizer was given (`origin`).
std::string normalizeWithin(const Normalizer& n, const std::string& text, std::size_t origin) {
  const std::string where = n.where + " (" + kindName(n.kind) + ")";
  switch (n.kind) {
    case Normalizer::Kind::NFC:
    case Normalizer::Kind::NFKC:
    case Normalizer::Kind::NFD:
    case Normalizer::Kind::NFKD: {
      // ICU's expansions are bounded (18 characters for one at most), so the text is checked once written.
      const auto instance = n.kind == Normalizer::Kind::NFC    ? &icu::Normalizer2::getNFCInstance
                            : n.kind == Normalizer::Kind::NFKC ? &icu::Normalizer2::getNFKCInstance
                            : n.kind == Normalizer::Kind::NFD  ? &icu::Normalizer2::getNFDInstance
                                                               : &icu::Normalizer2::getNFKDInstance;
      std::string out = icuNormalize(instance, text, where);
      checkGrowth(where, origin, out.size());
      return out;
    }
    case Normalizer::Kind::Prepend:  // prepend.rs: nothing is prepended to an empty string
      if (text.empty()) return text;
      checkGrowth(where, origin, text.size() + std::min(n.text.size(), SIZE_MAX - text.size()));
      return n.text + text;
    case Normalizer::Kind::Replace: {
      // The size is counted from the matches before anything is written (matches x replacement may be huge).
      const std::vector<Pattern::Piece> pieces = n.pattern.findMatches(text);
      checkGrowth(where, origin, replacedSize(pieces, n.text));
      return replacePieces(text, pieces, n.text);
    }
    case Normalizer::Kind::Bert: {  // at most 3 x (a CJK ideograph's spaces), ICU's NFD and lowercase bounded
      std::string out = bertNormalize(n, text);
      checkGrowth(where, origin, out.size());
      return out;
    }
    case Normalizer::Kind::Sequence: {
      std::string s = text;
      for (const Normalizer& child : n.children) s = normalizeWithin(child, s, origin);
      return s;
    }
  }
  return text;
}

}  // namespace

std::string normalize(const Normalizer& n, const std::string& text) { return normalizeWithin(n, text, text.size()); }

}  // namespace attnscope::model::tok
