// `attnscope export` end to end: the hand-worked scene of test_export_support.h
// written as a scene file, the command run as a user would, and each output
// decoded and checked; bad requests give one line and status 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/export/export_layout.h"
#include "command_support.h"
#include "export/test_export_support.h"

using namespace attnscope;
using namespace attnscope::testing;

namespace {

// The scene of handScene() in the scene file format (docs/formats.md, "Scene files"),
// written by hand.
const char* kHandSceneJson = R"({
  "format": "attnscope-scene", "version": 1, "d_model": 2,
  "query_tokens": ["a,b", "say \"hi\"", "<tag>&"],
  "query": [[1, 0], [0, 1], [1, 1]],
  "heads": [
    {"w_q": [[0], [0]], "w_k": [[1], [1]], "w_v": [[1], [1]]},
    {"w_q": [[1], [0]], "w_k": [[1.0986122886681098], [0]], "w_v": [[1], [1]]}
  ],
  "mask": "causal"
})";

using attnscope::test::slurp;

class ExportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    scene_path_ = dir_.file("hand.json");
    std::ofstream(scene_path_) << kHandSceneJson;
  }
  attnscope::test::CommandRun run(const std::string& args) { return attnscope::test::runAttnscope("export " + args); }
  TempDir dir_;
  std::string scene_path_;
};

}  // namespace

TEST_F(ExportCli, HeadTwoPngHasTheHandWorkedColours) {
  const std::string out = dir_.file("head2.png");
  const attnscope::test::CommandRun r = run(scene_path_ + " --what head:2 --format png --out " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  // Where the cells land: the engine's layout of the same figure (head:2 is
  // index 1).
  ExportRequest req;
  req.what = ExportWhat::Head;
  req.head = 1;
  req.dpi = kDefaultDpi;  // the command line's default
  const Figure fig = makeFigure(handScene(), CpuBackend(1).compute(handScene()), req);
  const FigureLayout layout = pngLayout(fig);
  EXPECT_EQ(fig.title, "Head 2 attention weights");
  const Image img = decodePng(slurp(out));
  ASSERT_EQ(img.width, layout.width);
  ASSERT_EQ(img.height, layout.height);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const PixelRect c = cellRect(fig, layout, 0, i, j);
      const Rgb8 want = j > i ? kMaskedColor : colorAt(ColorMap::Viridis, static_cast<float>(kHandWeights[1][i][j]));
      EXPECT_EQ(img.at(c.x + c.w / 2, c.y + c.h / 2), want) << i << "," << j;
    }
}

// --contrast row: each cell over its row's largest weight. Head 2's rows [1], [1/2, 1/2], [3/7, 1/7, 3/7]
// become [1], [1, 1], [1, 1/3, 1]; head 1's uniform rows all 1. Colours at 1/3: t * 256 = 85.33, far from an
// entry's edge, so the float32 weights give the same entry as the exact ratio.
TEST_F(ExportCli, ContrastRowColoursEachRowOverItsMax) {
  const std::string out = dir_.file("rows.png");
  const attnscope::test::CommandRun r = run(scene_path_ + " --what heads --contrast row --out " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  ExportRequest req;
  req.what = ExportWhat::Heads;
  req.contrast = {ColorScale::RowMax, false};
  req.dpi = kDefaultDpi;  // the command line's default
  const Figure fig = makeFigure(handScene(), CpuBackend(1).compute(handScene()), req);
  const FigureLayout layout = pngLayout(fig);
  const Image img = decodePng(slurp(out));
  ASSERT_EQ(img.width, layout.width);
  ASSERT_EQ(img.height, layout.height);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i) {
      const double row_max = *std::max_element(kHandWeights[h][i], kHandWeights[h][i] + 3);
      for (int j = 0; j < 3; ++j) {
        const PixelRect c = cellRect(fig, layout, h, i, j);
        const Rgb8 want =
            j > i ? kMaskedColor : colorAt(ColorMap::Viridis, static_cast<float>(kHandWeights[h][i][j] / row_max));
        EXPECT_EQ(img.at(c.x + c.w / 2, c.y + c.h / 2), want) << h << ": " << i << "," << j;
      }
    }
  // Not the 0..1 colours: head 2's (1, 1) is weight 1/2, drawn as 1 (#fde725) here.
  const PixelRect c = cellRect(fig, layout, 1, 1, 1);
  EXPECT_EQ(img.at(c.x + c.w / 2, c.y + c.h / 2), (Rgb8{0xFD, 0xE7, 0x25}));
}

