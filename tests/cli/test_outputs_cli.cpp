// Issue 29's outputs, run as a user would: an output path that is a symbolic link (followed, the link kept), a
// character device or FIFO (written through: a full device is exit 2), one of the command's own inputs or two
// outputs at one path (refused before anything is written), a rename that fails at the last step (every other
// output put back), standard output that cannot be written (exit 2, one line), fatal signals and a file-size
// limit during a write (no temporary left, death by the same signal), and long valid names.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/import_view_support.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace fs = std::filesystem;
using model_test::CommandRun;

namespace {

CommandRun cli(const std::string& args) { return model_test::run(std::string("'") + ATTNSCOPE_BINARY + "' " + args); }

std::string q(const std::string& path) { return "'" + path + "'"; }

// Exit 2, one line on stderr holding every needle.
void expectOneLine(const CommandRun& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.status, 2) << r.err.substr(0, 400);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err.substr(0, 400);
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' in " << r.err;
}

// The names in a folder, sorted: what a command left there (a temporary would show).
std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string writeFile(const std::string& path, const std::string& bytes) {
  model_test::spit(path, bytes);
  return path;
}

// One head, d_model 2, identity projections, rows x1 = (1, 0), x2 = (0, 1): scores q.k / sqrt(2) are 1/sqrt(2) on
// the diagonal and 0 off it, so each row's weights are (s, 1 - s) or (1 - s, s) with s = 1 / (1 + e^(-1/sqrt(2))).
const char* kScene =
    R"({"format": "attnscope-scene", "version": 1, "d_model": 2, "query_tokens": ["a", "b"],
        "query": [[1, 0], [0, 1]], "heads": [{"w_q": [[1, 0], [0, 1]], "w_k": [[1, 0], [0, 1]],
        "w_v": [[1, 0], [0, 1]]}]})";

// The compute JSON's weights against the hand numbers above (float32 printed to read back exactly: error
// seen 3e-8; 1e-6 is a few float32 ulps of 0.67).
void expectHandWeights(const std::string& text) {
  const json j = json::parse(text);
  const double s = 1 / (1 + std::exp(-1 / std::sqrt(2.0)));
  const json& w = j.at("heads").at(0).at("weights");
  ASSERT_EQ(w.size(), 2u);
  ASSERT_EQ(w[0].size(), 2u);
  EXPECT_NEAR(w[0][0].get<double>(), s, 1e-6);
  EXPECT_NEAR(w[0][1].get<double>(), 1 - s, 1e-6);
  EXPECT_NEAR(w[1][0].get<double>(), 1 - s, 1e-6);
  EXPECT_NEAR(w[1][1].get<double>(), s, 1e-6);
}

// A scene of n tokens (d_model 8, 4 heads): its compute JSON is about 2 x 4 x n^2 numbers, ~180 MB at n = 1500,
// seconds of writing in which to send a signal.
std::string bigScene(const std::string& dir, int n) {
  std::string text = R"({"format": "attnscope-scene", "version": 1, "d_model": 8, "query_tokens": [)";
  for (int i = 0; i < n; ++i) text += (i ? ",\"t" : "\"t") + std::to_string(i) + "\"";
  text += "], \"query\": [";
  for (int i = 0; i < n; ++i) {
    text += i ? ",[" : "[";
    for (int c = 0; c < 8; ++c) text += (c ? "," : "") + std::to_string(((i * 7 + c * 3) % 11) / 11.0);
    text += "]";
  }
  const std::string eye = "[[1,0,0,0,0,0,0,0],[0,1,0,0,0,0,0,0],[0,0,1,0,0,0,0,0],[0,0,0,1,0,0,0,0],"
                          "[0,0,0,0,1,0,0,0],[0,0,0,0,0,1,0,0],[0,0,0,0,0,0,1,0],[0,0,0,0,0,0,0,1]]";
  const std::string head = "{\"w_q\": " + eye + ", \"w_k\": " + eye + ", \"w_v\": " + eye + "}";
  text += "], \"heads\": [" + head + "," + head + "," + head + "," + head + "]}";
  return writeFile(dir + "/big.json", text);
}

