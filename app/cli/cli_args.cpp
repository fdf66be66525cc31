// The subcommands' argument reader.
#include "cli/cli_args.h"

#include <omp.h>

#include <cmath>
#include <cstdlib>

#include "attnscope/compute/thread_limit.h"
#include "attnscope/error.h"
#include "attnscope/settings.h"
#include "attnscope/text_bounds.h"

namespace attnscope::cli {

std::optional<std::string> Args::take(const std::string& name, const std::string& alias) {
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    const std::string& t = tokens_[i];
    if (t == name || (!alias.empty() && t == alias)) {
      if (i + 1 >= tokens_.size()) throw InputError(name, "a value after " + t, "nothing");
      std::string value = tokens_[i + 1];
      tokens_.erase(tokens_.begin() + static_cast<long>(i), tokens_.begin() + static_cast<long>(i) + 2);
      return value;
    }
    if (t.rfind(name + "=", 0) == 0) {
      std::string value = t.substr(name.size() + 1);
      tokens_.erase(tokens_.begin() + static_cast<long>(i));
      return value;
    }
  }
  return std::nullopt;
}

std::string Args::takeChoice(const std::string& name, const std::vector<std::string>& choices,
                             const std::string& fallback) {
  const std::optional<std::string> value = take(name);
  if (!value) return fallback;
  std::string listed;
  for (const std::string& c : choices) {
    if (c == *value) return c;
    listed += (listed.empty() ? "" : "|") + c;
  }
  throw InputError(name, "one of " + listed, quoteFragment(*value));
}

long Args::takeInt(const std::string& name, long fallback, long min, long max) {
  const std::optional<std::string> value = take(name);
  if (!value) return fallback;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(value->c_str(), &end, 10);
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (value->empty() || *end != '\0' || errno == ERANGE) throw InputError(name, range, quoteFragment(*value));
  if (n < min || n > max) throw InputError(name, range, std::to_string(n));
  return n;
}

double Args::takeNumber(const std::string& name, double fallback, double min, double max) {
  const std::optional<std::string> value = take(name);
  if (!value) return fallback;
  char* end = nullptr;
  const double x = std::strtod(value->c_str(), &end);
  const std::string range = "a number from " + std::to_string(min) + " to " + std::to_string(max);
  if (value->empty() || *end != '\0' || !std::isfinite(x) || x < min || x > max)
    throw InputError(name, range, quoteFragment(*value));
  return x;
}

bool Args::takeFlag(const std::string& name) {
  for (std::size_t i = 0; i < tokens_.size(); ++i)
    if (tokens_[i] == name) {
      tokens_.erase(tokens_.begin() + static_cast<long>(i));
      return true;
    }
  return false;
}

std::vector<std::string> Args::positionals(std::size_t max) {
  for (const std::string& t : tokens_)
    if (t.size() > 1 && t[0] == '-')
      throw InputError(command_, "no option named " + elideLabel(t, kQuotedChars),
                       quoteFragment(t) + " (see attnscope --help)");
  if (tokens_.size() > max)
    throw InputError(command_, "at most " + std::to_string(max) + " file argument" + (max == 1 ? "" : "s"),
                     std::to_string(tokens_.size()) + " (" + quoteFragment(tokens_.back()) + ")");
  return tokens_;
}

void checkEnvironment() {
  if (const std::vector<std::string> bad = badSettings(); !bad.empty()) throw std::runtime_error(bad.front());
  checkThreadCount("OpenMP's thread count (OMP_NUM_THREADS, or every hardware thread)", omp_get_max_threads());
}

}  // namespace attnscope::cli