TEST_F(ExportCli, BadContrastIsOneLineAndStatusTwo) {
  const std::string out = dir_.file("x.png");
  attnscope::test::CommandRun r = run(scene_path_ + " --what heads --contrast nope --out " + out);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "attnscope: --contrast: expected one of fixed|shared|head|row, got 'nope'\n");
  r = run(scene_path_ + " --what similarity --contrast row --out " + out);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "attnscope: --contrast: expected only with --what head:N or heads (a figure of weights), got --what "
            "similarity\n");
  r = run(scene_path_ + " --what diff --against " + scene_path_ + " --log --out " + out);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("attnscope: --log: "), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"hand.json"});
}

TEST_F(ExportCli, HeadsNpyAndFormatFromTheExtension) {
  const std::string out = dir_.file("weights.npy");
  const attnscope::test::CommandRun r = run(scene_path_ + " --what heads -o " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const Npy npy = decodeNpy(slurp(out));
  EXPECT_NE(npy.dict.find("'shape': (2, 3, 3)"), std::string::npos) << npy.dict;
  ASSERT_EQ(npy.values.size(), 18u);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)  // float32 softmax: seen within 6e-8
        EXPECT_NEAR(npy.values[static_cast<std::size_t>(h * 9 + i * 3 + j)], kHandWeights[h][i][j], 1e-6);
}

