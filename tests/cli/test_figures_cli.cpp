// Figures as a teacher or an author uses them (issue 33): a layer's heads wrapped into an about square grid,
// token ticks where they fit (every k-th token on small cells, numbered positions more than "0" on a grid's
// small maps), titles naming the model and the layer. Numbers worked by hand from the layout's rules
// (export_layout.h): cells min(budget / n, max(48, 256 / n)), budget 2560 / columns in a grid.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "cli/import_view_support.h"
#include "command_support.h"
#include "export/test_export_support.h"

namespace {

using attnscope::test::CommandRun;

CommandRun attnscope(const std::string& args) {
  return attnscope::test::run(std::string(ATTNSCOPE_BINARY) + " " + args);
}

// ["t0", "t1", ...]: the tokens of writeUniformCausalNpy's tensors.
std::string tokensJson(int n) {
  std::string j = "[";
  for (int i = 0; i < n; ++i) j += (i ? ", \"t" : "\"t") + std::to_string(i) + "\"";
  return j + "]";
}

// How many <text> elements hold exactly `text`.
int textCount(const std::string& svg, const std::string& text) {
  int count = 0;
  for (std::size_t p = svg.find(">" + text + "</text>"); p != std::string::npos;
       p = svg.find(">" + text + "</text>", p + 1))
    ++count;
  return count;
}

struct Placed {
  int x, y, w, h;
};
// The embedded images of an SVG (the maps past 40,000 cells, and the colour bar).
std::vector<Placed> images(const std::string& svg) {
  std::vector<Placed> out;
  const std::regex image(R"re(<image x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), image); it != std::sregex_iterator(); ++it)
    out.push_back({std::stoi((*it)[1]), std::stoi((*it)[2]), std::stoi((*it)[3]), std::stoi((*it)[4])});
  return out;
}

class FiguresCli : public ::testing::Test {
 protected:
  std::string dir_ = attnscope::test::tempDir("attnscope_figures");
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
};

TEST_F(FiguresCli, ALayerOfSixteenHeadsWrapsFourByFourWithThinnedTokensAndNamedTitles) {
  // One layer of 16 heads over 65 tokens: ceil(sqrt(16)) = 4 columns, 4 rows. Budget 2560 / 4 = 640 px a map,
  // cells min(640 / 65, max(48, 256 / 65)) = 9 px, maps 585 px. 9 px < 10: every ceil(10 / 9) = 2nd token
  // labels the axes: t0, t2, ..., t64 (33 a side), never t1.
  attnscope::test::writeUniformCausalNpy(file("attn.npy"), 1, 16, 65);
  std::ofstream(file("tokens.json")) << tokensJson(65);
  const CommandRun r = attnscope("view '" + file("attn.npy") + "' --tokens '" + file("tokens.json") +
                                 "' --layer 1 -o '" + file("v.json") + "' --grid-out '" + file("g.svg") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string svg = attnscope::test::slurp(file("g.svg"));
  std::vector<Placed> maps;
  for (const Placed& p : images(svg))
    if (p.w == 585) maps.push_back(p);  // 16 maps of 65 x 65 = 67,600 cells: embedded, not rects
  ASSERT_EQ(maps.size(), 16u);
  std::set<int> xs, ys;
  for (const Placed& p : maps) {
    xs.insert(p.x);
    ys.insert(p.y);
    EXPECT_EQ(p.h, 585);
  }
  EXPECT_EQ(xs.size(), 4u) << "columns";
  EXPECT_EQ(ys.size(), 4u) << "rows";
  EXPECT_EQ(textCount(svg, "attn.npy layer 1: attention weights, 16 heads"), 1);
  for (int h = 1; h <= 16; ++h) EXPECT_EQ(textCount(svg, "Head " + std::to_string(h)), 1) << h;
  // Shared axes: the query labels left of the first column (4 rows), the key labels under each column's lowest
  // panel (4 columns): 8 of each.
  EXPECT_EQ(textCount(svg, "t0"), 8);
  EXPECT_EQ(textCount(svg, "t64"), 8);
  EXPECT_EQ(textCount(svg, "t2"), 8);
  EXPECT_EQ(textCount(svg, "t1"), 0);
  EXPECT_EQ(textCount(svg, "t63"), 0);
  EXPECT_EQ(textCount(svg, "Query"), 1);  // tokens, not positions
}

TEST_F(FiguresCli, EveryLayerGridNumbersSmallMapsMoreThanZero) {
  // Two layers x 16 heads: 16 columns, budget max(96, 2560 / 16) = 160, cells min(160 / 65, max(48, 3)) = 2 px,
  // maps 130 px. 2 px < 3: positions numbered, about 130 / 4 = 32.5 px apart: the first step of 1, 2, 5, 10,
  // 20 with step x 2 px >= 32.5 is 20: 0, 20, 40, 60 on the shared axes, left of the first column (2 rows) and
  // under the lowest row (16 columns): 18 of each. The rows named L1, L2 once, the columns H1 .. H16 once.
  attnscope::test::writeUniformCausalNpy(file("attn.npy"), 2, 16, 65);
  std::ofstream(file("tokens.json")) << tokensJson(65);
  const CommandRun r = attnscope("view '" + file("attn.npy") + "' --tokens '" + file("tokens.json") + "' -o '" +
                                 file("v.json") + "' --grid-out '" + file("g.svg") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string svg = attnscope::test::slurp(file("g.svg"));
  for (const char* tick : {"0", "20", "40", "60"}) EXPECT_EQ(textCount(svg, tick), 18) << tick;
  EXPECT_EQ(textCount(svg, "attn.npy: attention weights, 2 layers x 16 heads"), 1);
  EXPECT_EQ(textCount(svg, "L2"), 1);
  EXPECT_EQ(textCount(svg, "H16"), 1);
  EXPECT_EQ(textCount(svg, "L2 H16"), 0);
  EXPECT_EQ(textCount(svg, "Query position"), 1);
}

TEST(FigureTitles, ASubjectLeadsTheTitles) {
  const attnscope::Scene s = attnscope::testing::handScene();
  const attnscope::Result r = attnscope::CpuBackend(1).compute(s);
  attnscope::ExportRequest req;
  req.subject = "Qwen3 layer 6";
  req.what = attnscope::ExportWhat::Head;
  req.head = 1;
  EXPECT_EQ(attnscope::makeFigure(s, r, req).title, "Qwen3 layer 6, head 2: attention weights");
  req.what = attnscope::ExportWhat::Heads;
  EXPECT_EQ(attnscope::makeFigure(s, r, req).title, "Qwen3 layer 6: attention weights, both heads");
  req.subject.clear();
  EXPECT_EQ(attnscope::makeFigure(s, r, req).title, "Attention weights, both heads");
}

}  // namespace

namespace {

// A PNG's width and height from its IHDR (bytes 16..23, big-endian).
std::pair<long, long> pngSize(const std::string& path) {
  const std::string b = attnscope::test::slurp(path);
  if (b.size() < 24) return {-1, -1};
  const auto be = [&](std::size_t at) {
    long v = 0;
    for (std::size_t k = 0; k < 4; ++k) v = v * 256 + static_cast<unsigned char>(b[at + k]);
    return v;
  };
  return {be(16), be(20)};
}

const std::string kWorked = std::string(ATTNSCOPE_SOURCE_DIR) + "/assets/scenes/worked_example.json";

TEST_F(FiguresCli, DpiScalesThePngFromTheLayoutsNinetySixPerInch) {
  // The SVG is vector: its size is the layout's whatever the dpi, W x H CSS pixels (1/96 inch; its viewBox)
  // written in inches, a physical unit every reader takes alike, to 1e-6. A PNG at N dpi is round(W N / 96) x
  // round(H N / 96), half away from zero: 96 the layout itself, the default 192 twice it a side, 300, 72.
  const CommandRun r = attnscope("export '" + kWorked + "' --what heads --dpi 300 --out '" + file("f.svg") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string svg = attnscope::test::slurp(file("f.svg"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(width="([0-9.]+)in" height="([0-9.]+)in" viewBox="0 0 (\d+) (\d+)")re")));
  const long w = std::stol(m[3]), h = std::stol(m[4]);
  EXPECT_NEAR(std::stod(m[1]), w / 96.0, 1e-6);
  EXPECT_NEAR(std::stod(m[2]), h / 96.0, 1e-6);
  const struct {
    std::string flag;
    int dpi;
  } cases[] = {{"--dpi 96", 96}, {"", 192}, {"--dpi 300", 300}, {"--dpi=72", 72}};
  for (const auto& c : cases) {
    const CommandRun png =
        attnscope("export '" + kWorked + "' --what heads " + c.flag + " --out '" + file("f.png") + "'");
    ASSERT_EQ(png.status, 0) << png.err;
    EXPECT_EQ(pngSize(file("f.png")), std::make_pair(std::lround(w * c.dpi / 96.0), std::lround(h * c.dpi / 96.0)))
        << c.flag;
  }
}

TEST_F(FiguresCli, APngRecordsItsDpiSoThatSlidesAndLatexPlaceItAtItsSize) {
  // The pHYs chunk right after IHDR (the 8-byte signature, then IHDR's 4 + 4 + 13 + 4 bytes): 9 data bytes, x and
  // y pixels per metre = round(dpi / 0.0254), unit 1 (the metre), its CRC-32. Bytes worked out by Python's struct
  // and zlib.crc32: 300 dpi -> 11811 px/m, 192 (the default) -> 7559, 96 -> 3780. Without it a 300-dpi figure
  // is placed at 72-96 dpi, three to four times too wide.
  const struct {
    std::string flag, chunk_hex;
  } cases[] = {{"--dpi 300", "000000097048597300002e2300002e230178a53f76"},
               {"", "000000097048597300001d8700001d87018fe5f165"},
               {"--dpi 96", "000000097048597300000ec400000ec401952b0e1b"}};
  for (const auto& c : cases) {
    const CommandRun r =
        attnscope("export '" + kWorked + "' --what heads " + c.flag + " --out '" + file("f.png") + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string png = attnscope::test::slurp(file("f.png"));
    ASSERT_GT(png.size(), 33u + 21u);
    std::string hex;
    for (std::size_t i = 33; i < 33 + 21; ++i) {
      char byte[3];
      std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(png[i]));
      hex += byte;
    }
    EXPECT_EQ(hex, c.chunk_hex) << c.flag;
    EXPECT_EQ(png.find("pHYs", 33 + 21), std::string::npos) << c.flag << ": one pHYs chunk";
  }
}

TEST_F(FiguresCli, BadDpiIsOneLineNamingTheFlagAndExitTwo) {
  for (const std::string value : {"0", "-5", "100000", "NaN", "23", "1201", "2.5"}) {
    const CommandRun r =
        attnscope("export '" + kWorked + "' --what heads --dpi " + value + " --out '" + file("bad.png") + "'");
    EXPECT_EQ(r.status, 2) << value;
    EXPECT_NE(r.err.find("--dpi"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("24 to 1200"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(value), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(file("bad.png"))) << value;
  }
  const CommandRun csv = attnscope("export '" + kWorked + "' --what heads --dpi 300 --out '" + file("w.csv") + "'");
  EXPECT_EQ(csv.status, 2);
  EXPECT_NE(csv.err.find("--dpi"), std::string::npos) << csv.err;
}

TEST_F(FiguresCli, APngPast8192SquaredPixelsIsRefusedNamingTheLargestDpi) {
  // 16 heads of 65 tokens; its layout's size read from the PNG at 96 dpi. The refusal names the largest dpi N
  // the figure allows: at N the image round(W N / 96) x round(H N / 96) is within 8192 x 8192 pixels and 16384 a
  // side, at N + 1 it is not (worked here from W and H); N itself writes.
  attnscope::test::writeUniformCausalNpy(file("attn.npy"), 1, 16, 65);
  std::ofstream(file("tokens.json")) << tokensJson(65);
  const std::string base = "view '" + file("attn.npy") + "' --tokens '" + file("tokens.json") + "' --layer 1 -o '" +
                           file("v.json") + "' --grid-out '" + file("g.png") + "'";
  ASSERT_EQ(attnscope(base + " --dpi 96").status, 0);
  const auto [w, h] = pngSize(file("g.png"));
  std::filesystem::remove(file("g.png"));
  const CommandRun r = attnscope(base + " --dpi 1200");
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(std::filesystem::exists(file("g.png")));
  const std::size_t at = r.err.find("--dpi: expected at most ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const long n = std::stol(r.err.substr(at + std::strlen("--dpi: expected at most ")));
  const auto fits = [&](long dpi) {
    const long long pw = std::llround(w * dpi / 96.0), ph = std::llround(h * dpi / 96.0);
    return pw * ph <= 8192LL * 8192 && std::max(pw, ph) <= 16384;
  };
  EXPECT_TRUE(fits(n)) << n;
  EXPECT_FALSE(fits(n + 1)) << n;
  const CommandRun ok = attnscope(base + " --dpi " + std::to_string(n));
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(pngSize(file("g.png")), std::make_pair(std::lround(w * n / 96.0), std::lround(h * n / 96.0)));
}

}  // namespace
