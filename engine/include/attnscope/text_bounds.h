// Bounding text that came from outside before it is shown: one function quotes a fragment of input in an error
// line (short, printable), one elides a label to the space it gets (figures, the window, the terminal).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attnscope {

// How much of the offending input an error line quotes.
constexpr std::size_t kQuotedChars = 80;

// 'text' in single quotes, at most `max_chars` characters of it, printable: control characters and bytes that
// are not UTF-8 become \n, \t, \xNN; a quote or backslash is escaped. A longer text ends "…' (N bytes)".
// Every error message quotes input through this.
std::string quoteFragment(std::string_view text, std::size_t max_chars = kQuotedChars);

// Characters (UTF-8 code points; each invalid byte counts as one) in `text`.
std::size_t utf8Length(std::string_view text);

// `text` cut to at most `max_chars` characters, the last being "…" when anything was cut; never splits a
// character. Labels in figures, the window and the terminal go through this. max_chars 0 gives "".
std::string elideLabel(std::string_view text, std::size_t max_chars);

// The same, by width: `width_of(prefix)` is the width of a candidate; the longest prefix (plus "…") that fits
// `max_width` is kept, found by bisection (O(log n) measurements of at most `max_chars` characters, so a 30,000
// character label costs what a short one does).
template <typename WidthOf>
std::string elideToWidth(std::string_view text, double max_width, WidthOf width_of, std::size_t max_chars = 256) {
  std::string whole = elideLabel(text, max_chars);
  if (width_of(whole) <= max_width) return whole;
  std::size_t lo = 0, hi = utf8Length(whole);  // lo characters (plus "…") fit; hi do not
  while (hi - lo > 1) {
    const std::size_t mid = (lo + hi) / 2;
    if (width_of(elideLabel(whole, mid + 1)) <= max_width)
      lo = mid;
    else
      hi = mid;
  }
  return lo == 0 ? (width_of("…") <= max_width ? std::string("…") : std::string()) : elideLabel(whole, lo + 1);
}

// A label for the terminal (the walkthrough's matrices, model's token list): elided to `max_chars`, then made
// printable. A label printed in every matrix costs at most this, whatever the input holds.
constexpr std::size_t kTerminalLabelChars = 16;
std::string terminalLabel(std::string_view label, std::size_t max_chars = kTerminalLabelChars);

// A whole message made fit for one terminal line: printable (as quoteFragment escapes), at most `max_bytes`
// long. main() passes every error through this, so that no input can make stderr unbounded.
std::string printableLine(std::string_view message, std::size_t max_bytes = 600);

}  // namespace attnscope