// A copy of a character device (/dev/null is 1:3, /dev/full 1:7) made with mknod, so that a broken build can
// never replace the real one. Without the privilege, the real device: a user cannot replace it either.
std::string deviceCopy(const std::string& dir, const std::string& name, unsigned minor) {
  const std::string path = dir + "/" + name;
  return ::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0 ? path : "/dev/" + name;
}

bool isCharDevice(const std::string& path, unsigned minor) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == minor;
}

// A 2 x 2 attention tensor (one layer, one head: rows (1, 0) and (0.5, 0.5)) for `view`.
std::string smallTensor(const std::string& dir) {
  attnscope::test::writeSafetensors(dir + "/attn.safetensors", {{"attn", {{1, 1, 2, 2}, {1, 0, 0.5f, 0.5f}}}});
  return dir + "/attn.safetensors";
}

// chattr +i (root, or CAP_LINUX_IMMUTABLE, on a file system that keeps the flag): a file that no rename may
// replace. Empty when it worked, else why not.
std::string makeImmutable(const std::string& path) {
  const CommandRun r = model_test::run("chattr +i " + q(path));
  return r.status == 0 ? "" : "chattr +i failed (needs root or CAP_LINUX_IMMUTABLE): " + r.err;
}

}  // namespace

TEST(OutputsCli, SymbolicLinksAreFollowedAndKept) {
  const std::string dir = model_test::tempDir();
  const std::string scene = writeFile(dir + "/s.json", kScene);
  fs::create_directory(dir + "/other");
  writeFile(dir + "/real.json", "old");
  ::chmod((dir + "/real.json").c_str(), 0600);
  fs::create_symlink("real.json", dir + "/link");                 // relative, beside it
  fs::create_symlink(dir + "/link", dir + "/chain");              // absolute, to another link
  fs::create_symlink("../real.json", dir + "/other/up");          // relative, from another folder
  fs::create_symlink("other/new.json", dir + "/dangling");        // names a file still to make
  for (const std::string out : {"link", "chain", "other/up", "dangling"}) {
    SCOPED_TRACE(out);
    writeFile(dir + "/real.json", "old");
    const CommandRun r = cli("compute " + q(scene) + " -o " + q(dir + "/" + out));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(fs::is_symlink(dir + "/" + out));
    expectHandWeights(model_test::slurp(dir + (out == "dangling" ? "/other/new.json" : "/real.json")));
  }
  EXPECT_EQ(fs::read_symlink(dir + "/link"), "real.json");
  EXPECT_EQ(fs::read_symlink(dir + "/chain"), dir + "/link");
  // The replaced file keeps its permissions (0600, not 0666 less the umask).
  EXPECT_EQ(fs::status(dir + "/real.json").permissions(), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"chain", "dangling", "link", "other", "real.json", "s.json"}));
  EXPECT_EQ(filesIn(dir + "/other"), (std::vector<std::string>{"new.json", "up"}));
  // A loop of links: one line, nothing made.
  fs::create_symlink("loop2", dir + "/loop1");
  fs::create_symlink("loop1", dir + "/loop2");
  expectOneLine(cli("compute " + q(scene) + " -o " + q(dir + "/loop1")),
                {"output path: expected a path through at most 40 symbolic links, got '" + dir + "/loop1'"});
  EXPECT_TRUE(fs::is_symlink(dir + "/loop1"));
}

