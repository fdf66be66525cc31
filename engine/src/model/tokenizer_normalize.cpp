// Normalizers (NFC, NFKC, NFD, NFKD through ICU's Normalizer2; Prepend; Replace; Sequence) and the UTF-8
// helpers every tokenizer stage shares. Text is UTF-8 throughout; it is checked once, on the way in.
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include "attnscope/error.h"
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

namespace {

std::string icuNormalize(const icu::Normalizer2* (*instance)(UErrorCode&), const std::string& text) {
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

std::string Pattern::replaceAll(const std::string& text, const std::string& content) const {
  std::string out;
  for (const Piece& p : findMatches(text)) out += p.is_match ? content : text.substr(p.begin, p.end - p.begin);
  return out;
}

std::string normalize(const Normalizer& n, const std::string& text) {
  switch (n.kind) {
    case Normalizer::Kind::NFC:
      return icuNormalize(&icu::Normalizer2::getNFCInstance, text);
    case Normalizer::Kind::NFKC:
      return icuNormalize(&icu::Normalizer2::getNFKCInstance, text);
    case Normalizer::Kind::NFD:
      return icuNormalize(&icu::Normalizer2::getNFDInstance, text);
    case Normalizer::Kind::NFKD:
      return icuNormalize(&icu::Normalizer2::getNFKDInstance, text);
    case Normalizer::Kind::Prepend:
      return text.empty() ? text : n.text + text;  // prepend.rs: nothing is prepended to an empty string
    case Normalizer::Kind::Replace:
      return n.pattern.replaceAll(text, n.text);
    case Normalizer::Kind::Sequence: {
      std::string s = text;
      for (const Normalizer& child : n.children) s = normalize(child, s);
      return s;
    }
  }
  return text;
}

}  // namespace attnscope::model::tok
