// Figures sized for a page (issue 43): a width and height in inches and a font in points, on the command line (the
// window's Export tab sets the same FigureSize); grids that share their axes and name a model's layers and heads
// once, so that 28 x 16 maps are mostly maps; and the token view's text as a figure and as numbers. Sizes worked
// by hand: 96 layout pixels an inch (CSS pixels, the SVG's units), a PNG's pixels inches x dpi, a point 1/72 inch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/export/colormap.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/export/token_text.h"
#include "cli/import_view_support.h"
#include "command_support.h"
#include "export/test_export_support.h"

namespace {

using attnscope::test::CommandRun;
using attnscope::test::slurp;

CommandRun attnscope(const std::string& args) { return attnscope::test::run(std::string(ATTNSCOPE_BINARY) + " " + args); }

const std::string kWorked = std::string(ATTNSCOPE_SOURCE_DIR) + "/assets/scenes/worked_example.json";
const std::string kSentence = std::string(ATTNSCOPE_SOURCE_DIR) + "/assets/scenes/sentence_heads.json";

class FigureSizes : public ::testing::Test {
 protected:
  std::string dir_ = attnscope::test::tempDir("attnscope_sizes");
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
};

// The SVG's width and height attributes (inches) and its viewBox's size (layout pixels).
struct SvgSize {
  double width_in = 0, height_in = 0;
  long w = 0, h = 0;
};
SvgSize svgSize(const std::string& svg) {
  std::smatch m;
  const std::regex re(R"re(width="([0-9.]+)in" height="([0-9.]+)in" viewBox="0 0 (\d+) (\d+)")re");
  if (!std::regex_search(svg, m, re)) return {};
  return {std::stod(m[1]), std::stod(m[2]), std::stol(m[3]), std::stol(m[4])};
}

long pngWidth(const std::string& png) {
  long w = 0;
  for (int i = 16; i < 20; ++i) w = w * 256 + static_cast<unsigned char>(png[static_cast<std::size_t>(i)]);
  return w;
}

// The font-size of every <text> holding exactly `text`.
std::vector<double> fontSizes(const std::string& svg, const std::string& text) {
  std::vector<double> sizes;
  const std::regex re("font-size=\"([0-9.]+)\"[^>]*>" + std::regex_replace(text, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                      "</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    sizes.push_back(std::stod((*it)[1]));
  return sizes;
}

int textCount(const std::string& svg, const std::string& text) {
  int count = 0;
  for (std::size_t p = svg.find(">" + text + "</text>"); p != std::string::npos; p = svg.find(">" + text + "</text>", p + 1))
    ++count;
  return count;
}

TEST_F(FigureSizes, AWidthAndHeightInInchesAreThePagesSize) {
  // 6 x 4 inches: an SVG of 6in x 4in over 576 x 384 layout pixels; a PNG of 6 in at 100 dpi is 600 px wide.
  const CommandRun svg = attnscope("export '" + kWorked + "' --what heads --width 6 --height 4 --out '" + file("f.svg") + "'");
  ASSERT_EQ(svg.status, 0) << svg.err;
  const SvgSize s = svgSize(slurp(file("f.svg")));
  EXPECT_EQ(s.w, 576);
  EXPECT_EQ(s.h, 384);
  EXPECT_NEAR(s.width_in, 6.0, 1e-6);
  EXPECT_NEAR(s.height_in, 4.0, 1e-6);
  const CommandRun png = attnscope("export '" + kWorked + "' --what heads --width 6 --dpi 100 --out '" + file("f.png") + "'");
  ASSERT_EQ(png.status, 0) << png.err;
  EXPECT_EQ(pngWidth(slurp(file("f.png"))), 600);
}

TEST_F(FigureSizes, TheMapsGrowToFillAWiderPageAndStayOnIt) {
  attnscope::Scene scene = attnscope::testing::handScene();
  const attnscope::Result result = attnscope::CpuBackend(1).compute(scene);
  attnscope::ExportRequest request;
  request.what = attnscope::ExportWhat::Heads;
  int last_map = 0;
  for (const double inches : {4.0, 6.0, 10.0}) {
    request.size.width_in = inches;
    const attnscope::Figure f = attnscope::makeFigure(scene, result, request);
    const attnscope::FigureLayout L = attnscope::layoutFigure(f);
    EXPECT_EQ(L.width, std::lround(inches * 96)) << inches;
    EXPECT_GT(L.maps[0].w, last_map) << inches << " in: larger maps on a wider page";
    last_map = L.maps[0].w;
    for (const attnscope::PixelRect& m : L.maps) {
      EXPECT_GE(m.x, 0);
      EXPECT_LE(m.x + m.w, L.width);
    }
    EXPECT_LE(L.colorbar.x + L.colorbar.w, L.width);
    for (const attnscope::TextItem& t : L.texts) {
      if (!t.vertical) {
        EXPECT_GE(t.x, 0) << t.text;
      }
    }
  }
}

TEST_F(FigureSizes, AFontSizeInPointsSetsTheLabelsAndTitlesInProportion) {
  // 19.5 pt = 19.5 x 96 / 72 = 26 px for the tick labels (the colour bar's "1.0"), twice the default 13 px
  // (9.75 pt); the title twice its 18 px: 36.
  const CommandRun r = attnscope("export '" + kWorked + "' --what heads --font-size 19.5 --out '" + file("f.svg") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string svg = slurp(file("f.svg"));
  EXPECT_EQ(fontSizes(svg, "1.0"), std::vector<double>{26});
  EXPECT_EQ(fontSizes(svg, "Attention weights, both heads"), std::vector<double>{36});
  const CommandRun plain = attnscope("export '" + kWorked + "' --what heads --out '" + file("p.svg") + "'");
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(fontSizes(slurp(file("p.svg")), "1.0"), std::vector<double>{13});
}

TEST_F(FigureSizes, BadSizesAreOneLineNamingTheFlagAndExitTwo) {
  const struct {
    std::string flag, value, says;
  } cases[] = {{"--width", "0.5", "1 to 42 inches"}, {"--height", "43", "1 to 42 inches"},
               {"--font-size", "3", "4 to 48 points"}, {"--font-size", "abc", "a number"},
               {"--width", "nan", "1 to 42 inches"},  {"--width", "1.5", "at least"}};
  for (const auto& c : cases) {
    const CommandRun r = attnscope("export '" + kWorked + "' --what heads " + c.flag + " " + c.value + " --out '" +
                                   file("bad.png") + "'");
    EXPECT_EQ(r.status, 2) << c.flag << " " << c.value;
    EXPECT_EQ(r.err.rfind("attnscope: " + c.flag + ": expected ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.value), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(file("bad.png"))) << c.flag << " " << c.value;
  }
  const CommandRun csv = attnscope("export '" + kWorked + "' --what heads --width 5 --out '" + file("w.csv") + "'");
  EXPECT_EQ(csv.status, 2);
  EXPECT_EQ(csv.err.rfind("attnscope: --width: expected only with a PNG or SVG figure", 0), 0u) << csv.err;
}

TEST_F(FigureSizes, AGridSharesItsAxesSoEveryTokenIsLabelledOnceAnAxis) {
  // sentence_heads: 4 heads of 10 tokens in 2 x 2. The query labels left of the first column (2 rows), the key
  // labels under the lowest row (2 columns): "slept", the last token, 4 times (8 when every panel had its own).
  const CommandRun r = attnscope("export '" + kSentence + "' --what heads --out '" + file("s.svg") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string svg = slurp(file("s.svg"));
  EXPECT_EQ(textCount(svg, "slept"), 4);
  for (int h = 1; h <= 4; ++h) EXPECT_EQ(textCount(svg, "Head " + std::to_string(h)), 1) << h;
}


TEST_F(FigureSizes, EveryLayerOfTwentyEightBySixteenHeadsIsMostlyMaps) {
  // 28 layers x 16 heads of 194 tokens (Qwen3-0.6B's grid): a row a layer, named L1 .. L28 once at the left, a
  // column a head, H1 .. H16 once on top; no "L1 H1" over every map and no repeated position ticks between them.
  // The maps (embedded images of equal sides) cover at least 60% of the page (about 24% when every panel had
  // its own labels and title: 72 px maps in 148 x 145 px cells).
  attnscope::test::writeUniformCausalNpy(file("a.npy"), 28, 16, 194);
  std::string tokens = "[";
  for (int i = 0; i < 194; ++i) tokens += (i ? ",\"t" : "\"t") + std::to_string(i) + "\"";
  std::ofstream(file("t.json")) << tokens + "]";
  const CommandRun r = attnscope("view '" + file("a.npy") + "' --tokens '" + file("t.json") + "' -o '" + file("v.json") +
                                 "' --grid-out '" + file("g.svg") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string svg = slurp(file("g.svg"));
  for (const std::string name : {"L1", "L28", "H1", "H16"}) EXPECT_EQ(textCount(svg, name), 1) << name;
  EXPECT_EQ(textCount(svg, "L1 H1"), 0);
  const SvgSize s = svgSize(svg);
  double maps = 0;
  int count = 0;
  const std::regex image(R"re(<image x="\d+" y="\d+" width="(\d+)" height="(\d+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), image); it != std::sregex_iterator(); ++it)
    if ((*it)[1] == (*it)[2]) maps += std::stod((*it)[1]) * std::stod((*it)[2]), ++count;
  EXPECT_EQ(count, 28 * 16);
  EXPECT_GE(maps / (static_cast<double>(s.w) * s.h), 0.6) << s.w << " x " << s.h;
}

attnscope::TokenText fourTokens() {
  attnscope::TokenText t;
  t.title = "layer 1, head 1: attention from token 1 'b'";
  t.scale_label = "attention weight";
  t.tokens = {"a", "b", "c,d", "e"};
  t.values = {0.2f, 0.8f, 0.4f, 0.3f};
  t.masked = {0, 0, 0, 1};
  t.picked = 1;
  return t;
}

TEST(TokenText, TheNumbersAreTheValuesMaskedOnesZero) {
  const attnscope::TokenText t = fourTokens();
  EXPECT_EQ(attnscope::tokenTextBytes(t, attnscope::ExportFormat::Csv),
            "position,token,weight,masked\n0,a,0.2,0\n1,b,0.8,0\n2,\"c,d\",0.4,0\n3,e,0,1\n");
  const attnscope::testing::Npy npy =
      attnscope::testing::decodeNpy(attnscope::tokenTextBytes(t, attnscope::ExportFormat::Npy));
  EXPECT_NE(npy.dict.find("'shape': (4,)"), std::string::npos) << npy.dict;
  EXPECT_EQ(npy.values, (std::vector<float>{0.2f, 0.8f, 0.4f, 0.0f}));
}

TEST(TokenText, EachChipIsViridisOfItsValueOverTheLargestAndThePickedOneFramed) {
  // Colours by hand: the largest unmasked value is 0.8, so a: viridis(0.25), b: viridis(1), c: viridis(0.5);
  // e is masked: kMaskedColor. The picked b framed in red just outside its chip.
  const attnscope::TokenText t = fourTokens();
  const attnscope::FigureLayout L = attnscope::tokenTextLayout(t);
  const attnscope::testing::Image img =
      attnscope::testing::decodePng(attnscope::tokenTextBytes(t, attnscope::ExportFormat::Png));
  ASSERT_EQ(img.width, L.width);
  ASSERT_EQ(L.fills.size(), 4u);
  const attnscope::Rgb8 want[] = {attnscope::colorAt(attnscope::ColorMap::Viridis, 0.25f),
                                  attnscope::colorAt(attnscope::ColorMap::Viridis, 1.0f),
                                  attnscope::colorAt(attnscope::ColorMap::Viridis, 0.5f), attnscope::kMaskedColor};
  for (int k = 0; k < 4; ++k) {
    const attnscope::PixelRect& r = L.fills[static_cast<std::size_t>(k)].rect;
    EXPECT_EQ(img.at(r.x + 1, r.y + 1), want[k]) << k;  // the chip's padding, clear of its text
  }
  const attnscope::PixelRect& b = L.fills[1].rect;
  EXPECT_EQ(img.at(b.x - 1, b.y + b.h / 2), (attnscope::Rgb8{220, 40, 40}));
  EXPECT_EQ(img.at(L.fills[0].rect.x - 1, L.fills[0].rect.y + 2), (attnscope::Rgb8{255, 255, 255}));
}

TEST(TokenText, LongTextWrapsAtThePageAndPastAnImageIsRefused) {
  attnscope::TokenText t;
  t.title = "wrap";
  for (int k = 0; k < 200; ++k) t.tokens.push_back(" word"), t.values.push_back(0.5f);
  t.size.width_in = 4;
  const attnscope::FigureLayout L = attnscope::tokenTextLayout(t);
  EXPECT_EQ(L.width, 384);
  int rows = 0, last_y = -1;
  for (const attnscope::FillItem& f : L.fills) {
    EXPECT_LE(f.rect.x + f.rect.w, L.colorbar.x) << "chips left of the colour bar";
    if (f.rect.y != last_y) ++rows, last_y = f.rect.y;
  }
  EXPECT_GT(rows, 5);
  t.tokens.assign(20000, " word");
  t.values.assign(20000, 0.5f);
  try {
    attnscope::tokenTextLayout(t);
    ADD_FAILURE() << "20,000 tokens laid out as one image";
  } catch (const attnscope::InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("figure: expected a token text at most 4096 px tall", 0), 0u) << e.what();
  }
  t.values.pop_back();
  EXPECT_THROW(attnscope::tokenTextBytes(t, attnscope::ExportFormat::Csv), attnscope::InputError);
}

}  // namespace
