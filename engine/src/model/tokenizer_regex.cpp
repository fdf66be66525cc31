// Oniguruma, the regex engine Hugging Face `tokenizers` runs (through the onig crate): patterns compiled with
// the default syntax for UTF-8, matches found as the crate's find_iter finds them.
#include <oniguruma.h>

#include <mutex>

#include "attnscope/error.h"
#include "model/tokenizer_spec.h"

namespace attnscope::model::tok {

struct Regex::Impl {
  OnigRegex regex = nullptr;
  ~Impl() {
    if (regex) onig_free(regex);
  }
};

namespace {
void initOniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}
}  // namespace

Regex::Regex(const std::string& pattern, const std::string& field) {
  initOniguruma();
  auto impl = std::make_shared<Impl>();
  OnigErrorInfo info;
  const auto* begin = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int r = onig_new(&impl->regex, begin, begin + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                         ONIG_SYNTAX_DEFAULT, &info);
  if (r != ONIG_NORMAL) {
    OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(message, r, &info);
    impl->regex = nullptr;
    throw InputError(field, "a regex Oniguruma accepts",
                     "'" + pattern.substr(0, 80) + "' (" + reinterpret_cast<const char*>(message) + ")");
  }
  impl_ = std::move(impl);
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::findAll(const std::string& text) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  OnigRegion* region = onig_region_new();
  const auto* str = reinterpret_cast<const OnigUChar*>(text.data());
  const OnigUChar* end = str + text.size();
  std::size_t last_end = 0;
  std::optional<std::size_t> last_match_end;
  while (last_end <= text.size()) {
    onig_region_clear(region);
    const int r = onig_search(impl_->regex, str, end, str + last_end, end, region, ONIG_OPTION_NONE);
    if (r < 0) break;  // ONIG_MISMATCH (or a search error, which the crate also ends on)
    const auto s = static_cast<std::size_t>(region->beg[0]), e = static_cast<std::size_t>(region->end[0]);
    // An empty match right where the last match ended is skipped by moving one character on (no endless loop).
    if (s == e && last_match_end && *last_match_end == e) {
      last_end += last_end < text.size() ? utf8Length(static_cast<unsigned char>(text[last_end])) : 1;
      continue;
    }
    last_end = e;
    last_match_end = e;
    out.emplace_back(s, e);
  }
  onig_region_free(region, 1);
  return out;
}

}  // namespace attnscope::model::tok
