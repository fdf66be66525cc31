// Atomic output files (temporary in the target's folder, fsync, rename; devices and FIFOs written through),
// the inputs they may not replace, and bounded input files.
#include "attnscope/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/text_bounds.h"
#include "pending_temporaries.h"

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
  noteInputFile(fd, path);
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

// [SECTION] inputs: what the command reads, by device and inode

namespace {

struct InputFile {
  dev_t dev;
  ino_t ino;
  std::string path;  // as it was read (messages)
};
std::atomic<bool> g_refuse_inputs{false};
std::mutex g_inputs_mutex;
std::vector<InputFile> g_inputs;

std::optional<std::string> inputAt(dev_t dev, ino_t ino) {
  const std::lock_guard lock(g_inputs_mutex);
  for (const InputFile& f : g_inputs)
    if (f.dev == dev && f.ino == ino) return f.path;
  return std::nullopt;
}

}  // namespace

void refuseOutputsOverInputs() { g_refuse_inputs = true; }

void noteInputFile(int fd, const std::string& path) {
  struct stat st {};
  if (!g_refuse_inputs || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  if (inputAt(st.st_dev, st.st_ino)) return;
  const std::lock_guard lock(g_inputs_mutex);
  g_inputs.push_back({st.st_dev, st.st_ino, path});
}

// [SECTION] writing

// Which file an output is: an existing one by device and inode, one not there yet by its folder and name.
// Outside the anonymous namespace: PendingFile::State (declared in atomic_file.h) holds one.
namespace detail {
struct FileKey {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;  // empty for an existing file
  bool operator==(const FileKey& o) const { return dev == o.dev && ino == o.ino && name == o.name; }
};
}  // namespace detail
using detail::FileKey;

namespace {

constexpr int kMaxLinks = 40;  // as the kernel's own limit on a path's symbolic links
constexpr std::size_t kTempSuffix = 11;  // ".tmp-" and 6 letters


mode_t processUmask() {
  static const mode_t mask = [] {
    const mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  return mask;
}

std::string randomLetters(int count) {
  static constexpr char kLetters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string letters;
  for (int i = 0; i < count; ++i) letters += kLetters[rng() % (sizeof kLetters - 1)];
  return letters;
}

[[noreturn]] void unwritable(const std::string& path, const std::string& reason) {
  throw InputError("output path", "a writable location", quotedPath(path) + " (" + reason + ")");
}

// The path with its symbolic links followed to the file they name, which may not exist yet (a dangling link
// names the file to create). Links inside the folders are left to the kernel.
std::string followLinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    if (hops == kMaxLinks)
      throw InputError("output path", "a path through at most 40 symbolic links",
                       quotedPath(path) + " (" + std::strerror(ELOOP) + ")");
    char target[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), target, sizeof target);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof target)
      unwritable(path, n < 0 ? std::strerror(errno) : "a link too long to follow");
    const std::string link(target, static_cast<std::size_t>(n));
    const std::size_t slash = p.find_last_of('/');
    p = link[0] == '/' || slash == std::string::npos ? link : p.substr(0, slash + 1) + link;
  }
}

std::string fileKind(mode_t mode) {
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "neither";
}

}  // namespace

struct PendingFile::State {
  std::string path;       // as the user gave it (messages)
  std::string name;       // the target's name in its folder, its links followed
  int dir_fd = -1;        // the target's folder
  bool direct = false;    // a character device or FIFO: written through
  FileKey key;
  mode_t mode = 0;        // the finished file's permissions: those of the file it replaces, else 0666 - umask
  std::string temp_name;  // a regular target: the temporary beside it, in dir_fd
  int slot = -1;          // the temporary's slot for the signal handlers
  int fd = -1;
  std::string buffer;
  std::size_t written = 0;
  bool finished = false;  // the bytes are out (a temporary closed, or a device written)
  bool done = false;      // renamed, or failed: nothing left to remove

  ~State();
  [[noreturn]] void fail(const std::string& reason);
  void writeRaw(const char* data, std::size_t size);
  void flush();
  void finish();
  void createTemporary();
  void checkNotAnInput() const;
};

namespace {

// Outputs made and not yet committed or destroyed (two outputs at one path are refused).
std::mutex g_live_mutex;
std::vector<PendingFile::State*> g_live;

// What a rename did, so that it can be put back: swapped with the old file (which now has the temporary's
// name), created where nothing stood, replaced with a hard link kept to the old file, or plainly replaced
// (a file system that can do neither: nothing to put back).
struct Undo {
  enum Kind { Exchanged, Created, Backup, Plain } kind = Plain;
  std::string backup;
};

}  // namespace

