// Bounded JSON reading: size (readWholeFile), nesting (a scan that skips strings), and errors rebuilt from
// nlohmann's byte position instead of its text, which quotes the last token whole.
#include "attnscope/json_file.h"

#include <algorithm>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/text_bounds.h"

namespace attnscope {

namespace {

// The first byte where nesting passes max_depth, or npos. Brackets inside strings do not count.
std::size_t tooDeepAt(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      depth = std::max(0, depth - 1);
    }
  }
  return std::string_view::npos;
}

// nlohmann's message less its prefix and its "last read: '...'" (the last token whole, megabytes for an
// unterminated string): "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error
// while parsing value - invalid literal; last read: 'x'" -> "syntax error while parsing value - invalid literal".
std::string parseReason(const std::string& what) {
  std::size_t from = what.find(": ", what.find("column"));
  from = from == std::string::npos ? 0 : from + 2;
  const std::size_t last_read = what.find("; last read", from);
  std::string reason = what.substr(from, last_read == std::string::npos ? std::string::npos : last_read - from);
  const std::size_t expected = what.rfind("; expected ");
  if (last_read != std::string::npos && expected != std::string::npos && expected > last_read)
    reason += what.substr(expected);
  return elideLabel(reason, 160);
}

}  // namespace

std::string lineColumn(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::size_t line =
      1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
  const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const std::size_t start = line_start == std::string_view::npos || offset == 0 ? 0 : line_start + 1;
  return "line " + std::to_string(line) + ", column " +
         std::to_string(utf8Length(text.substr(start, offset - start)) + 1);
}

void refuseNulBytes(std::string_view text, const std::string& name) {
  if (const std::size_t at = text.find('\0'); at != std::string_view::npos)
    throw InputError(name, "one JSON value and nothing after it but whitespace",
                     "a NUL byte at " + lineColumn(text, at) + " (byte " + std::to_string(at) + " of " +
                         std::to_string(text.size()) + ")");
}

nlohmann::json parseJsonText(std::string_view text, const std::string& name, int max_depth) {
  refuseNulBytes(text, name);
  if (const std::size_t at = tooDeepAt(text, max_depth); at != std::string_view::npos)
    throw InputError(name, "JSON nested at most " + std::to_string(max_depth) + " deep",
                     "deeper nesting at " + lineColumn(text, at));
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte: 1-based position of the byte that failed. Quoted from a little before it.
    const std::size_t at = e.byte > 0 ? std::min<std::size_t>(e.byte - 1, text.size()) : 0;
    std::size_t from = at > 20 ? at - 20 : 0;
    while (from > 0 && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) --from;  // a character's start
    const std::string near =
        text.empty() ? " (the text is empty)" : ", near " + quoteFragment(text.substr(from, 160), 40);
    throw InputError(name, "valid JSON",
                     "a syntax error at " + lineColumn(text, at) + ": " + parseReason(e.what()) + near);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number that overflows a double (1e999) is refused while parsing, before any path is known; its
    // literal is in the message and, found in the text, gives the position.
    const std::string what = e.what();
    const std::string marker = "number overflow parsing '";
    const std::size_t from = what.find(marker);
    if (from == std::string::npos) throw InputError(name, "valid JSON", elideLabel(what, 160));
    std::string literal = what.substr(from + marker.size());
    if (!literal.empty() && literal.back() == '\'') literal.pop_back();
    std::string where;
    if (const std::size_t pos = text.find(literal); pos != std::string_view::npos)
      where = " at " + lineColumn(text, pos);
    throw InputError(name, "finite numbers", quoteFragment(literal, 40) + where + " (too large: not finite)");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(name, "valid JSON", elideLabel(e.what(), 160));
  }
}

nlohmann::json readJsonFile(const std::string& path, std::size_t max_bytes, int max_depth) {
  return parseJsonText(readWholeFile(path, path, max_bytes), path, max_depth);
}

std::string describeJson(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::array:
      return "an array of " + std::to_string(v.size()) + " items";
    case nlohmann::json::value_t::object:
      return "an object of " + std::to_string(v.size()) + " keys";
    case nlohmann::json::value_t::string:
      return "string " + quoteFragment(v.get_ref<const std::string&>());
    default:
      return std::string(v.type_name()) + " " + elideLabel(v.dump(), kQuotedChars);
  }
}

}  // namespace attnscope
