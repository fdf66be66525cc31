// `attnscope view` end to end: a (2, 3, n, n) tensor saved by NumPy (.npy, .npz) and by the test's own
// safetensors writer reads back equal to the array; hand-made maps get the head-type scores they are made to
// have; a saved tensor is not causal and is told from a state dict by content; the grid figure in a contrast;
// hostile tensors exit 2 with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "attnscope/arrays/attention_tensor.h"
#include "attnscope/arrays/user_layer.h"
#include "attnscope/model/model_export.h"
#include "cli/import_view_support.h"
#include "export/test_export_support.h"

using namespace attnscope;
using attnscope::test::TestTensor;

namespace {

constexpr int kLayers = 2, kHeads = 3, kN = 5;

// Exactly representable weights: 0.75 on key (i + l + h) % n and 0.25 on key (i + 2l + h + 1) % n (never the
// same key for l < 2, n = 5), so every reader must give these numbers bit for bit.
float madeWeight(int l, int h, int i, int j) {
  return (j == (i + l + h) % kN ? 0.75f : 0.0f) + (j == (i + 2 * l + h + 1) % kN ? 0.25f : 0.0f);
}

TestTensor madeTensor() {
  TestTensor t{{kLayers, kHeads, kN, kN}, {}};
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kHeads; ++h)
      for (int i = 0; i < kN; ++i)
        for (int j = 0; j < kN; ++j) t.data.push_back(madeWeight(l, h, i, j));
  return t;
}

const char* kMadeTensorPython =
    "import numpy as np, sys\n"
    "w = np.zeros((2, 3, 5, 5), np.float32)\n"
    "for l in range(2):\n"
    "  for h in range(3):\n"
    "    for i in range(5):\n"
    "      w[l, h, i, (i + l + h) % 5] += 0.75; w[l, h, i, (i + 2 * l + h + 1) % 5] += 0.25\n";

void expectMadeTensor(const arrays::AttentionTensor& t) {
  ASSERT_EQ(t.forward.layout.n_layer, kLayers);
  ASSERT_EQ(t.forward.layout.n_head, kHeads);
  ASSERT_EQ(t.forward.n, kN);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kHeads; ++h)
      for (int i = 0; i < kN; ++i)
        for (int j = 0; j < kN; ++j)
          ASSERT_EQ(t.forward.keptMap(l * kHeads + h)(i, j), madeWeight(l, h, i, j)) << l << h << i << j;
}

const std::vector<std::string> kTokens = {"the", "cat", "sat", "on", "it"};

}  // namespace

TEST(ViewCli, NpyNpzAndSafetensorsReadBackEqualToTheArray) {
  const std::string dir = test::tempDir("view");
  test::writeSafetensors(dir + "/a.safetensors", {{"attentions", madeTensor()}, {"other", {{2}, {1, 2}}}});
  expectMadeTensor(arrays::readAttentionTensor(dir + "/a.safetensors", "attentions", kTokens));
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const test::CommandRun py = test::run(std::string("/usr/bin/python3 -c \"") + kMadeTensorPython +
                                        "np.save(sys.argv[1] + '/a.npy', w); np.savez(sys.argv[1] + '/a.npz', attn=w)\" '" +
                                        dir + "'");
  ASSERT_EQ(py.status, 0) << py.err;
  expectMadeTensor(arrays::readAttentionTensor(dir + "/a.npy", std::nullopt, kTokens));
  expectMadeTensor(arrays::readAttentionTensor(dir + "/a.npz", std::nullopt, kTokens));
}