void PendingFile::State::createTemporary() {
  // The temporary's name: the target's, cut to fit the folder's name limit with the suffix (at a character
  // boundary of UTF-8), so that a valid long name works.
  long name_max = ::fpathconf(dir_fd, _PC_NAME_MAX);
  if (name_max <= static_cast<long>(kTempSuffix) || name_max > 255) name_max = 255;
  std::size_t keep = std::min(name.size(), static_cast<std::size_t>(name_max) - kTempSuffix);
  while (keep > 0 && keep < name.size() && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string temp = name.substr(0, keep) + ".tmp-" + randomLetters(6);
    const pending::CriticalSection critical;  // created and noted, or neither
    const int noted = pending::remember(dir_fd, temp.c_str());
    const int created = ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (created >= 0) {
      fd = created;
      slot = noted;
      temp_name = temp;
      return;
    }
    const int error = errno;
    pending::forget(noted);
    if (error != EEXIST) unwritable(path, std::strerror(error));
  }
  unwritable(path, "no free temporary name beside it");
}

void PendingFile::State::checkNotAnInput() const {
  struct stat st {};
  if (!g_refuse_inputs || direct || ::fstatat(dir_fd, name.c_str(), &st, 0) != 0 || !S_ISREG(st.st_mode)) return;
  if (const std::optional<std::string> input = inputAt(st.st_dev, st.st_ino))
    throw InputError("output path", "a file other than the command's inputs",
                     quotedPath(path) + ", the same file as the input " + quotedPath(*input));
}

PendingFile::State::~State() {
  if (fd >= 0) ::close(fd);
  if (!done && !temp_name.empty()) ::unlinkat(dir_fd, temp_name.c_str(), 0);
  pending::forget(slot);  // after the unlink: a signal in between finds the name gone, which is harmless
  {
    const std::lock_guard lock(g_live_mutex);
    g_live.erase(std::remove(g_live.begin(), g_live.end(), this), g_live.end());
  }
  if (dir_fd >= 0) ::close(dir_fd);  // last: the signal handlers use it until forget()
}

void PendingFile::State::fail(const std::string& reason) {
  if (fd >= 0) ::close(fd);
  fd = -1;
  if (!temp_name.empty()) ::unlinkat(dir_fd, temp_name.c_str(), 0);
  pending::forget(slot);
  slot = -1;
  temp_name.clear();
  done = true;
  unwritable(path, reason);
}

void PendingFile::State::writeRaw(const char* data, std::size_t size) {
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::write(fd, data + sent, size - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::strerror(errno));
    if (n == 0) fail("nothing written");
    sent += static_cast<std::size_t>(n);
  }
}

void PendingFile::State::flush() {
  writeRaw(buffer.data(), buffer.size());
  buffer.clear();
}

void PendingFile::State::finish() {
  if (finished || done) return;
  flush();
  if (!direct) {
    ::fchmod(fd, mode);
    if (::fsync(fd) != 0) fail(std::strerror(errno));
  }
  if (::close(std::exchange(fd, -1)) != 0) fail(std::strerror(errno));
  finished = true;
}

PendingFile::PendingFile(std::string path) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.path = std::move(path);
  if (s.path.empty()) throw InputError("output path", "a file path", "an empty path");
  const std::string target = followLinks(s.path);
  const auto folder = [&] {
    return InputError("output path", "a file path", quotedPath(s.path) + ", which is a folder");
  };
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw folder();
  const std::size_t slash = target.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
  s.name = slash == std::string::npos ? target : target.substr(slash + 1);
  if (s.name.empty()) throw InputError("output path", "a file path", quotedPath(s.path) + ", which ends in '/'");
  s.dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s.dir_fd < 0 && (errno == ENOENT || errno == ENOTDIR))
    throw InputError("output path", "a file in an existing folder",
                     quotedPath(s.path) + " (no folder " + quotedPath(dir) + ")");
  if (s.dir_fd < 0) unwritable(s.path, std::strerror(errno));

  s.mode = 0666 & ~processUmask();
  if (::fstatat(s.dir_fd, s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) throw folder();
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
      throw InputError("output path", "a regular file, a character device or a FIFO",
                       quotedPath(s.path) + ", " + fileKind(st.st_mode));
    s.direct = !S_ISREG(st.st_mode);
    if (!s.direct) s.mode = st.st_mode & 07777;
    s.key = {st.st_dev, st.st_ino, ""};
  } else if (errno == ENOENT) {
    ::fstat(s.dir_fd, &st);
    s.key = {st.st_dev, st.st_ino, s.name};
  } else {
    unwritable(s.path, std::strerror(errno));
  }
  s.checkNotAnInput();
  {
    const std::lock_guard lock(g_live_mutex);
    for (const State* other : g_live)
      if (!other->done && other->key == s.key)
        throw InputError(
            "output path", "a file that no other output of the command names",
            quotedPath(s.path) + (other->path == s.path ? " twice" : ", the same file as " + quotedPath(other->path)));
    g_live.push_back(&s);
  }
  if (!s.direct) {
    s.createTemporary();
    return;
  }
  // A device or FIFO is written through; opening a FIFO waits for its reader, as the shell's `>` does.
  s.fd = ::openat(s.dir_fd, s.name.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (s.fd < 0) unwritable(s.path, std::strerror(errno));
}

