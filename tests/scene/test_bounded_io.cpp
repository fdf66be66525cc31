// The bounded readers and writers every room uses (text_bounds.h, json_file.h, atomic_file.h), on hostile
// inputs: quoting, eliding, nesting, huge tokens, devices and folders, several outputs of which one fails.
// Expected strings are written out by hand from the functions' documented formats.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/text_bounds.h"
#include "command_support.h"

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

template <typename F>
std::string errorOf(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(TextBounds, QuoteFragmentIsShortAndPrintable) {
  EXPECT_EQ(quoteFragment("abc"), "'abc'");
  // A newline, a control byte, a byte that is not UTF-8, a NUL, a quote: all escaped, none raw.
  EXPECT_EQ(quoteFragment(std::string("a\nb\x01\xff", 5) + std::string(1, '\0') + "it's"),
            "'a\\nb\\x01\\xff\\x00it\\'s'");
  // UTF-8 stays as it is: "é" is one character.
  EXPECT_EQ(quoteFragment("caf\xc3\xa9"), "'caf\xc3\xa9'");
  // 100 characters: 80 shown, then the ellipsis and the whole length in bytes.
  EXPECT_EQ(quoteFragment(std::string(100, 'x')), "'" + std::string(80, 'x') + "\xe2\x80\xa6' (100 bytes)");
  EXPECT_EQ(quoteFragment(std::string(50'000'000, 'y')).size(),
            1u + 80 + 3 + 1 + std::string(" (50000000 bytes)").size());
}

TEST(TextBounds, ElideLabelCountsCharactersNotBytes) {
  EXPECT_EQ(elideLabel("abc", 3), "abc");
  EXPECT_EQ(elideLabel("abcd", 3), "ab\xe2\x80\xa6");
  EXPECT_EQ(elideLabel("h\xc3\xa9llo", 3), "h\xc3\xa9\xe2\x80\xa6");  // never splits the two bytes of é
  EXPECT_EQ(elideLabel("abc", 0), "");
  EXPECT_EQ(utf8Length("h\xc3\xa9llo"), 5u);
  EXPECT_EQ(utf8Length(std::string("\xff\xfe", 2)), 2u);  // each invalid byte counts as one
}

TEST(TextBounds, ElideToWidthBisectsAndMeasuresLittle) {
  // Width = characters; 10 fit: 9 characters and the ellipsis.
  int measured = 0;
  const auto width = [&](const std::string& t) {
    ++measured;
    return static_cast<double>(utf8Length(t));
  };
  const std::string label = elideToWidth(std::string(30'000, 'a'), 10, width);
  EXPECT_EQ(label, std::string(9, 'a') + "\xe2\x80\xa6");
  // 256 characters at most are considered, bisected: 1 + ceil(log2 256) + 1 measurements, not 30,000.
  EXPECT_LE(measured, 10);
  EXPECT_EQ(elideToWidth("short", 10, width), "short");
}

TEST(TextBounds, PrintableLineBoundsAWholeMessage) {
  const std::string line = printableLine("x: got " + std::string(1'000'000, 'z'));
  EXPECT_LE(line.size(), 600u + 40u);
  EXPECT_NE(line.find("more bytes)"), std::string::npos);
  EXPECT_EQ(printableLine(std::string("a\0b", 3)), "a\\x00b");  // not cut at the NUL
  EXPECT_EQ(terminalLabel("line\nbreak and a long tail"), "line\\nbreak and \xe2\x80\xa6");
}

TEST(JsonFile, NestingIsBoundedBeforeParsing) {
  // 100,000 levels: refused by the scan, at the 65th bracket (line 1, column 65).
  EXPECT_EQ(errorOf([] { parseJsonText(std::string(100'000, '['), "deep.json"); }),
            "deep.json: expected JSON nested at most 64 deep, got deeper nesting at line 1, column 65");
  EXPECT_EQ(errorOf([] { parseJsonText(std::string(100'000, '{'), "deep.json"); }),
            "deep.json: expected JSON nested at most 64 deep, got deeper nesting at line 1, column 65");
  // Under a key, on line 2: the 65th bracket is at column 7 + 64 = 71 ({ is level 1).
  EXPECT_EQ(errorOf([] { parseJsonText("{\n \"a\": " + std::string(100'000, '['), "d.json"); }),
            "d.json: expected JSON nested at most 64 deep, got deeper nesting at line 2, column 70");
  // 64 deep parses; brackets inside a string (with an escaped quote) do not count.
  EXPECT_NO_THROW(parseJsonText(std::string(64, '[') + std::string(64, ']'), "ok.json"));
  EXPECT_NO_THROW(parseJsonText("[\"\\\"" + std::string(10'000, '[') + "\"]", "ok.json"));
}

TEST(JsonFile, SyntaxErrorsAreShortWhateverTheInput) {
  // An unterminated 50 MB string: nlohmann's own message would quote all of it.
  const std::string unterminated = "{\"a\": \"" + std::string(50'000'000, 'x');
  const std::string message = errorOf([&] { parseJsonText(unterminated, "big.json"); });
  EXPECT_EQ(message.rfind("big.json: expected valid JSON, got a syntax error at line 1, column ", 0), 0u) << message;
  EXPECT_LT(message.size(), 400u) << message.size();
  // A 100,000-digit number overflows a double: quoted to 40 characters, placed by line and column.
  const std::string digits = "[" + std::string(100'000, '9') + "]";
  EXPECT_EQ(errorOf([&] { parseJsonText(digits, "n.json"); }),
            "n.json: expected finite numbers, got '" + std::string(40, '9') +
                "\xe2\x80\xa6' (100000 bytes) at line 1, column 2 (too large: not finite)");
  // Invalid UTF-8 in a string: named, escaped.
  const std::string bad = errorOf([] { parseJsonText("[\"\xff\"]", "u.json"); });
  EXPECT_NE(bad.find("\\xff"), std::string::npos) << bad;
  EXPECT_EQ(bad.find('\xff'), std::string::npos) << bad;
  EXPECT_EQ(errorOf([] { parseJsonText("", "e.json"); }).find("(the text is empty)") != std::string::npos, true);
}

TEST(BoundedRead, FoldersDevicesAndLargeFilesAreRefusedWithoutReadingThem) {
  const std::string dir = attnscope::test::tempDir();
  EXPECT_EQ(errorOf([&] { readWholeFile(dir, "scene file"); }),
            "scene file: expected a file, got '" + dir + "', which is a folder");
  // /dev/zero never ends: read to the limit, then refused.
  EXPECT_EQ(errorOf([] { readWholeFile("/dev/zero", "--text-file", 1 << 20); }),
            "--text-file: expected a readable file of at most 1.0 MiB, got '/dev/zero' of more than 1.0 MiB (a device "
            "or pipe, read up to the limit)");
  // A 60 MB file (sparse: made in no time) is refused by its size alone.
  const std::string big = dir + "/big.txt";
  { std::ofstream(big) << "x"; }
  ASSERT_EQ(::truncate(big.c_str(), 60'000'000), 0);
  EXPECT_EQ(errorOf([&] { readWholeFile(big, "--text-file", 16 << 20); }),
            "--text-file: expected a readable file of at most 16.0 MiB, got '" + big + "' of 57.2 MiB");
  // A FIFO with a writer that never stops: read to the limit.
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const attnscope::test::CommandRun r = attnscope::test::run("(yes > '" + fifo + "' 2>/dev/null &) ; true");
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(errorOf([&] { readWholeFile(fifo, "f", 1 << 20); }).find("of more than 1.0 MiB"), std::string::npos);
  EXPECT_EQ(readWholeFile("/proc/self/cmdline", "f").empty(), false);  // stat says 0 bytes; read to the end
}

TEST(AtomicOutputs, SeveralOutputsAreAllWrittenOrNone) {
  const std::string dir = attnscope::test::tempDir();
  // The second path cannot be written: the first is not written either, and no temporary is left.
  EXPECT_THROW(writeFilesAtomically({{dir + "/m.json", "{}"}, {"/proc/r.png", "png"}}), InputError);
  EXPECT_FALSE(fs::exists(dir + "/m.json"));
  EXPECT_TRUE(fs::is_empty(dir));
  // A folder as an output: named as one.
  fs::create_directory(dir + "/taken");
  EXPECT_EQ(errorOf([&] { writeFileAtomically(dir + "/taken", "x"); }),
            "output path: expected a file path, got '" + dir + "/taken', which is a folder");
  // Pending files destroyed uncommitted (an error in the work) leave nothing.
  {
    std::vector<PendingFile> files;
    files.emplace_back(dir + "/a.json");
    files.back().write("partial");
  }
  EXPECT_FALSE(fs::exists(dir + "/a.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // only "taken"
  // Both written: all renamed, with the bytes given (more than the write buffer for one).
  const std::string large(3 << 20, 'q');
  writeFilesAtomically({{dir + "/1.txt", "one"}, {dir + "/2.txt", large}});
  EXPECT_EQ(attnscope::test::slurp(dir + "/1.txt"), "one");
  EXPECT_EQ(attnscope::test::slurp(dir + "/2.txt"), large);
}
