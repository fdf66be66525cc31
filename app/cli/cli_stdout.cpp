// Standard output, checked: a command's JSON or text that cannot be written (a full disk, a closed descriptor)
// is an error like any other, one line and exit status 2, never a silent exit 0.
#include <stdio_ext.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "cli/cli.h"

namespace attnscope::cli {

namespace {

[[noreturn]] void failedWrite(int error) {
  throw InputError("standard output", "a writable output",
                   std::string("a failed write (") + (error ? std::strerror(error) : "an earlier write failed") + ")");
}

}  // namespace

void writeStdout(std::string_view bytes) {
  if (bytes.empty()) return;
  errno = 0;
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) failedWrite(errno);
}

void writeOutput(const std::string& text, const std::optional<std::string>& path) {
  if (path)
    writeFileAtomically(*path, text);
  else
    writeStdout(text);
}

void closeStdout() {
  // As gnulib's close_stdout: a descriptor closed from the start (EBADF) is no error while nothing was written.
  const bool pending = __fpending(stdout) != 0;
  const bool failed_before = std::ferror(stdout) != 0;
  errno = 0;
  const bool close_failed = std::fclose(stdout) != 0;
  const int error = errno;
  if (failed_before || (close_failed && (pending || error != EBADF))) failedWrite(error);
}

}  // namespace attnscope::cli
