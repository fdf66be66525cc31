// Atomic output files (temporary in the target's folder, fsync, rename) and bounded input files.
#include "attnscope/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/text_bounds.h"

namespace attnscope {

namespace {

constexpr std::size_t kPathChars = 200;  // a path in a message: long enough for any sane one
constexpr std::size_t kWriteBuffer = std::size_t{1} << 20;

std::string quotedPath(const std::string& path) { return quoteFragment(path, kPathChars); }

}  // namespace

std::string byteCountText(std::size_t bytes) {
  if (bytes < (std::size_t{1} << 20)) return std::to_string(bytes) + " bytes";
  char text[48];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

// [SECTION] reading

std::string readWholeFile(const std::string& path, const std::string& field, std::size_t max_bytes) {
  const std::string expected = "a readable file of at most " + byteCountText(max_bytes);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(field, expected, quotedPath(path) + " (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    throw InputError(field, expected, quotedPath(path) + " (" + reason + ")");
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw InputError(field, "a file", quotedPath(path) + ", which is a folder");
  }
  // A regular file says its size: refused before a byte is read. A device or pipe is read to the limit.
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw InputError(field, expected, quotedPath(path) + " of " + byteCountText(static_cast<std::size_t>(st.st_size)));
  }
  std::string bytes;
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<std::size_t>(st.st_size));
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      throw InputError(field, expected, quotedPath(path) + " (" + reason + ")");
    }
    if (n == 0) break;
    if (bytes.size() + static_cast<std::size_t>(n) > max_bytes) {
      ::close(fd);
      throw InputError(
          field, expected,
          quotedPath(path) + " of more than " + byteCountText(max_bytes) +
              (S_ISREG(st.st_mode) ? " (it grew while read)" : " (a device or pipe, read up to the limit)"));
    }
    bytes.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return bytes;
}

// [SECTION] writing

PendingFile::PendingFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw InputError("output path", "a file path", "an empty path");
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError("output path", "a file path", quotedPath(path_) + ", which is a folder");
  const std::size_t slash = path_.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw InputError("output path", "a file in an existing folder",
                     quotedPath(path_) + " (no folder " + quotedPath(dir) + ")");
  std::vector<char> temp(path_.begin(), path_.end());
  const std::string suffix = ".tmp-XXXXXX";
  temp.insert(temp.end(), suffix.begin(), suffix.end());
  temp.push_back('\0');
  fd_ = ::mkstemp(temp.data());
  if (fd_ < 0)
    throw InputError("output path", "a writable location", quotedPath(path_) + " (" + std::strerror(errno) + ")");
  ::fcntl(fd_, F_SETFD, FD_CLOEXEC);
  temp_path_ = temp.data();
}

PendingFile::PendingFile(PendingFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::move(other.temp_path_)),
      buffer_(std::move(other.buffer_)),
      written_(other.written_),
      fd_(std::exchange(other.fd_, -1)),
      committed_(std::exchange(other.committed_, true)) {}

PendingFile::~PendingFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void PendingFile::fail(const std::string& reason) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_path_.c_str());
  committed_ = true;  // nothing left to remove
  throw InputError("output path", "a writable location", quotedPath(path_) + " (" + reason + ")");
}

void PendingFile::writeRaw(const char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

void PendingFile::flush() {
  writeRaw(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void PendingFile::write(std::string_view bytes) {
  if (fd_ < 0) throw InputError("output path", "an open output", quotedPath(path_) + " (already finished)");
  written_ += bytes.size();
  if (buffer_.size() + bytes.size() > kWriteBuffer) flush();
  if (bytes.size() >= kWriteBuffer)
    writeRaw(bytes.data(), bytes.size());  // large: straight through
  else
    buffer_.append(bytes);
}

void PendingFile::finish() {
  if (fd_ < 0) return;
  flush();
  // Ordinary permissions (mkstemp makes 0600), as a plain file written by the user would have.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  if (::fsync(fd_) != 0) fail(std::strerror(errno));
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(std::strerror(errno));
}

void PendingFile::commit() {
  finish();
  if (committed_) return;
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) fail(std::strerror(errno));
  committed_ = true;
}

void commitAll(std::vector<PendingFile>& files) {
  for (PendingFile& f : files) f.finish();
  for (PendingFile& f : files) f.commit();
}

void writeFileAtomically(const std::string& path, const std::string& bytes) {
  PendingFile file(path);
  file.write(bytes);
  file.commit();
}

void writeFilesAtomically(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<PendingFile> pending;
  pending.reserve(files.size());
  for (const auto& [path, bytes] : files) pending.emplace_back(path);
  for (std::size_t i = 0; i < files.size(); ++i) pending[i].write(files[i].second);
  commitAll(pending);
}

}  // namespace attnscope
