// A small argument reader for the subcommands: `--name value`, `--name=value`, `--flag`, positionals.
// Usage errors are InputErrors, so the CLI reports them like bad input: one line, exit status 2.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace attnscope::cli {

class Args {
 public:
  Args(std::string command, std::vector<std::string> tokens) : command_(std::move(command)), tokens_(std::move(tokens)) {}

  // Takes `--name value` (or `--name=value`, or an alias such as `-o value`); nullopt when absent.
  std::optional<std::string> take(const std::string& name, const std::string& alias = "");
  std::string takeOr(const std::string& name, const std::string& fallback) { return take(name).value_or(fallback); }
  // One of `choices`, or `fallback` when absent.
  std::string takeChoice(const std::string& name, const std::vector<std::string>& choices, const std::string& fallback);
  long takeInt(const std::string& name, long fallback, long min, long max);
  double takeNumber(const std::string& name, double fallback, double min, double max);
  bool takeFlag(const std::string& name);
  // What is left after the options: positionals. Throws on any leftover `--option`, or on more than `max`.
  std::vector<std::string> positionals(std::size_t max);
  const std::string& command() const { return command_; }

 private:
  std::string command_;
  std::vector<std::string> tokens_;
};

// Before a command runs: every environment setting (settings.h: the first bad one) and OpenMP's thread count
// (OMP_NUM_THREADS or the hardware threads, thread_limit.h), each an InputError naming the variable.
void checkEnvironment();

}  // namespace attnscope::cli
