// Oniguruma, the regex engine Hugging Face `tokenizers` runs (through the onig crate): patterns compiled with
// the default syntax for UTF-8, matches found as the crate's find_iter finds them. Every search runs under
// Oniguruma's backtracking limits, so that a catastrophic pattern is refused instead of running for minutes.
#include <oniguruma.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <mutex>
#include <new>

#include "attnscope/error.h"
#include "model/tokenizer_spec.h"

namespace attnscope::model::tok {

struct Regex::Impl {
  OnigRegex regex = nullptr;
  std::string pattern, field;  // for the refusal
  ~Impl() {
    if (regex) onig_free(regex);
  }
};

namespace {

// Backtracking allowed per search (Oniguruma's retry counter: one per failed branch, over every start
// position tried), and per start: kRetryBase + kRetriesPerByte x the bytes left to search. Real patterns
// (GPT-2's, Llama 3's, Qwen's) needed at most 1.5 per byte left on 1 MB of prose and code and 550 KB of
// white-space runs (a run that \s*[\r\n]+ backs out of before \s+(?!\S) takes it): 16 leaves a tenfold
// margin. ((a+)(b+)?)+$c on "ab" x 20k needs ~10^9 and is stopped at 740k (half a second).
constexpr unsigned long kRetryBase = 100'000;
constexpr unsigned long kRetriesPerByte = 16;
// The backtracking stack, in entries (~24 bytes each): a greedy run pushes one per character.
constexpr unsigned long kStackBase = 1'000'000;
constexpr unsigned long kStackPerByte = 4;

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
  impl->pattern = pattern;
  impl->field = field;
  impl_ = std::move(impl);
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::findAll(const std::string& text) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::unique_ptr<OnigRegion, void (*)(OnigRegion*)> region(onig_region_new(),
                                                                  [](OnigRegion* r) { onig_region_free(r, 1); });
  const std::unique_ptr<OnigMatchParam, void (*)(OnigMatchParam*)> param(onig_new_match_param(), onig_free_match_param);
  if (!region || !param) throw std::bad_alloc();
  const auto* str = reinterpret_cast<const OnigUChar*>(text.data());
  const OnigUChar* end = str + text.size();
  std::size_t last_end = 0;
  std::optional<std::size_t> last_match_end;
  while (last_end <= text.size()) {
    onig_region_clear(region.get());
    const unsigned long left = text.size() - last_end;
    const unsigned long retries = kRetryBase + kRetriesPerByte * left;
    onig_initialize_match_param(param.get());
    onig_set_retry_limit_in_match_of_match_param(param.get(), retries);
    onig_set_retry_limit_in_search_of_match_param(param.get(), retries);
    onig_set_match_stack_limit_size_of_match_param(
        param.get(), static_cast<unsigned int>(std::min<unsigned long>(kStackBase + kStackPerByte * left, UINT_MAX)));
    const int r = onig_search_with_param(impl_->regex, str, end, str + last_end, end, region.get(), ONIG_OPTION_NONE,
                                         param.get());
    if (r == ONIG_MISMATCH) break;
    if (r < 0) {
      OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
      onig_error_code_to_str(message, r);
      throw InputError(impl_->field,
                       "a regex that backtracks at most " + std::to_string(retries) + " times on " +
                           std::to_string(left) + " bytes of text",
                       "'" + impl_->pattern.substr(0, 80) + "', stopped by Oniguruma (" +
                           reinterpret_cast<const char*>(message) + ") searching from byte " +
                           std::to_string(last_end));
    }
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
  return out;
}

}  // namespace attnscope::model::tok