TEST(ViewCli, HandMadeHeadsScoreAsWhatTheyAre) {
  // (3, 4, 4): head 1 reads the first token only; head 2 the previous token (row 0 itself); head 3 every key
  // evenly. By hand: first_token 1, previous_token 1 (rows 1..3), first_token 1/4 and entropy ln 4.
  TestTensor t{{3, 4, 4}, std::vector<float>(48, 0.0f)};
  for (int i = 0; i < 4; ++i) {
    t.data[static_cast<std::size_t>(i * 4)] = 1.0f;
    t.data[static_cast<std::size_t>(16 + i * 4 + std::max(i - 1, 0))] = 1.0f;
    for (int j = 0; j < 4; ++j) t.data[static_cast<std::size_t>(32 + i * 4 + j)] = 0.25f;
  }
  const std::string dir = test::tempDir("view_scores");
  test::writeSafetensors(dir + "/heads.safetensors", {{"w", t}});
  std::ofstream(dir + "/tokens.txt") << "A\nB\nC\nD\n";
  const test::CommandRun r = test::runAttnscope("view '" + dir + "/heads.safetensors' --tokens '" + dir +
                                                "/tokens.txt' -o '" + dir + "/out.json' --grid-out '" + dir + "/g.png'");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(test::slurp(dir + "/out.json"));
  ASSERT_EQ(j["heads"].size(), 3u);
  EXPECT_EQ(j["heads"][0]["label"], "first_token");
  EXPECT_DOUBLE_EQ(j["heads"][0]["first_token"].get<double>(), 1.0);
  EXPECT_EQ(j["heads"][1]["label"], "previous_token");
  EXPECT_DOUBLE_EQ(j["heads"][1]["previous_token"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["heads"][2]["first_token"].get<double>(), 0.25);
  EXPECT_NEAR(j["heads"][2]["entropy"].get<double>(), std::log(4.0), 1e-6);  // float32 entropy; seen ~1e-7
  // Similarity of the first-token head with the uniform one: cosine of the flattened maps by hand,
  // (4 x 0.25) / (sqrt(4) x sqrt(16 x 0.0625)) = 1 / 2.
  EXPECT_NEAR(j["similarity"][0]["cosine"][0][2].get<double>(), 0.5, 1e-6);
  EXPECT_GT(test::slurp(dir + "/g.png").size(), 100u);
}

// What the window's Open shares with view and import: a saved tensor is not causal (every cell drawn, none
// greyed), a file tells a tensor from a state dict by content, and tokens are read as the CLI reads them.
TEST(ViewCli, SavedTensorsAreNotCausalAndAreToldFromLayersByContent) {
  const std::string dir = test::tempDir("view_open");
  test::writeSafetensors(dir + "/a.safetensors", {{"attentions", madeTensor()}});
  const arrays::AttentionTensor t = arrays::readAttentionTensor(dir + "/a.safetensors", std::nullopt, kTokens);
  EXPECT_FALSE(t.forward.layout.causal);
  // The made maps put weight above the diagonal (key (i + 1) % 5 for l = h = 0): the grid figure masks nothing.
  const Figure f = model::modelGridFigure(t.forward, t.forward.layout, t.tokens, -1);
  ASSERT_EQ(f.panels.size(), static_cast<std::size_t>(kLayers * kHeads));
  for (const HeatmapPanel& p : f.panels) EXPECT_TRUE(p.masked.size() == 0 || p.masked.cast<int>().sum() == 0) << p.title;

  auto arraysOf = [](std::vector<std::pair<std::string, std::vector<std::int64_t>>> shapes) {
    std::map<std::string, arrays::NamedArray> m;
    for (auto& [name, shape] : shapes) m[name].shape = shape;
    return m;
  };
  EXPECT_TRUE(arrays::looksLikeAttention(arraysOf({{"attentions", {2, 3, 5, 5}}})));
  EXPECT_TRUE(arrays::looksLikeAttention(arraysOf({{"", {3, 4, 4}}})));
  EXPECT_FALSE(arrays::looksLikeAttention(arraysOf({{"", {3, 4, 5}}})));  // not square: no attention map
  EXPECT_FALSE(arrays::looksLikeAttention(arraysOf(  // nn.MultiheadAttention's state dict
      {{"in_proj_weight", {12, 4}}, {"in_proj_bias", {12}}, {"out_proj.weight", {4, 4}}, {"x", {4, 4}}})));
  EXPECT_FALSE(arrays::looksLikeAttention(arraysOf(  // keras-mha: (E, H, d_k) kernels can be square at the end
      {{"query/kernel", {8, 4, 4}}, {"query/bias", {4, 4}}})));

  EXPECT_EQ(arrays::tokensFromArgument("[\"a\", \"b c\"]"), (std::vector<std::string>{"a", "b c"}));
  std::ofstream(dir + "/tokens.txt") << "x y\nz\n";
  EXPECT_EQ(arrays::tokensFromArgument(dir + "/tokens.txt"), (std::vector<std::string>{"x y", "z"}));
  EXPECT_EQ(arrays::splitTokenText("  The  cat sat "), (std::vector<std::string>{"The", "cat", "sat"}));
  EXPECT_EQ(arrays::splitTokenText("a,b c", ','), (std::vector<std::string>{"a", "b c"}));
}

// Trust round 4: a token file holding a byte that is not UTF-8 made --analysis-out print nlohmann's
// "[json.exception.type_error.316] invalid UTF-8 byte". The token is written with U+FFFD for the byte.
TEST(ViewCli, AnalysisOutWithATokenNotUtf8) {
  const std::string dir = test::tempDir("view_not_utf8");
  test::writeSafetensors(dir + "/a.safetensors", {{"attentions", madeTensor()}});
  std::ofstream(dir + "/tokens.txt") << "the\nc\xff" << "t\nsat\non\nit\n";
  const test::CommandRun r = test::runAttnscope("view '" + dir + "/a.safetensors' --tokens '" + dir + "/tokens.txt' -o '" +
                                                dir + "/o.json' --analysis-out '" + dir + "/a.json'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
  const nlohmann::json a = nlohmann::json::parse(test::slurp(dir + "/a.json"));
  EXPECT_EQ(a.at("tokens"), nlohmann::json({"the", "c\uFFFDt", "sat", "on", "it"}));
}

// --grid-out --contrast row: the made tensor's rows hold 0.75 and 0.25 (row max 0.75), so its cells are drawn at
// 1 (viridis' last entry), 1/3 (entry floor(256 / 3) = 85) and 0 (its first), exactly: 0.25 / 0.75 in float32
// is 1/3 within 3e-8, far from an entry's edge (85.33). Nothing is masked in a saved tensor.
TEST(ViewCli, GridOutInRowMaxContrast) {
  const std::string dir = test::tempDir("view_contrast");
  test::writeSafetensors(dir + "/a.safetensors", {{"attentions", madeTensor()}});
  std::ofstream(dir + "/tokens.txt") << "the\ncat\nsat\non\nit\n";
  const std::string base = "view '" + dir + "/a.safetensors' --tokens '" + dir + "/tokens.txt' -o '" + dir + "/o.json'";
  const test::CommandRun r = test::runAttnscope(base + " --grid-out '" + dir + "/g.png' --contrast row");
  ASSERT_EQ(r.status, 0) << r.err;
  const arrays::AttentionTensor t = arrays::readAttentionTensor(dir + "/a.safetensors", std::nullopt, kTokens);
  Figure f = model::modelGridFigure(t.forward, t.forward.layout, t.tokens, -1, {ColorScale::RowMax, false},
                                    "a.safetensors");
  f.dpi = kDefaultDpi;  // the command line's default
  const FigureLayout layout = pngLayout(f);
  const attnscope::testing::Image img = attnscope::testing::decodePng(test::slurp(dir + "/g.png"));
  ASSERT_EQ(img.width, layout.width);
  ASSERT_EQ(img.height, layout.height);
  const auto& viridis = colorMapTable(ColorMap::Viridis);
  int wrong = 0;
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kHeads; ++h)
      for (int i = 0; i < kN; ++i)
        for (int j = 0; j < kN; ++j) {
          const float w = madeWeight(l, h, i, j);
          const Rgb8 want = w == 0.75f ? viridis[255] : w == 0.25f ? viridis[85] : viridis[0];
          const PixelRect c = cellRect(f, layout, l * kHeads + h, i, j);
          wrong += !(img.at(c.x + c.w / 2, c.y + c.h / 2) == want);
        }
  EXPECT_EQ(wrong, 0) << "cells not at 1, 1/3 or 0 of the row's max";
  // --contrast without --grid-out, and a bad value: one line, exit 2, no output.
  for (const std::string& bad : {std::string(" --contrast row"), " --grid-out '" + dir + "/h.png' --contrast rows"}) {
    const test::CommandRun b = test::runAttnscope("view '" + dir + "/a.safetensors' --tokens '" + dir + "/tokens.txt' -o '" +
                                                  dir + "/bad.json'" + bad);
    EXPECT_EQ(b.status, 2) << bad;
    EXPECT_EQ(std::count(b.err.begin(), b.err.end(), '\n'), 1) << b.err;
    EXPECT_EQ(b.err.rfind("attnscope: --contrast: expected ", 0), 0u) << b.err;
    EXPECT_FALSE(std::filesystem::exists(dir + "/bad.json") || std::filesystem::exists(dir + "/h.png"));
  }
}

TEST(ViewCli, HostileTensorsExitTwoWithOneLine) {
  const std::string dir = test::tempDir("view_hostile");
  const auto expectRefusal = [&](const std::map<std::string, TestTensor>& tensors, const std::string& args,
                                 const std::string& mentions) {
    test::writeSafetensors(dir + "/t.safetensors", tensors);
    const test::CommandRun r = test::runAttnscope("view '" + dir + "/t.safetensors' " + args);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  const std::string tokens = "--tokens '[\"a\",\"b\"]'";
  const TestTensor ok{{1, 2, 2}, {1, 0, 0.5f, 0.5f}};
  expectRefusal({{"w", {{1, 2, 2}, {2.0f, -1.0f, 0.5f, 0.5f}}}}, tokens, "it may be a pre-softmax score");
  expectRefusal({{"w", {{1, 2, 2}, {0.9f, 0.3f, 0.5f, 0.5f}}}}, tokens,
                "rows summing to 1 (attention weights after the softmax), got a sum of 1.2");
  expectRefusal({{"w", {{1, 2, 2}, {std::nanf(""), 0, 0.5f, 0.5f}}}}, tokens, "'w': expected finite");
  expectRefusal({{"w", {{2, 2}, {1, 0, 0, 1}}}}, tokens, "expected shape (layers, heads, n_q, n_k) or (heads, n_q, n_k)");
  expectRefusal({{"w", ok}}, "--tokens '[\"a\"]'", "--tokens: expected 2 tokens");
  expectRefusal({{"w", ok}, {"v", ok}}, tokens, "--tensor: expected a tensor name");
  expectRefusal({{"w", ok}}, tokens + " --tensor nope", "--tensor: expected one of the file's tensors ('w' float32 (1, 2, 2))");
  expectRefusal({{"w", {{1, 2, 3}, {1, 0, 0, 0, 1, 0}}}}, tokens, "expected n_q == n_k");
  // NumPy's own files, NaN and cut short: the .npy reader's refusals.
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  ASSERT_EQ(test::run("/usr/bin/python3 -c \"import numpy as np, sys\n"
                      "np.save(sys.argv[1] + '/nan.npy', np.array([[[np.nan, 1], [0.5, 0.5]]], np.float32))\" '" + dir + "'")
                .status, 0);
  const test::CommandRun nan = test::runAttnscope("view '" + dir + "/nan.npy' " + tokens);
  EXPECT_EQ(nan.status, 2);
  EXPECT_NE(nan.err.find("nan.npy: expected finite values, got NaN at flat index 0 of shape (1, 2, 2)"), std::string::npos) << nan.err;
  const std::string bytes = test::slurp(dir + "/nan.npy");
  std::ofstream(dir + "/cut.npy", std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  const test::CommandRun cut = test::runAttnscope("view '" + dir + "/cut.npy' " + tokens);
  EXPECT_EQ(cut.status, 2);
  EXPECT_NE(cut.err.find("cut.npy: expected 16 data bytes for shape (1, 2, 2), got 13 (truncated)"), std::string::npos) << cut.err;
}

// `view --analysis-out`: the model command's head_scores from a saved tensor's maps. A (2, 2, 4, 4) .npy on the
// tokens a b a b, each map made to be one kind of head, every score worked by hand from the definitions (README
// "Head-type scores"; a saved tensor is not causal, so row 0 counts where it has the key a score reads):
//   L1 H1 previous token (row 0 on key 0): previous 3/3 = 1, current 1/4 (row 0), first 2/4, local 1,
//         induction 2/2 = 1 (rows 2 and 3 read keys 1 and 2, the tokens after the earlier a and b), duplicate 0;
//   L1 H2 uniform 1/4: previous, current, first, induction, duplicate 1/4; local (3 + 4 + 4 + 3) / 4 / 4 = 7/8;
//   L2 H1 identity: previous 0, current 1, first 1/4 (row 0), local 1, induction 0, duplicate 0;
//   L2 H2 first token: previous 1/3 (row 1 only), current 1/4, first 1, local 3/4 (row 3's key 0 is 3 away),
//         induction 0, duplicate 1/2 (row 2 on the earlier a, row 3 not on the earlier b).
// On four distinct tokens induction and duplicate-token are undefined: null.
TEST(ViewCli, AnalysisOutScoresHandMadeHeads) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const std::string dir = test::tempDir("view_analysis");
  const test::CommandRun py = test::run(
      "/usr/bin/python3 -c \"import numpy as np, sys\n"
      "w = np.zeros((2, 2, 4, 4), np.float32)\n"
      "for i in range(4):\n"
      "  w[0, 0, i, max(i - 1, 0)] = 1; w[0, 1, i, :] = 0.25; w[1, 0, i, i] = 1; w[1, 1, i, 0] = 1\n"
      "np.save(sys.argv[1] + '/t.npy', w)\" '" + dir + "'");
  ASSERT_EQ(py.status, 0) << py.err;
  const test::CommandRun r = test::runAttnscope("view '" + dir + "/t.npy' --tokens '[\"a\", \"b\", \"a\", \"b\"]' -o '" +
                                                dir + "/v.json' --analysis-out '" + dir + "/a.json'");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json a = nlohmann::json::parse(test::slurp(dir + "/a.json"));
  EXPECT_EQ(a["local_window"], 2);
  const std::map<std::string, std::vector<std::vector<double>>> want = {
      {"previous_token", {{1, 0.25}, {0, 1.0 / 3}}}, {"current_token", {{0.25, 0.25}, {1, 0.25}}},
      {"first_token", {{0.5, 0.25}, {0.25, 1}}},     {"local", {{1, 0.875}, {1, 0.75}}},
      {"induction", {{1, 0.25}, {0, 0}}},            {"duplicate_token", {{0, 0.25}, {0, 0.5}}}};
  ASSERT_EQ(a["head_scores"].size(), want.size());
  for (const auto& [name, layers] : want)
    for (std::size_t l = 0; l < 2; ++l)
      for (std::size_t h = 0; h < 2; ++h) {
        ASSERT_TRUE(a["head_scores"][name][l][h].is_number()) << name << " " << l << " " << h;
        // Sums and means of exactly representable weights in double: only 1/3's last bit can differ.
        EXPECT_NEAR(a["head_scores"][name][l][h].get<double>(), layers[l][h], 1e-15) << name << " " << l << " " << h;
      }
  // The same numbers as view's own per-head analysis (-o): one definition.
  const nlohmann::json v = nlohmann::json::parse(test::slurp(dir + "/v.json"));
  for (const nlohmann::json& head : v["heads"])
    EXPECT_EQ(head["induction"], a["head_scores"]["induction"][head["layer"].get<int>() - 1][head["head"].get<int>() - 1]);

  const test::CommandRun distinct = test::runAttnscope("view '" + dir + "/t.npy' --tokens '[\"w\", \"x\", \"y\", \"z\"]' "
                                                       "-o '" + dir + "/dv.json' --analysis-out '" + dir + "/d.json'");
  ASSERT_EQ(distinct.status, 0) << distinct.err;
  const nlohmann::json d = nlohmann::json::parse(test::slurp(dir + "/d.json"));
  for (const char* name : {"induction", "duplicate_token"})
    for (std::size_t l = 0; l < 2; ++l)
      for (std::size_t h = 0; h < 2; ++h) EXPECT_TRUE(d["head_scores"][name][l][h].is_null()) << name;
  EXPECT_DOUBLE_EQ(d["head_scores"]["previous_token"][0][0].get<double>(), 1.0);
}
