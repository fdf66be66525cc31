// The window's command line (app/window/startup_open.h): what it names is read and checked before any window,
// so a bad path or option is one line naming it and exit status 2, like the CLI's. Run with no display: an
// accepted command line gets as far as asking for one ("window: expected a display"), which is how these tests
// tell accepted from refused.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "command_support.h"

namespace {

using attnscope::test::CommandRun;

CommandRun window(const std::string& args) {
  return attnscope::test::run(std::string("env -u DISPLAY -u WAYLAND_DISPLAY '") + ATTNSCOPE_BINARY + "' " + args +
                              " </dev/null");
}

constexpr const char* kNoDisplay = "attnscope: window: expected a display";

void expectRefused(const CommandRun& r, const std::string& line) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err, line + "\n");
  EXPECT_EQ(r.out, "");
}

void expectAccepted(const CommandRun& r) {
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind(kNoDisplay, 0), 0u) << r.err;
}

}  // namespace

TEST(WindowArgs, AFileOrFolderThatExistsOpensInTheWindow) {
  const std::string dir = attnscope::test::tempDir();
  const std::string scene = std::string(ATTNSCOPE_SOURCE_DIR) + "/assets/scenes/worked_example.json";
  expectAccepted(window("'" + scene + "'"));
  expectAccepted(window("--scene '" + scene + "'"));
  // A folder is a checkpoint (read when the window runs it, with its progress and errors in the window).
  expectAccepted(window("'" + dir + "' --text 'hello there'"));
  // Neither a command nor a path: the commands are listed, and the path's possibility named.
  expectRefused(window("'" + dir + "/missing.npy'"),
                "attnscope: command: expected one of compute, walkthrough, export, bench, analyze, model, tokenize, "
                "import, view, or a file or folder to open in the window, got '" + dir + "/missing.npy'");
}

TEST(WindowArgs, OptionsThatBelongToAnotherKindOfFileAreRefused) {
  const std::string dir = attnscope::test::tempDir();
  const std::string scene = std::string(ATTNSCOPE_SOURCE_DIR) + "/assets/scenes/worked_example.json";
  expectRefused(window("'" + scene + "' --text hi"),
                "attnscope: --text: expected a checkpoint folder to go with it, got '" + scene + "', a scene file");
  expectRefused(window("'" + dir + "' --tokens 'a b'"),
                "attnscope: --tokens: expected an attention tensor file to go with it, got '" + dir + "', a checkpoint");
  expectRefused(window("--text hi"),
                "attnscope: --text: expected a checkpoint folder (attnscope DIR --text T) to go with it, got no path");
  expectRefused(window("'" + scene + "' --scene '" + scene + "'"),
                "attnscope: --scene: expected one file to open, got both --scene and '" + scene + "'");
  expectRefused(window("'" + dir + "' --text hi --text-file x.txt"),
                "attnscope: --text: expected either --text or --text-file, got both");
}

TEST(WindowArgs, AnNpyFileGivenAsSceneIsReadAsArraysNotJson) {
  // A (1, 1, 2, 2) float32 attention tensor: rows [0.25 0.75], [0.5 0.5].
  const std::string dir = attnscope::test::tempDir();
  const std::string npy = dir + "/att.npy";
  {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 2), }";
    header.append(128 - 10 - header.size() - 1, ' ').push_back('\n');
    std::ofstream out(npy, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(header.size()), 0};
    out.write(len, 2);
    out << header;
    const float values[4] = {0.25f, 0.75f, 0.5f, 0.5f};
    out.write(reinterpret_cast<const char*>(values), sizeof values);
  }
  // Once "got a NUL byte at line 1": now the tensor, read with its tokens before the window (and the Open form
  // without them, which needs the window).
  expectAccepted(window("--scene '" + npy + "' --tokens 'a b'"));
  expectAccepted(window("--scene '" + npy + "'"));
  expectAccepted(window("'" + npy + "' --tokens '[\"a\", \"b\"]'"));
  // Tokens that do not match the tensor's 2 positions: refused before the window, naming the tokens.
  const CommandRun wrong = window("'" + npy + "' --tokens '[\"a\", \"b\", \"c\"]'");
  EXPECT_EQ(wrong.status, 2);
  EXPECT_NE(wrong.err.find("tokens"), std::string::npos) << wrong.err;
  EXPECT_EQ(wrong.err.find(kNoDisplay), std::string::npos) << wrong.err;
  expectRefused(window("'" + npy + "' --tokens 'a b' --tensor big"),
                "attnscope: --tensor: expected none (" + npy + " holds one unnamed array), got 'big'");
}