TEST(OutputsCli, DevicesAndFifosAreWrittenThrough) {
  const std::string dir = model_test::tempDir();
  const std::string scene = writeFile(dir + "/s.json", kScene);
  const std::string null = deviceCopy(dir, "null", 3), full = deviceCopy(dir, "full", 7);
  const std::vector<std::string> before = filesIn(dir);
  // Written through: exit 0, the device still a device, nothing else made beside it.
  CommandRun r = cli("compute " + q(scene) + " -o " + q(null));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(isCharDevice(null, 3));
  fs::create_symlink(null, dir + "/to-null");
  r = cli("compute " + q(scene) + " -o " + q(dir + "/to-null"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir + "/to-null"));
  EXPECT_TRUE(isCharDevice(null, 3));
  fs::remove(dir + "/to-null");
  // A full device: exit 2, "No space left on device", still a device.
  expectOneLine(cli("compute " + q(scene) + " -o " + q(full)),
                {"output path: expected a writable location, got '" + full + "' (No space left on device)"});
  EXPECT_TRUE(isCharDevice(full, 7));
  // One output of several: a full device is written before any rename, so no other output is made.
  const std::string tensor = smallTensor(dir);
  expectOneLine(
      cli("view " + q(tensor) + " --tokens '[\"a\",\"b\"]' -o " + q(full) + " --grid-out " + q(dir + "/g.png")),
      {"(No space left on device)"});
  EXPECT_FALSE(fs::exists(dir + "/g.png"));
  fs::remove(tensor);
  EXPECT_EQ(filesIn(dir), before);
  // A FIFO with a reader waiting: the reader gets the JSON, the FIFO stays a FIFO.
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  r = model_test::run("cat " + q(fifo) + " > " + q(dir + "/got") + " & '" + ATTNSCOPE_BINARY + "' compute " +
                      q(scene) + " -o " + q(fifo) + "; status=$?; wait; exit $status");
  ASSERT_EQ(r.status, 0) << r.err;
  expectHandWeights(model_test::slurp(dir + "/got"));
  EXPECT_TRUE(fs::is_fifo(fifo));
  // A block device is no place for an output: refused before it is opened (240 is a major number for local
  // use, backed by no driver here, so even a wrong open could write nothing).
  const std::string block = dir + "/block";
  if (::mknod(block.c_str(), S_IFBLK | 0600, makedev(240, 0)) == 0)
    expectOneLine(cli("compute " + q(scene) + " -o " + q(block)),
                  {"output path: expected a regular file, a character device or a FIFO, got '" + block +
                   "', a block device"});
}

