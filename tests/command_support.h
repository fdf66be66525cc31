// Shared by the end-to-end tests: a fresh temporary folder, a file's bytes, and a command line (or the built
// attnscope binary) run with its exit status, stdout and stderr captured.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace attnscope::test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A new empty folder of this call's own (ctest runs tests as parallel processes).
inline std::string tempDir(const std::string& prefix = "attnscope") {
  std::string pattern = ::testing::TempDir() + prefix + "_XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot make a temporary folder from " + pattern);
  return pattern;
}

struct CommandRun {
  int status = -1;  // the exit status, -1 when the command did not exit normally
  std::string out, err;
};

// Runs a shell command line with stdout and stderr captured.
inline CommandRun run(const std::string& command_line) {
  const std::string dir = tempDir("attnscope_run");
  const int raw = std::system((command_line + " >'" + dir + "/out' 2>'" + dir + "/err'").c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(dir + "/out"), slurp(dir + "/err")};
}

// True under CI=true: a reference that cannot run there is a failure, not a skip.
inline bool underCi() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

// Empty when Debian's /usr/bin/python3 imports `module` (numpy, xml.etree.ElementTree), else why not.
inline std::string pythonModuleMissing(const std::string& module) {
  const CommandRun r = run("/usr/bin/python3 -c 'import " + module + "'");
  return r.status == 0 ? "" : "/usr/bin/python3 cannot import " + module + " (scripts/setup-deps.sh installs it): " + r.err;
}

// Use in a test body before an independent Python reference: without it the test skips with the reason, and
// under CI=true it fails instead, so that no reference goes missing silently.
#define ATTNSCOPE_REQUIRE_PYTHON_MODULE(module)                                                 \
  if (const std::string why_missing = ::attnscope::test::pythonModuleMissing(module);           \
      !why_missing.empty()) {                                                                   \
    if (::attnscope::test::underCi()) GTEST_FAIL() << "CI=true and no reference: " << why_missing; \
    GTEST_SKIP() << why_missing;                                                                \
  }

#ifdef ATTNSCOPE_BINARY
// The built attnscope with `args` (already quoted for the shell).
inline CommandRun runAttnscope(const std::string& args) {
  return run(std::string("'") + ATTNSCOPE_BINARY + "' " + args);
}
#endif

}  // namespace attnscope::test
