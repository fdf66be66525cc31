// Quoting and eliding outside text: UTF-8 walked character by character, invalid bytes and control characters
// escaped, lengths bounded.
#include "attnscope/text_bounds.h"

namespace attnscope {

namespace {

// Length of the valid UTF-8 character at text[i] (1 to 4), or 0 when the byte there starts none.
std::size_t validCharLength(std::string_view text, std::size_t i) {
  const auto b = static_cast<unsigned char>(text[i]);
  const std::size_t len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 0;
  if (len == 2 && b < 0xC2) return 0;  // overlong
  if (len == 3) {
    const auto b1 = static_cast<unsigned char>(text[i + 1]);
    if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 >= 0xA0)) return 0;  // overlong, surrogate
  }
  if (len == 4) {
    const auto b1 = static_cast<unsigned char>(text[i + 1]);
    if ((b == 0xF0 && b1 < 0x90) || b > 0xF4 || (b == 0xF4 && b1 >= 0x90)) return 0;  // overlong, past U+10FFFF
  }
  return len;
}

// Bytes of the character at text[i]: its UTF-8 length, or 1 for a byte that starts none.
std::size_t charBytes(std::string_view text, std::size_t i) {
  const std::size_t len = validCharLength(text, i);
  return len ? len : 1;
}

// Appends the character at text[i] printably; returns its byte count.
std::size_t appendPrintable(std::string_view text, std::size_t i, bool escape_quote, std::string& out) {
  static const char* hex = "0123456789abcdef";
  const std::size_t len = validCharLength(text, i);
  const auto b = static_cast<unsigned char>(text[i]);
  if (len > 1 && !(len == 2 && b == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0)) {  // not C1 controls
    out.append(text.substr(i, len));
    return len;
  }
  if (len == 1 && b >= 0x20 && b != 0x7F) {
    if (escape_quote && (b == '\'' || b == '\\')) out += '\\';  // inside quotes, a quote or backslash is escaped
    out += static_cast<char>(b);
    return 1;
  }
  if (b == '\n')
    out += "\\n";
  else if (b == '\t')
    out += "\\t";
  else if (b == '\r')
    out += "\\r";
  else {
    // One escaped byte each: a control character, or a byte of invalid UTF-8 (and the C1 controls' two bytes).
    const std::size_t n = len == 2 ? 2 : 1;
    for (std::size_t k = 0; k < n; ++k) {
      const auto byte = static_cast<unsigned char>(text[i + k]);
      out += "\\x";
      out += hex[byte >> 4];
      out += hex[byte & 15];
    }
    return n;
  }
  return 1;
}

}  // namespace

std::size_t utf8Length(std::string_view text) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); i += charBytes(text, i)) ++chars;
  return chars;
}

std::string elideLabel(std::string_view text, std::size_t max_chars) {
  if (max_chars == 0) return {};
  std::size_t i = 0, chars = 0, cut = 0;  // cut: bytes of the first max_chars - 1 characters
  for (; i < text.size() && chars < max_chars; ++chars) {
    if (chars + 1 == max_chars) cut = i;
    i += charBytes(text, i);
  }
  if (i >= text.size()) return std::string(text);  // it fits: max_chars or fewer characters
  return std::string(text.substr(0, cut)) + "…";
}

std::string quoteFragment(std::string_view text, std::size_t max_chars) {
  std::string out = "'";
  std::size_t i = 0, chars = 0;
  while (i < text.size() && chars < max_chars) {
    i += appendPrintable(text, i, true, out);
    ++chars;
  }
  if (i < text.size()) return out + "…' (" + std::to_string(text.size()) + " bytes)";
  return out + "'";
}

std::string printableLine(std::string_view message, std::size_t max_bytes) {
  std::string out;
  std::size_t i = 0;
  while (i < message.size() && out.size() < max_bytes) i += appendPrintable(message, i, false, out);
  if (i < message.size()) out += "… (" + std::to_string(message.size() - i) + " more bytes)";
  return out;
}

std::string terminalLabel(std::string_view label, std::size_t max_chars) {
  return printableLine(elideLabel(label, max_chars), 4 * max_chars + 8);  // escapes take up to 4 bytes a byte
}

}  // namespace attnscope