TEST(OutputsCli, AnOutputThatIsAnInputIsRefusedBeforeAnythingIsWritten) {
  const std::string dir = model_test::tempDir();
  const std::string scene = writeFile(dir + "/in.json", kScene);
  fs::create_symlink("in.json", dir + "/link.json");
  fs::create_hard_link(dir + "/in.json", dir + "/hard.json");
  const std::vector<std::string> before = filesIn(dir);
  const std::string refused = "output path: expected a file other than the command's inputs, got '";
  for (const std::string out : {"in.json", "link.json", "hard.json"}) {
    SCOPED_TRACE(out);
    const std::string path = dir + "/" + out;
    expectOneLine(cli("compute " + q(scene) + " -o " + q(path)),
                  {refused + path + "', the same file as the input '" + scene + "'"});
    expectOneLine(cli("analyze " + q(scene) + " -o " + q(path)), {refused + path + "'"});
    expectOneLine(cli("export " + q(scene) + " --what heads --format csv --out " + q(path)), {refused + path + "'"});
    expectOneLine(cli("export " + q(scene) + " --what diff --against " + q(scene) + " --format csv --out " + q(path)),
                  {refused + path + "'"});
  }
  EXPECT_EQ(model_test::slurp(scene), kScene);
  EXPECT_EQ(filesIn(dir), before);

  // tokenize DIR -o DIR/tokenizer.json would leave a checkpoint that no longer opens; --text-file likewise.
  const std::string ckpt = model_test::tinyCheckpoint();
  const std::string vocab = model_test::slurp(ckpt + "/vocab.json");
  expectOneLine(cli("tokenize " + q(ckpt) + " --text hi -o " + q(ckpt + "/vocab.json")),
                {refused + ckpt + "/vocab.json', the same file as the input '" + ckpt + "/vocab.json'"});
  EXPECT_EQ(model_test::slurp(ckpt + "/vocab.json"), vocab);
  const std::string text = writeFile(dir + "/text.txt", "hello");
  expectOneLine(cli("tokenize " + q(ckpt) + " --text-file " + q(text) + " -o " + q(text)), {refused + text + "'"});
  EXPECT_EQ(model_test::slurp(text), "hello");
  // model: a layer's scene over the checkpoint's config.json, refused once the checkpoint is read.
  const std::string config = model_test::slurp(ckpt + "/config.json");
  expectOneLine(cli("model " + q(ckpt) + " --text hi --layer 1 --scene-out " + q(ckpt + "/config.json")),
                {refused + ckpt + "/config.json'"});
  EXPECT_EQ(model_test::slurp(ckpt + "/config.json"), config);
  // view: the tokens file; import: the state dict.
  const std::string tensor = smallTensor(dir);
  const std::string tokens = writeFile(dir + "/tokens.json", R"(["a", "b"])");
  expectOneLine(cli("view " + q(tensor) + " --tokens " + q(tokens) + " -o " + q(tokens)), {refused + tokens + "'"});
  expectOneLine(cli("view " + q(tensor) + " --tokens '[\"a\",\"b\"]' -o " + q(tensor)), {refused + tensor + "'"});
  EXPECT_EQ(model_test::slurp(tokens), R"(["a", "b"])");
  const std::string tensor_bytes = model_test::slurp(tensor);
  expectOneLine(cli("import " + q(tensor) + " --layout torch-mha --heads 1 --tokens a,b --scene-out " + q(tensor)),
                {refused + tensor + "'"});
  EXPECT_EQ(model_test::slurp(tensor), tensor_bytes);
  // Still an ordinary output elsewhere.
  const CommandRun ok = cli("tokenize " + q(ckpt) + " --text hi -o " + q(dir + "/ids.json"));
  ASSERT_EQ(ok.status, 0) << ok.err;
}

TEST(OutputsCli, TwoOutputsAtOnePathAreRefused) {
  const std::string ckpt = model_test::tinyCheckpoint();
  const std::string dir = model_test::tempDir();
  const std::string model = "model " + q(ckpt) + " --text hi --layer 1 ";
  const std::string same = dir + "/same.json";
  expectOneLine(cli(model + "--out " + q(same) + " --scene-out " + q(same)),
                {"output path: expected a file that no other output of the command names, got '" + same + "' twice"});
  // Spelled differently, or a link to it, or an existing file's hard link: the same file.
  expectOneLine(cli(model + "--out " + q(same) + " --scene-out " + q(dir + "/./same.json")),
                {"got '" + dir + "/./same.json', the same file as '" + same + "'"});
  fs::create_symlink("same.json", dir + "/link.json");
  expectOneLine(cli(model + "--out " + q(same) + " --scene-out " + q(dir + "/link.json")),
                {"got '" + dir + "/link.json', the same file as '" + same + "'"});
  fs::remove(dir + "/link.json");
  EXPECT_TRUE(filesIn(dir).empty());
  writeFile(dir + "/old.json", "old");
  fs::create_hard_link(dir + "/old.json", dir + "/hard.json");
  expectOneLine(cli(model + "--out " + q(dir + "/old.json") + " --scene-out " + q(dir + "/hard.json")),
                {"the same file as '" + dir + "/old.json'"});
  EXPECT_EQ(model_test::slurp(dir + "/old.json"), "old");
  const std::string tensor = smallTensor(dir);
  expectOneLine(cli("view " + q(tensor) + " --tokens '[\"a\",\"b\"]' -o " + q(dir + "/g.svg") + " --grid-out " +
                    q(dir + "/g.svg")),
                {"twice"});
  EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"attn.safetensors", "hard.json", "old.json"}));
}

