// Files in and out. Out: written to a temporary beside the target, then renamed over it, so that a failure never
// leaves half a file; several outputs of one command are all renamed or none. In: every read is bounded, the
// size checked before reading (stat, then bounded reads, so /dev/zero or a FIFO cannot run on).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnscope {

// What a reader takes when it names no limit of its own.
constexpr std::size_t kDefaultReadLimit = std::size_t{256} << 20;

// Reads a whole file of at most `max_bytes`. Throws InputError(field, ...) naming the path (quoted) and the
// reason: missing, a folder, larger than the limit (checked by stat before reading; a device or pipe is read
// to the limit and refused there), unreadable.
std::string readWholeFile(const std::string& path, const std::string& field, std::size_t max_bytes = kDefaultReadLimit);

// "12.0 MiB", "300 bytes": sizes in messages.
std::string byteCountText(std::size_t bytes);

// One output being written: a temporary file beside `path`, buffered writes into it, then renamed over `path`
// by commit(). Created before the work that fills it, so that a path that cannot be written fails first.
// Destroyed uncommitted (an exception on the way), it removes the temporary.
class PendingFile {
 public:
  // Throws InputError("output path", ...) naming the path: an empty path, a folder, a folder that cannot be
  // written (or does not exist).
  explicit PendingFile(std::string path);
  ~PendingFile();
  PendingFile(PendingFile&& other) noexcept;
  PendingFile& operator=(PendingFile&&) = delete;
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  void write(std::string_view bytes);  // throws InputError naming the path (a full disk, say)
  void finish();                       // flush, fsync, close: the bytes are on disk under the temporary name
  void commit();                       // finish() then rename over the target
  const std::string& path() const { return path_; }
  std::size_t bytesWritten() const { return written_; }

 private:
  void flush();
  void writeRaw(const char* data, std::size_t size);
  [[noreturn]] void fail(const std::string& reason);
  std::string path_, temp_path_;
  std::string buffer_;
  std::size_t written_ = 0;
  int fd_ = -1;
  bool committed_ = false;
};

// Every file finished first, then every one renamed: one that fails to finish leaves no target touched.
void commitAll(std::vector<PendingFile>& files);

// Writes `bytes` to `path` atomically. Throws InputError("output path", ...) naming the path and the reason.
void writeFileAtomically(const std::string& path, const std::string& bytes);

// Several outputs (path, bytes): every path checked and written to its temporary first, then all renamed.
void writeFilesAtomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace attnscope
