// Issue 15's reproductions, run as a user would: deep JSON in every file the program reads, NaN and inf
// weights, finite scenes whose arithmetic overflows, endless and huge inputs, a 30,000-character label, outputs
// beyond the budget, several outputs with one failing, and error lines that must stay short and printable.
// Big inputs are made here at run time. Each refusal: exit 2, one line on stderr naming what was wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/test_model_support.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

model_test::CommandRun cli(const std::string& args) {
  return model_test::run(std::string("'") + ATTNSCOPE_BINARY + "' " + args);
}

// Exit 2, one bounded line holding every needle.
void expectOneLine(const model_test::CommandRun& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.status, 2) << r.err.substr(0, 400);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err.substr(0, 400);
  EXPECT_LT(r.err.size(), 700u) << r.err.substr(0, 400);
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' in " << r.err;
}

const char* kSceneHead = R"({"format": "attnscope-scene", "version": 1, "d_model": 2, )";

// A one-head scene, d_model 2, identity projections scaled by `w`; rows `query`.
std::string scene(const std::string& query, const std::string& tokens, const std::string& w = "1") {
  return std::string(kSceneHead) + "\"query_tokens\": " + tokens + ", \"query\": " + query +
         ", \"heads\": [{\"w_q\": [[" + w + ", 0], [0, " + w +
         "]], \"w_k\": [[1, 0], [0, 1]], \"w_v\": [[1, 0], [0, 1]]}]}";
}

std::string writeFile(const std::string& dir, const std::string& name, const std::string& bytes) {
  model_test::spit(dir + "/" + name, bytes);
  return dir + "/" + name;
}

// The tiny checkpoint with `edit(bytes, data_start, header)` applied to model.safetensors.
template <typename Edit>
std::string editedCheckpoint(const std::string& dtype, Edit edit) {
  const std::string dir = model_test::tinyCheckpoint("--dtype " + dtype);
  const std::string path = dir + "/model.safetensors";
  std::string bytes = model_test::slurp(path);
  std::uint64_t len = 0;
  std::memcpy(&len, bytes.data(), 8);
  edit(bytes, 8 + len, json::parse(bytes.substr(8, len)));
  model_test::spit(path, bytes);
  return dir;
}

// Writes `bits` (2 or 4 bytes) over element `index` of tensor `name`.
void poke(std::string& bytes, std::size_t data_start, const json& header, const std::string& name, std::size_t index,
          const void* bits, std::size_t size) {
  const std::size_t begin = header.at(name).at("data_offsets")[0].get<std::size_t>();
  std::memcpy(bytes.data() + data_start + begin + index * size, bits, size);
}

std::string modelRun(const std::string& dir, const std::string& extra = "") {
  return "model '" + dir + "' --text 'hello there' " + extra;
}

}  // namespace