TEST(OutputsCli, ARenameThatFailsLeavesNoneOfTheNewOutputs) {
  const std::string ckpt = model_test::tinyCheckpoint();
  const std::string dir = model_test::tempDir();
  // m.json stood there before (put back), s.json did not (removed), g.png cannot be replaced (its rename fails
  // after m.json's and s.json's: model renames --out, --scene-out, --grid-out in that order).
  writeFile(dir + "/m.json", "old m");
  writeFile(dir + "/g.png", "old grid");
  if (const std::string why = makeImmutable(dir + "/g.png"); !why.empty()) {
    if (attnscope::test::underCi()) GTEST_FAIL() << "CI=true and " << why;
    GTEST_SKIP() << why;
  }
  const CommandRun r = cli("model " + q(ckpt) + " --text 'hello there' --layer 1 --out " + q(dir + "/m.json") +
                           " --scene-out " + q(dir + "/s.json") + " --grid-out " + q(dir + "/g.png"));
  const CommandRun v = cli("view " + q(smallTensor(dir)) + " --tokens '[\"a\",\"b\"]' -o " + q(dir + "/m.json") +
                           " --grid-out " + q(dir + "/g.png"));
  model_test::run("chattr -i " + q(dir + "/g.png"));
  expectOneLine(r, {"output path: expected a writable location, got '" + dir + "/g.png' (Operation not permitted)"});
  expectOneLine(v, {"output path: expected a writable location, got '" + dir + "/g.png' (Operation not permitted)"});
  EXPECT_EQ(model_test::slurp(dir + "/m.json"), "old m");
  EXPECT_EQ(model_test::slurp(dir + "/g.png"), "old grid");
  EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"attn.safetensors", "g.png", "m.json"}));
}

TEST(OutputsCli, StandardOutputThatCannotBeWrittenIsExitTwo) {
  const std::string dir = model_test::tempDir();
  const std::string scene = writeFile(dir + "/s.json", kScene);
  const std::string ckpt = model_test::tinyCheckpoint();
  const std::string tensor = smallTensor(dir);
  const std::string big = bigScene(dir, 300);  // 5.8 MB of JSON: many writes, the first one fails
  const std::vector<std::string> commands = {
      "compute " + q(scene),
      "compute " + q(big),
      "walkthrough",
      "analyze " + q(scene),
      "tokenize " + q(ckpt) + " --text 'hello there'",
      "model " + q(ckpt) + " --text 'hello there'",
      "view " + q(tensor) + " --tokens '[\"a\",\"b\"]'",
      "export " + q(scene) + " --what heads --format csv --out " + q(dir + "/h.csv"),  // prints "wrote ..."
      "--help",
  };
  for (const std::string& command : commands) {
    SCOPED_TRACE(command);
    // The braces keep the command's own redirection inside the one run() adds for stderr.
    expectOneLine(model_test::run("{ '" + std::string(ATTNSCOPE_BINARY) + "' " + command + " > /dev/full; }"),
                  {"attnscope: standard output: expected a writable output, got a failed write (No space left on "
                   "device)"});
    expectOneLine(model_test::run("{ '" + std::string(ATTNSCOPE_BINARY) + "' " + command + " >&-; }"),
                  {"attnscope: standard output: expected a writable output, got a failed write (Bad file descriptor)"});
    const CommandRun ok = model_test::run("{ '" + std::string(ATTNSCOPE_BINARY) + "' " + command + " > /dev/null; }");
    EXPECT_EQ(ok.status, 0) << ok.err;
  }
}

