// Atomic output files: temporary file in the target's folder, fsync, rename.
#include "attnscope/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "attnscope/error.h"

namespace attnscope {

void writeFileAtomically(const std::string& path, const std::string& bytes) {
  if (path.empty()) throw InputError("output path", "a file path", "an empty path");
  std::vector<char> temp(path.begin(), path.end());
  const std::string suffix = ".tmp-XXXXXX";
  temp.insert(temp.end(), suffix.begin(), suffix.end());
  temp.push_back('\0');
  const int fd = mkstemp(temp.data());
  if (fd < 0) throw InputError("output path", "a writable location", "'" + path + "' (" + std::strerror(errno) + ")");
  const std::string temp_path(temp.data());
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temp_path.c_str());
      throw InputError("output path", "a writable location", "'" + path + "' (" + reason + ")");
    }
    written += static_cast<std::size_t>(n);
  }
  // Ordinary permissions (mkstemp makes 0600), as a plain file written by the user would have.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp_path.c_str());
    throw InputError("output path", "a writable location", "'" + path + "' (" + reason + ")");
  }
  if (std::rename(temp_path.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp_path.c_str());
    throw InputError("output path", "a writable location", "'" + path + "' (" + reason + ")");
  }
}

std::string readWholeFile(const std::string& path, const std::string& field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(field, "a readable file", "'" + path + "' (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace attnscope