TEST(HostileCli, DeepNestingInEverySceneField) {
  const std::string dir = model_test::tempDir();
  const std::string deep = std::string(100'000, '[');
  for (const std::string& text : {deep, std::string(kSceneHead) + "\"description\": " + deep,
                                  std::string(kSceneHead) + "\"query_tokens\": " + deep}) {
    const std::string path = writeFile(dir, "deep.json", text);
    for (const char* command : {"compute", "walkthrough", "analyze"})
      expectOneLine(cli(std::string(command) + " '" + path + "'"),
                    {path + ": expected JSON nested at most 64 deep, got deeper nesting at line 1"});
  }
}

TEST(HostileCli, DeepNestingInCheckpointFiles) {
  const std::string deep = std::string(100'000, '[');
  {
    const std::string dir = model_test::tinyCheckpoint();
    writeFile(dir, "config.json", deep);
    expectOneLine(cli(modelRun(dir)), {"config.json: expected JSON nested at most 64 deep"});
  }
  {
    const std::string dir = model_test::tinyCheckpoint();
    writeFile(dir, "vocab.json", "{\"a\": " + deep);
    expectOneLine(cli(modelRun(dir)), {"vocab.json: expected JSON nested at most 64 deep", "line 1, column 70"});
  }
  {
    const std::string dir = model_test::tinyCheckpoint();
    std::string header = "{\"__metadata__\": " + deep;
    std::string bytes(8, '\0');
    const std::uint64_t len = header.size();
    std::memcpy(bytes.data(), &len, 8);
    writeFile(dir, "model.safetensors", bytes + header);
    expectOneLine(cli(modelRun(dir)), {"model.safetensors: header: expected JSON nested at most 64 deep"});
  }
}

TEST(HostileCli, NonFiniteWeightsAreRefusedNamingFileAndTensor) {
  const float nan32 = std::numeric_limits<float>::quiet_NaN();
  const std::uint16_t nan16 = 0x7E00, inf16 = 0x7C00, nan_bf16 = 0x7FC0;
  struct Case {
    std::string dtype, tensor;
    const void* bits;
    std::size_t size, index;
    std::string expected;
  };
  // gpt2_reference.py writes n_embd 32: wte is (vocab, 32), element 33 is [1][1]; c_attn is (32, 96), element 97
  // is [1][1].
  const std::vector<Case> cases = {
      {"F32", "transformer.wte.weight", &nan32, 4, 5,
       "tensor 'transformer.wte.weight': expected finite F32 weights, got nan at [0][5]"},
      {"F16", "transformer.wte.weight", &nan16, 2, 33,
       "tensor 'transformer.wte.weight': expected finite F16 weights, got nan at [1][1]"},
      {"BF16", "transformer.wte.weight", &nan_bf16, 2, 0, "expected finite BF16 weights, got nan at [0][0]"},
      {"F16", "transformer.h.0.attn.c_attn.weight", &inf16, 2, 97,
       "tensor 'transformer.h.0.attn.c_attn.weight': expected finite F16 weights, got inf at [1][1]"},
  };
  for (const Case& c : cases) {
    const std::string dir = editedCheckpoint(c.dtype, [&](std::string& bytes, std::size_t start, const json& header) {
      poke(bytes, start, header, c.tensor, c.index, c.bits, c.size);
    });
    const std::string out = model_test::tempDir() + "/m.json";
    for (const char* backend : {"cpu", "auto"}) {
      const model_test::CommandRun r = cli(modelRun(dir, "--out '" + out + "' --backend " + backend));
      expectOneLine(r, {dir + "/model.safetensors: ", c.expected});
      EXPECT_FALSE(fs::exists(out));
    }
  }
}

TEST(HostileCli, ForwardOverflowNamesLayerAndStage) {
  // Every embedding entry 3e38: wte + wpe = 6e38, past float32's 3.4e38 (finite weights, overflowing sum).
  const std::string dir = editedCheckpoint("F32", [](std::string& bytes, std::size_t start, const json& header) {
    const float big = 3e38f;
    for (const char* name : {"transformer.wte.weight", "transformer.wpe.weight"}) {
      const auto& offsets = header.at(name).at("data_offsets");
      const std::size_t count = (offsets[1].get<std::size_t>() - offsets[0].get<std::size_t>()) / 4;
      for (std::size_t i = 0; i < count; ++i) poke(bytes, start, header, name, i, &big, 4);
    }
  });
  const std::string out = model_test::tempDir() + "/m.json";
  expectOneLine(cli(modelRun(dir, "--out '" + out + "'")),
                {"forward: expected finite activations (float32), got a non-finite value at the embedding (wte + wpe), "
                 "token 0"});
  EXPECT_FALSE(fs::exists(out));
}

TEST(HostileCli, ScenesWhoseArithmeticOverflowsAreRefused) {
  const std::string dir = model_test::tempDir();
  // W_Q = 2 I on rows of 3e38: q = 6e38 = inf (the projection overflows).
  const std::string q_overflow = writeFile(dir, "q.json", scene("[[3e38, 0], [0, 1]]", "[\"a\", \"b\"]", "2"));
  // q = 3e38 is finite, but q . k / sqrt(2) = 9e76 / 1.41 is not: the softmax of row 0 is undefined.
  const std::string score_overflow = writeFile(dir, "s.json", scene("[[3e38, 0], [0, 1]]", "[\"a\", \"b\"]"));
  for (const char* command : {"compute", "analyze", "walkthrough"}) {
    expectOneLine(cli(std::string(command) + " '" + q_overflow + "'"),
                  {"heads[0].q: expected finite numbers (float32), got inf at query row 0 ('a'), column 0: the "
                   "projection X W_Q + b_Q overflows float32"});
    expectOneLine(
        cli(std::string(command) + " '" + score_overflow + "'"),
        {"heads[0].weights: expected finite numbers (float32), got nan at query row 0 ('a'), key 0: a score"});
  }
  // The GPU backend (auto: the GPU when one starts, llvmpipe in CI) refuses the same way, from its read-back.
  expectOneLine(cli("compute '" + score_overflow + "' --backend auto"), {"heads[0].weights: expected finite numbers"});
  expectOneLine(cli("compute '" + q_overflow + "' --backend auto"), {"heads[0].q: expected finite numbers"});
  const std::string png = dir + "/h.png";
  expectOneLine(cli("export '" + score_overflow + "' --what heads --format png --out '" + png + "'"),
                {"heads[0].weights"});
  EXPECT_FALSE(fs::exists(png));
}

TEST(HostileCli, EndlessAndHugeInputsAreRefusedEarly) {
  expectOneLine(cli("compute /dev/zero"), {"scene file: expected a readable file of at most 256.0 MiB, got "
                                           "'/dev/zero' of more than 256.0 MiB (a device or pipe"});
  const std::string ckpt = model_test::tinyCheckpoint();
  expectOneLine(cli("model '" + ckpt + "' --text-file /dev/zero"),
                {"--text-file: expected a readable file of at most 16.0 MiB, got '/dev/zero' of more than"});
  const std::string dir = model_test::tempDir();
  // 60 MB (sparse): refused by its size before a byte is read.
  const std::string big = writeFile(dir, "big.txt", "x");
  ASSERT_EQ(::truncate(big.c_str(), 60'000'000), 0);
  expectOneLine(cli("model '" + ckpt + "' --text-file '" + big + "'"), {"of 57.2 MiB"});
  // 1 MB of words: under the file limit, but more bytes than 40 positions of the longest token can hold.
  std::string words;
  while (words.size() < 1'000'000) words += "hello ";
  const std::string text = writeFile(dir, "words.txt", words);
  expectOneLine(cli("model '" + ckpt + "' --text-file '" + text + "'"),
                {"text: expected at most 40 tokens, got 1000002 bytes, more than 40 tokens of at most"});
  // A folder where a file is expected.
  expectOneLine(cli("compute '" + dir + "'"), {"scene file: expected a file, got '" + dir + "', which is a folder"});
  expectOneLine(cli("model '" + ckpt + "' --text-file '" + dir + "'"), {"which is a folder"});
}

TEST(HostileCli, LongLabelsAreElidedInFiguresAndOnTheTerminal) {
  const std::string dir = model_test::tempDir();
  const std::string label(30'000, 'L');
  const std::string path = writeFile(dir, "label.json", scene("[[1, 0], [0, 1]]", "[\"" + label + "\", \"b\"]"));
  const std::string svg = dir + "/h.svg";
  const model_test::CommandRun r = cli("export '" + path + "' --what heads --format svg --out '" + svg + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string text = model_test::slurp(svg);
  EXPECT_NE(text.find("L\xe2\x80\xa6"), std::string::npos);  // cut, with the ellipsis
  EXPECT_EQ(text.find(std::string(100, 'L')), std::string::npos);
  // The walkthrough prints the label in every matrix: 16 characters each time, not 30,000.
  const model_test::CommandRun w = cli("walkthrough '" + path + "'");
  ASSERT_EQ(w.status, 0) << w.err;
  EXPECT_NE(w.out.find(std::string(15, 'L') + "\xe2\x80\xa6"), std::string::npos);
  EXPECT_EQ(w.out.find(std::string(16, 'L')), std::string::npos);
  EXPECT_LT(w.out.size(), 20'000u);
}

TEST(HostileCli, OutputsBeyondTheBudgetAreRefusedBeforeComputing) {
  // 5000 tokens, one head, d_model 1: the result is 2 x 5000^2 floats (191 MiB), under a 300 MiB budget; its
  // JSON would be 50 million numbers (~800 MiB), over it.
  const std::string dir = model_test::tempDir();
  std::string text = R"({"format": "attnscope-scene", "version": 1, "d_model": 1, "query_tokens": [)";
  for (int i = 0; i < 5000; ++i) text += (i ? ",\"t\"" : "\"t\"");
  text += "], \"query\": [";
  for (int i = 0; i < 5000; ++i) text += (i ? ",[1]" : "[1]");
  text += R"(], "heads": [{"w_q": [[1]], "w_k": [[1]], "w_v": [[1]]}]})";
  const std::string path = writeFile(dir, "long.json", text);
  const std::string out = dir + "/r.json";
  expectOneLine(model_test::run("ATTNSCOPE_MEMORY_BUDGET=300M '" + std::string(ATTNSCOPE_BINARY) + "' compute '" +
                                path + "' -o '" + out + "'"),
                {"compute output: expected an output within the memory budget of 300.0 MiB", "got an estimated"});
  EXPECT_FALSE(fs::exists(out));
}

TEST(HostileCli, SeveralOutputsOneFailingLeavesNone) {
  const std::string ckpt = model_test::tinyCheckpoint();
  const std::string dir = model_test::tempDir();
  expectOneLine(cli(modelRun(ckpt, "--out '" + dir + "/m.json' --rollout-out /proc/r.png")),
                {"output path: expected a writable location, got '/proc/r.png'"});
  expectOneLine(cli(modelRun(ckpt, "--out '" + dir + "/m.json' --grid-out '" + dir + "'/no/such/g.png")),
                {"output path: expected a file in an existing folder, got '" + dir + "/no/such/g.png' (no folder '" + dir +
                 "/no/such')"});
  fs::create_directory(dir + "/folder.png");
  expectOneLine(cli(modelRun(ckpt, "--out '" + dir + "/m.npy' --grid-out '" + dir + "/folder.png'")),
                {"which is a folder"});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // only folder.png
  // All writable: all written.
  const model_test::CommandRun ok = cli(
      modelRun(ckpt, "--out '" + dir + "/m.json' --rollout-out '" + dir + "/r.svg' --grid-out '" + dir + "/g.png'"));
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(json::parse(model_test::slurp(dir + "/m.json"))["format"], "attnscope-model-result");
  EXPECT_TRUE(fs::exists(dir + "/r.svg"));
  EXPECT_TRUE(fs::exists(dir + "/g.png"));
}

TEST(HostileCli, ErrorLinesAreBoundedAndPrintable) {
  const std::string dir = model_test::tempDir();
  // An unterminated 50 MB string, a 100,000-digit number.
  const std::string big =
      writeFile(dir, "s.json", std::string(kSceneHead) + "\"description\": \"" + std::string(50'000'000, 'x'));
  expectOneLine(cli("compute '" + big + "'"), {"expected valid JSON, got a syntax error at line 1"});
  const std::string digits =
      writeFile(dir, "n.json", std::string(kSceneHead) + "\"query\": [[" + std::string(100'000, '7') + "]]}");
  expectOneLine(cli("compute '" + digits + "'"), {"expected finite numbers, got '777", "(100000 bytes)"});
  // A 50 MB token where a string is fine but its type is wrong elsewhere: described, not dumped.
  const std::string label = writeFile(dir, "l.json", std::string(kSceneHead) + "\"format2\": 1}");
  expectOneLine(cli("compute '" + label + "'"), {"format2: expected one of the keys"});
  // Invalid UTF-8 and a NUL in merges.txt: escaped, the line not cut at the NUL.
  const std::string ckpt = model_test::tinyCheckpoint();
  writeFile(ckpt, "merges.txt", std::string("#version: 0.2\n\xff\xfe \x01") + std::string(1, '\0') + "zz\n");
  const model_test::CommandRun r = cli(modelRun(ckpt));
  expectOneLine(r, {"merges.txt: line 2: expected symbols in", "'\\xff\\xfe', which is not"});
  EXPECT_EQ(r.err.find('\xff'), std::string::npos);
  writeFile(ckpt, "merges.txt",
            std::string("#version: 0.2\na b c") + std::string(1, '\0') + "\xff" + std::string(100'000, 'q') + "\n");
  const model_test::CommandRun r2 = cli(modelRun(ckpt));
  expectOneLine(r2, {"merges.txt: line 2: expected two symbols separated by one space, got 'a b c\\x00\\xffqqq",
                     "(100007 bytes)"});
}

namespace {

// Trust round 4: a checkpoint folder whose name is not UTF-8 made --analysis-out print nlohmann's
// "[json.exception.type_error.316] invalid UTF-8 byte" and exit. Its name is written with U+FFFD for the byte
// (as every JSON output writes one), and the rest of the file as usual.
TEST(HostileCli, CheckpointFolderNotUtf8InTheAnalysis) {
  const std::string dir = model_test::tempDir() + "/ck\xff";
  fs::copy(model_test::tinyCheckpoint(), dir);
  const std::string out = model_test::tempDir() + "/a.json";
  const model_test::CommandRun r = cli(modelRun(dir, "--analysis-out '" + out + "'"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
  const json a = json::parse(model_test::slurp(out));
  const std::string name = a.at("model").get<std::string>();
  const std::string tail = "/ck\xEF\xBF\xBD";  // U+FFFD in UTF-8
  ASSERT_GE(name.size(), tail.size());
  EXPECT_EQ(name.substr(name.size() - tail.size()), tail);
  EXPECT_TRUE(a.at("head_scores").is_object());
}

}  // namespace