namespace {

struct Spawned {
  pid_t pid = -1;
};

// attnscope with `args`, its output to /dev/null, every handled signal at its default (a test runner started
// in the background has SIGINT ignored, which a child inherits), no core files, and optionally a file-size
// limit or SIGHUP ignored (as nohup does).
pid_t spawn(const std::vector<std::string>& args, rlim_t file_limit = RLIM_INFINITY, bool ignore_hup = false) {
  std::vector<std::string> argv_text = {ATTNSCOPE_BINARY};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ}) ::signal(sig, SIG_DFL);
  if (ignore_hup) ::signal(SIGHUP, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const rlimit no_core{0, 0}, size{file_limit, file_limit};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::setrlimit(RLIMIT_FSIZE, &size);
  const int devnull = ::open("/dev/null", O_WRONLY);
  ::dup2(devnull, 1);
  ::dup2(devnull, 2);
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

// Waits (up to a minute) until a temporary shows in `dir`; false when the child ended first (its wait status
// then in `ended`).
bool waitForTemporary(const std::string& dir, pid_t pid, int& ended) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    for (const std::string& name : filesIn(dir))
      if (name.find(".tmp-") != std::string::npos) return true;
    if (::waitpid(pid, &ended, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

int waitStatus(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST(OutputsCli, FatalSignalsRemoveTheTemporaryAndKillBySameSignal) {
  const std::string dir = model_test::tempDir();
  const std::string big = bigScene(dir, 1500);
  const std::string out = writeFile(dir + "/out.json", "old");
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    SCOPED_TRACE(strsignal(sig));
    const pid_t pid = spawn({"compute", big, "-o", out});
    int ended = 0;
    ASSERT_TRUE(waitForTemporary(dir, pid, ended)) << "ended first, status " << ended;
    ::kill(pid, sig);
    const int status = waitStatus(pid);
    EXPECT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WIFSIGNALED(status) ? WTERMSIG(status) : 0, sig);
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"big.json", "out.json"}));
    EXPECT_EQ(model_test::slurp(out), "old");
  }
  // A file-size limit of 1 MiB: the kernel's SIGXFSZ at the write past it, the temporary removed.
  const int status = waitStatus(spawn({"compute", big, "-o", out}, 1 << 20));
  EXPECT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WIFSIGNALED(status) ? WTERMSIG(status) : 0, SIGXFSZ);
  EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"big.json", "out.json"}));
  EXPECT_EQ(model_test::slurp(out), "old");
}

TEST(OutputsCli, AnIgnoredSignalStaysIgnored) {
  // Under nohup SIGHUP is ignored: the command goes on and writes its output.
  const std::string dir = model_test::tempDir();
  const std::string scene = bigScene(dir, 300);
  const std::string out = dir + "/out.json";
  const pid_t pid = spawn({"compute", scene, "-o", out}, RLIM_INFINITY, true);
  int status = 0;
  if (waitForTemporary(dir, pid, status)) {  // else it finished first: nothing to send
    ::kill(pid, SIGHUP);
    status = waitStatus(pid);
  }
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(json::parse(model_test::slurp(out))["heads"].size(), 4u);
  EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"big.json", "out.json"}));
}

TEST(OutputsCli, LongValidNamesAreWritten) {
  const std::string dir = model_test::tempDir();
  const std::string scene = writeFile(dir + "/s.json", kScene);
  std::string utf8;  // 124 two-byte characters (248 bytes), then "ab.json": 255 bytes
  for (int i = 0; i < 124; ++i) utf8 += "\xc3\xa9";
  utf8 += "ab.json";
  ASSERT_EQ(utf8.size(), 255u);
  for (const std::string& name : {std::string(239, 'n') + ".json", std::string(250, 'n') + ".json", utf8}) {
    SCOPED_TRACE(name.size());
    for (int time = 0; time < 2; ++time) {  // made, then replaced
      const CommandRun r = cli("compute " + q(scene) + " -o " + q(dir + "/" + name));
      ASSERT_EQ(r.status, 0) << r.err;
      expectHandWeights(model_test::slurp(dir + "/" + name));
    }
    std::vector<std::string> left = {name, "s.json"};
    std::sort(left.begin(), left.end());
    EXPECT_EQ(filesIn(dir), left);
    fs::remove(dir + "/" + name);
  }
  // 256 bytes is past the limit: the user's own name is refused, in one line.
  expectOneLine(cli("compute " + q(scene) + " -o " + q(dir + "/" + std::string(251, 'n') + ".json")),
                {"(File name too long)"});
  EXPECT_EQ(filesIn(dir), std::vector<std::string>{"s.json"});
}