PendingFile::PendingFile(PendingFile&& other) noexcept = default;
PendingFile::~PendingFile() = default;

const std::string& PendingFile::path() const { return state_->path; }
std::size_t PendingFile::bytesWritten() const { return state_->written; }

void PendingFile::write(std::string_view bytes) {
  State& s = *state_;
  if (s.fd < 0) throw InputError("output path", "an open output", quotedPath(s.path) + " (already finished)");
  s.written += bytes.size();
  if (s.buffer.size() + bytes.size() > kWriteBuffer) s.flush();
  if (bytes.size() >= kWriteBuffer)
    s.writeRaw(bytes.data(), bytes.size());  // large: straight through
  else
    s.buffer.append(bytes);
}

void PendingFile::finish() { state_->finish(); }

void checkPendingOutputs() {
  const std::lock_guard lock(g_live_mutex);
  for (const PendingFile::State* s : g_live)
    if (!s->done) s->checkNotAnInput();
}

namespace {

// Renames the temporary over the target, saying in `undo` how to put back what stood there. Returns 0 or errno.
int replaceTarget(const PendingFile::State& s, Undo& undo) {
  const char* temp = s.temp_name.c_str();
  const char* name = s.name.c_str();
  if (::renameat2(s.dir_fd, temp, s.dir_fd, name, RENAME_EXCHANGE) == 0) {
    undo.kind = Undo::Exchanged;
    return 0;
  }
  if (errno == ENOENT) {  // nothing stood there
    undo.kind = Undo::Created;
    return ::renameat(s.dir_fd, temp, s.dir_fd, name) == 0 ? 0 : errno;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return errno;
  // A file system that cannot swap two names: a hard link keeps the old file to put back.
  undo.kind = Undo::Plain;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string backup = s.temp_name.substr(0, s.temp_name.size() - 6) + randomLetters(6);
    if (::linkat(s.dir_fd, name, s.dir_fd, backup.c_str(), 0) == 0) {
      undo = {Undo::Backup, backup};
      break;
    }
    if (errno != EEXIST) break;
  }
  if (::renameat(s.dir_fd, temp, s.dir_fd, name) == 0) return 0;
  const int error = errno;
  if (undo.kind == Undo::Backup) ::unlinkat(s.dir_fd, undo.backup.c_str(), 0);
  return error;
}

void putBack(const PendingFile::State& s, const Undo& undo) {
  switch (undo.kind) {
    case Undo::Exchanged:  // the new file goes back to the temporary's name, which its owner removes
      ::renameat2(s.dir_fd, s.temp_name.c_str(), s.dir_fd, s.name.c_str(), RENAME_EXCHANGE);
      break;
    case Undo::Created:
      ::unlinkat(s.dir_fd, s.name.c_str(), 0);
      break;
    case Undo::Backup:
      ::renameat(s.dir_fd, undo.backup.c_str(), s.dir_fd, s.name.c_str());
      break;
    case Undo::Plain:
      break;
  }
}

// The old file, kept until every rename succeeded, removed.
void dropOld(PendingFile::State& s, const Undo& undo) {
  if (undo.kind == Undo::Exchanged) ::unlinkat(s.dir_fd, s.temp_name.c_str(), 0);
  if (undo.kind == Undo::Backup) ::unlinkat(s.dir_fd, undo.backup.c_str(), 0);
  pending::forget(s.slot);
  s.slot = -1;
  s.temp_name.clear();
  s.done = true;
}

void commitStates(const std::vector<PendingFile::State*>& states) {
  for (PendingFile::State* s : states) s->finish();  // devices and FIFOs are written through here
  for (const PendingFile::State* s : states) s->checkNotAnInput();
  const pending::CriticalSection critical;  // a signal waits for every rename and every putting back
  std::vector<std::pair<PendingFile::State*, Undo>> renamed;
  for (PendingFile::State* s : states) {
    if (s->done || s->direct) continue;
    Undo undo;
    if (const int error = replaceTarget(*s, undo)) {
      for (auto it = renamed.rbegin(); it != renamed.rend(); ++it) putBack(*it->first, it->second);
      s->fail(std::strerror(error));
    }
    renamed.emplace_back(s, std::move(undo));
  }
  for (auto& [s, undo] : renamed) dropOld(*s, undo);
  for (PendingFile::State* s : states) s->done = true;
}

}  // namespace

void PendingFile::commit() { commitStates({state_.get()}); }

void commitAll(std::vector<PendingFile>& files) {
  std::vector<PendingFile::State*> states;
  for (PendingFile& f : files) states.push_back(f.state_.get());
  commitStates(states);
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