TEST_F(ExportCli, ValueNormWeightingTimesEachKeysValueNorm) {
  // Both heads' W_V is (1, 1)^T and there is no W_O, so key j's value norm is |x_j1 + x_j2|: keys (1, 0), (0, 1),
  // (1, 1) give 1, 1, 2. The weighted maps are the hand-worked weights times those, e.g. head 2's last row
  // (3/7, 1/7, 3/7) becomes (3/7, 1/7, 6/7).
  const double norms[3] = {1, 1, 2};
  const std::string out = dir_.file("weighted.npy");
  attnscope::test::CommandRun r = run(scene_path_ + " --what heads --weighting value-norm -o " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const Npy npy = decodeNpy(slurp(out));
  EXPECT_NE(npy.dict.find("'shape': (2, 3, 3)"), std::string::npos) << npy.dict;
  ASSERT_EQ(npy.values.size(), 18u);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)  // float32 softmax (seen within 6e-8) times an exact norm of at most 2
        EXPECT_NEAR(npy.values[static_cast<std::size_t>(h * 9 + i * 3 + j)], kHandWeights[h][i][j] * norms[j], 2e-6)
            << "head " << h + 1 << " (" << i << ", " << j << ")";
  // One head as CSV: the same numbers; all heads' long CSV names its column for what it holds.
  r = run(scene_path_ + " --what head:2 --weighting value-norm -o " + dir_.file("head2.csv"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = parseCsv(slurp(dir_.file("head2.csv")));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_NEAR(std::stod(rows[3][3]), 6.0 / 7.0, 2e-6);
  r = run(scene_path_ + " --what heads --weighting value-norm -o " + dir_.file("heads.csv"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(parseCsv(slurp(dir_.file("heads.csv")))[0].back(), "weight_x_value_norm");
  // The figure says what it shows: title and colour bar; the bar runs to the largest norm, 2.
  r = run(scene_path_ + " --what heads --weighting value-norm -o " + dir_.file("heads.svg"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string svg = slurp(dir_.file("heads.svg"));
  EXPECT_NE(svg.find(">Attention weights x value norms, both heads</text>"), std::string::npos);
  EXPECT_NE(svg.find(">weight x value norm</text>"), std::string::npos);
  EXPECT_NE(svg.find(">2</text>"), std::string::npos);  // the bar's top tick
  // --weighting weight is the default: the same bytes as without it.
  r = run(scene_path_ + " --what heads --weighting weight -o " + dir_.file("plain.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(run(scene_path_ + " --what heads -o " + dir_.file("default.npy")).status, 0);
  EXPECT_EQ(slurp(dir_.file("plain.npy")), slurp(dir_.file("default.npy")));
  // Refused where it has no maps of weights to weigh, and for a typo: one line, status 2.
  r = run(scene_path_ + " --what similarity --weighting value-norm -o " + dir_.file("sim.npy"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "attnscope: --weighting: expected value-norm only with --what head:N or heads (maps of weights), "
                   "got --what similarity\n");
  r = run(scene_path_ + " --what heads --weighting norms -o " + dir_.file("typo.npy"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--weighting"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.file("sim.npy")) || std::filesystem::exists(dir_.file("typo.npy")));
}

TEST_F(ExportCli, SimilarityCsvAndAnnotatedSvg) {
  attnscope::test::CommandRun r = run(scene_path_ + " --what similarity --metric cosine --format csv --out " + dir_.file("sim.csv"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = parseCsv(slurp(dir_.file("sim.csv")));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"head", "H1", "H2"}));
  EXPECT_NEAR(std::stod(rows[1][2]), handCosine(), 1e-6);
  r = run(scene_path_ + " --what head:1 --format svg --annotate --out " + dir_.file("head1.svg"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string svg = slurp(dir_.file("head1.svg"));
  EXPECT_NE(svg.find(">&lt;tag&gt;&amp;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0.33</text>"), std::string::npos);  // 1/3 to two decimals
}

TEST_F(ExportCli, BadRequestsAreOneLineAndStatusTwo) {
  const std::string out = dir_.file("x.png");
  attnscope::test::CommandRun r = run(scene_path_ + " --what head:0 --out " + out);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "attnscope: --what: expected head:1 to head:2 (heads are "
            "numbered from 1), heads, similarity or diff, "
            "got 'head:0'\n");
  r = run(scene_path_ + " --what head:3 --out " + out);
  EXPECT_EQ(r.status, 2);
  r = run(scene_path_ + " --what heads --format gif --out " + out);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--format"), std::string::npos) << r.err;
  r = run(scene_path_ + " --what heads --format csv --out " + dir_.path.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("output path: expected a file path"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  // Nothing but the scene file is left behind.
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"hand.json"});
}

TEST_F(ExportCli, HelpSaysHeadsCountFromOne) {
  const attnscope::test::CommandRun r = run("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("heads are numbered from 1"), std::string::npos) << r.out;
}

// A window of head 2, from the command line, past a maps limit of 50 bytes (the two heads keep 72) (so the tiled path runs): queries 1..2,
// keys 0..1 of the hand-worked weights.
TEST_F(ExportCli, WindowOfOneHeadWithoutMaps) {
  const std::string out = dir_.file("window.npy");
  const attnscope::test::CommandRun r = attnscope::test::run(
      "ATTNSCOPE_MAPS_LIMIT=50 '" + std::string(ATTNSCOPE_BINARY) + "' export " + scene_path_ +
      " --what head:2 --rows 1:3 --cols :2 -o " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const Npy npy = decodeNpy(slurp(out));
  EXPECT_NE(npy.dict.find("'shape': (2, 2)"), std::string::npos) << npy.dict;
  ASSERT_EQ(npy.values.size(), 4u);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)  // float32 softmax: seen within 6e-8
      EXPECT_NEAR(npy.values[static_cast<std::size_t>(i * 2 + j)], kHandWeights[1][i + 1][j], 1e-6);
  // Bad windows: one line naming the option, status 2, no file.
  for (const char* bad : {"--what head:2 --rows 2:9", "--what head:2 --cols 3:1", "--what heads --rows 0:1",
                                 "--what head:2 --rows x"}) {
    const attnscope::test::CommandRun b = run(scene_path_ + " " + std::string(bad) + " -o " + dir_.file("bad.npy"));
    EXPECT_EQ(b.status, 2) << bad << ": " << b.err;
    EXPECT_EQ(std::count(b.err.begin(), b.err.end(), '\n'), 1) << b.err;
    EXPECT_FALSE(std::filesystem::exists(dir_.file("bad.npy")));
  }
}

// Past the maps limit `compute` refuses the full JSON in one line that says what to use instead, and `analyze`
// refuses only --pitfall (its output is every whole map).
TEST_F(ExportCli, ComputePastTheMapsLimitPointsToExportAndAnalyze) {
  const std::string bin = "ATTNSCOPE_MAPS_LIMIT=50 '" + std::string(ATTNSCOPE_BINARY) + "' ";
  attnscope::test::CommandRun r = attnscope::test::run(bin + "compute " + scene_path_);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("export SCENE --what head:N --rows A:B --cols C:D"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  r = attnscope::test::run(bin + "analyze " + scene_path_);
  EXPECT_EQ(r.status, 0) << r.err;
  r = attnscope::test::run(bin + "analyze " + scene_path_ + " --pitfall no_scale");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--pitfall"), std::string::npos) << r.err;
}
