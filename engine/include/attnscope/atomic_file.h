// Files in and out. Out: written to a temporary beside the target, then renamed over it, so that a failure never
// leaves half a file; several outputs of one command are all renamed or none; an output may not be an input. In: every read is bounded, the
// size checked before reading (stat, then bounded reads, so /dev/zero or a FIFO cannot run on).
#pragma once

#include <cstddef>
#include <memory>
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

// One output being written. Its path's symbolic links are followed to the file they name (the links stay).
// A regular file, or none yet: a temporary beside it (its name shortened to fit the folder's name limit,
// never the user's), buffered writes into it, then renamed over it by commit(); the file it replaces keeps
// its permissions. A character device or a FIFO: opened and written through, directly (a full device fails
// with "No space left on device"). Created before the work that fills it, so that a path that cannot be
// written fails first. Destroyed uncommitted (an exception on the way), it removes the temporary; a fatal
// signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ) removes it too, then ends the process by the same
// signal (pending_temporaries.h).
class PendingFile {
 public:
  // Throws InputError("output path", ...) naming the path: an empty path, a folder, a folder that cannot be
  // written (or does not exist), a block device or socket, a loop of links, a file another pending output
  // names (two outputs at one path), or, once refuseOutputsOverInputs() is on, one of the inputs read.
  explicit PendingFile(std::string path);
  ~PendingFile();
  PendingFile(PendingFile&& other) noexcept;
  PendingFile& operator=(PendingFile&&) = delete;
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  void write(std::string_view bytes);  // throws InputError naming the path (a full disk, say)
  void finish();                       // flush (fsync, close): the bytes are on disk under the temporary name
  void commit();                       // commitAll() of this one file
  const std::string& path() const;
  std::size_t bytesWritten() const;

  struct State;  // atomic_file.cpp

 private:
  friend void commitAll(std::vector<PendingFile>& files);
  std::unique_ptr<State> state_;
};

// Every file finished first (a device or FIFO output is written through then), every target checked against
// the inputs again, then every temporary renamed over its target. A rename that fails puts back every target
// renamed before it (the old file where there was one, nothing where there was none): none of the new files
// remain. A fatal signal during the renames waits for them to end.
void commitAll(std::vector<PendingFile>& files);

// The command's inputs may not be its outputs: from this call on, every regular file read through
// readWholeFile (or noteInputFile) is remembered by device and inode, and a PendingFile whose target is one of
// them is refused, when it is made and again before its rename. The CLI turns this on; the window does not
// (its Save replaces the scene it opened, on purpose).
void refuseOutputsOverInputs();
// Remembers the file open at `fd` (read from `path`) as an input, when refuseOutputsOverInputs() is on.
void noteInputFile(int fd, const std::string& path);
// Checks every pending output against the inputs remembered so far (a command whose outputs are opened
// before its inputs are read calls it once they are: the refusal comes before the work).
void checkPendingOutputs();

// Writes `bytes` to `path` atomically. Throws InputError("output path", ...) naming the path and the reason.
void writeFileAtomically(const std::string& path, const std::string& bytes);

// Several outputs (path, bytes): every path checked and written to its temporary first, then all renamed.
void writeFilesAtomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace attnscope
