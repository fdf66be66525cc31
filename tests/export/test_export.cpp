// Exporters: each format decoded and checked against weights worked out by hand (test_export_support.h):
// PNG pixels at cell centres, masked cells, colour bar; SVG parsed as XML; CSV fields; NPY header and values.
#include <gtest/gtest.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "attnscope/atomic_file.h"
#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/scene/presets.h"
#include "command_support.h"
#include "export/test_export_support.h"

using namespace attnscope;
using namespace attnscope::testing;

namespace {

Result handResult() { return CpuBackend(1).compute(handScene()); }

ExportRequest request(ExportWhat what, ExportFormat format, int head = 0) {
  ExportRequest r;
  r.what = what;
  r.format = format;
  r.head = head;
  return r;
}

Rgb8 centre(const Image& img, const PixelRect& r) { return img.at(r.x + r.w / 2, r.y + r.h / 2); }

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(ExportPng, CellsShowTheColourOfTheirHandWorkedWeight) {
  const Scene s = handScene();
  const Result r = handResult();
  for (int head = 0; head < 2; ++head) {
    const ExportRequest req = request(ExportWhat::Head, ExportFormat::Png, head);
    const Figure fig = makeFigure(s, r, req);
    const FigureLayout layout = layoutFigure(fig);
    const Image img = decodePng(exportBytes(s, r, req));
    ASSERT_EQ(img.width, layout.width);
    ASSERT_EQ(img.height, layout.height);
    EXPECT_TRUE(layout.labels_shown);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        const PixelRect cell = cellRect(fig, layout, 0, i, j);
        EXPECT_GE(cell.w, 24);  // small maps get big cells
        const Rgb8 want =
            j > i ? kMaskedColor : colorAt(ColorMap::Viridis, static_cast<float>(kHandWeights[head][i][j]));
        EXPECT_EQ(centre(img, cell), want) << "head " << head << " cell " << i << "," << j;
      }
    }
  }
}

// stb's flip flag is one for the whole process; the window's screenshot once set it and left it, and every PNG
// exported after a screenshot came out upside down. An export must not depend on it: causal head 1 has its
// masked (grey) cells above the diagonal, so a flipped image shows grey below it.
TEST(ExportPng, RowsComeTopFirstWhateverStbsFlipFlagWasLeftAt) {
  const Scene s = handScene();
  const Result r = handResult();
  const ExportRequest req = request(ExportWhat::Head, ExportFormat::Png, 0);
  const Figure fig = makeFigure(s, r, req);
  const FigureLayout layout = layoutFigure(fig);
  stbi_flip_vertically_on_write(1);  // as another part of the program might leave it
  const Image img = decodePng(exportBytes(s, r, req));
  stbi_flip_vertically_on_write(0);
  EXPECT_EQ(centre(img, cellRect(fig, layout, 0, 0, 2)), kMaskedColor);
  EXPECT_EQ(centre(img, cellRect(fig, layout, 0, 2, 0)),
            colorAt(ColorMap::Viridis, static_cast<float>(kHandWeights[0][2][0])));
}

TEST(ExportPng, PublishedViridisColoursAtWeightsOneAndOneHalf) {
  // Weight 1 (row 0) is viridis(1) = #fde725 and weight 1/2 (row 1) viridis(0.5) = #21918c, matplotlib's colours.
  const Scene s = handScene();
  const Result r = handResult();
  const ExportRequest req = request(ExportWhat::Head, ExportFormat::Png, 0);
  const Figure fig = makeFigure(s, r, req);
  const FigureLayout layout = layoutFigure(fig);
  const Image img = decodePng(exportBytes(s, r, req));
  EXPECT_EQ(centre(img, cellRect(fig, layout, 0, 0, 0)), (Rgb8{0xFD, 0xE7, 0x25}));
  EXPECT_EQ(centre(img, cellRect(fig, layout, 0, 1, 0)), (Rgb8{0x21, 0x91, 0x8C}));
  EXPECT_EQ(centre(img, cellRect(fig, layout, 0, 1, 1)), (Rgb8{0x21, 0x91, 0x8C}));
  // Colour bar: the top pixel row is the scale's top (viridis(1)), the bottom row its bottom (#440154).
  const PixelRect& bar = layout.colorbar;
  ASSERT_GE(bar.h, 128);  // so that the half-pixel offsets stay inside the end entries
  EXPECT_EQ(img.at(bar.x + bar.w / 2, bar.y), (Rgb8{0xFD, 0xE7, 0x25}));
  EXPECT_EQ(img.at(bar.x + bar.w / 2, bar.y + bar.h - 1), (Rgb8{0x44, 0x01, 0x54}));
}

TEST(ExportPng, AnnotationsUseDarkTextOnLightCellsAndLightOnDark) {
  const Scene s = handScene();
  const Result r = handResult();
  ExportRequest req = request(ExportWhat::Head, ExportFormat::Png, 1);
  req.annotate = true;
  const Figure fig = makeFigure(s, r, req);
  const FigureLayout layout = layoutFigure(fig);
  ASSERT_TRUE(layout.annotations_shown);
  const Image img = decodePng(exportBytes(s, r, req));
  // Over a cell, count pixels much darker / much lighter than the cell's own colour.
  auto textPixels = [&](int i, int j, bool darker) {
    const PixelRect c = cellRect(fig, layout, 0, i, j);
    const Rgb8 bg = img.at(c.x + 1, c.y + 1);  // the corner carries no text
    int count = 0;
    for (int y = c.y; y < c.y + c.h; ++y)
      for (int x = c.x; x < c.x + c.w; ++x) {
        const Rgb8 p = img.at(x, y);
        const int d = (p.r + p.g + p.b) - (bg.r + bg.g + bg.b);
        count += darker ? d < -200 : d > 200;
      }
    return count;
  };
  EXPECT_EQ(img.at(cellRect(fig, layout, 0, 0, 0).x + 1, cellRect(fig, layout, 0, 0, 0).y + 1),
            (Rgb8{0xFD, 0xE7, 0x25}));
  EXPECT_GT(textPixels(0, 0, true), 20);  // "1.00" in dark text on yellow
  EXPECT_EQ(textPixels(0, 0, false), 0);
  EXPECT_GT(textPixels(2, 1, false), 20);                          // "0.14" in white on dark purple
  EXPECT_EQ(textPixels(0, 2, true) + textPixels(0, 2, false), 0);  // masked: no number
  // The annotation texts are the hand weights to two decimals.
  std::vector<std::string> texts;
  for (const TextItem& t : layout.texts) texts.push_back(t.text);
  for (const char* want : {"1.00", "0.50", "0.43", "0.14"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end()) << want;
}

TEST(ExportPng, LongTokensAreCutAtWholeCharactersWithAnEllipsis) {
  Scene s = handScene();
  // "ê" (2 bytes) and "é" are where a byte-wise cut would split a character.
  s.query_tokens[0] = "parce qu'il \u00e9tait extr\u00eamement fatigu\u00e9 et tr\u00e8s en retard";
  const Result r = CpuBackend(1).compute(s);
  const FigureLayout layout = layoutFigure(makeFigure(s, r, request(ExportWhat::Head, ExportFormat::Png)));
  const std::string ellipsis = "\u2026";
  int cut = 0;
  for (const TextItem& t : layout.texts) {
    if (t.text.rfind("parce", 0) != 0) continue;
    ++cut;
    ASSERT_GE(t.text.size(), ellipsis.size());
    EXPECT_EQ(t.text.substr(t.text.size() - ellipsis.size()), ellipsis);
    EXPECT_LT(t.text.size(), s.query_tokens[0].size());
    // Valid UTF-8: every lead byte is followed by exactly its continuation bytes.
    for (std::size_t i = 0; i < t.text.size();) {
      const auto c = static_cast<unsigned char>(t.text[i]);
      const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      ASSERT_NE(len, 0u) << "stray byte at " << i << " in " << t.text;
      ASSERT_LE(i + len, t.text.size());
      for (std::size_t k = 1; k < len; ++k) ASSERT_EQ(static_cast<unsigned char>(t.text[i + k]) >> 6, 2u) << t.text;
      i += len;
    }
  }
  EXPECT_EQ(cut, 2);  // the query label and the key label
}

TEST(ExportPng, AllHeadsShareOneScaleInAGrid) {
  const Scene s = handScene();
  const Result r = handResult();
  const ExportRequest req = request(ExportWhat::Heads, ExportFormat::Png);
  const Figure fig = makeFigure(s, r, req);
  const FigureLayout layout = layoutFigure(fig);
  ASSERT_EQ(layout.maps.size(), 2u);
  EXPECT_EQ(layout.maps[0].y, layout.maps[1].y);  // side by side
  EXPECT_GT(layout.maps[1].x, layout.maps[0].x + layout.maps[0].w);
  const Image img = decodePng(exportBytes(s, r, req));
  for (int head = 0; head < 2; ++head)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        const Rgb8 want =
            j > i ? kMaskedColor : colorAt(ColorMap::Viridis, static_cast<float>(kHandWeights[head][i][j]));
        EXPECT_EQ(centre(img, cellRect(fig, layout, head, i, j)), want) << "head " << head << " " << i << "," << j;
      }
  EXPECT_EQ(fig.panels[1].title, "Head 2");  // heads are named from 1
}

TEST(ExportPng, CosineSimilarityUsesViridisOnZeroToOne) {
  const Scene s = handScene();
  const Result r = handResult();
  const ExportRequest req = request(ExportWhat::Similarity, ExportFormat::Png);
  const Figure fig = makeFigure(s, r, req);
  const FigureLayout layout = layoutFigure(fig);
  const Image img = decodePng(exportBytes(s, r, req));
  EXPECT_EQ(fig.title, "Head similarity (cosine)");
  EXPECT_EQ(fig.map, ColorMap::Viridis);
  EXPECT_EQ(fig.vmin, 0.0f);
  EXPECT_EQ(fig.vmax, 1.0f);
  // Diagonal: cosine 1 -> viridis' last entry, #fde725.
  EXPECT_EQ(centre(img, cellRect(fig, layout, 0, 0, 0)), (Rgb8{0xFD, 0xE7, 0x25}));
  EXPECT_EQ(centre(img, cellRect(fig, layout, 0, 0, 1)), colorAt(ColorMap::Viridis, static_cast<float>(handCosine())));
}

TEST(ExportPng, JensenShannonUsesViridisOnZeroToLn2) {
  const Scene s = handScene();
  const Result r = handResult();
  ExportRequest req = request(ExportWhat::Similarity, ExportFormat::Png);
  req.metric = SimilarityMetric::JensenShannon;
  const Figure fig = makeFigure(s, r, req);
  EXPECT_EQ(fig.map, ColorMap::Viridis);
  EXPECT_FLOAT_EQ(fig.vmax, static_cast<float>(std::log(2.0)));
  const FigureLayout layout = layoutFigure(fig);
  const Image img = decodePng(exportBytes(s, r, req));
  EXPECT_EQ(centre(img, cellRect(fig, layout, 0, 1, 1)), (Rgb8{0x44, 0x01, 0x54}));  // JS(h, h) = 0
}

// Channels within 1 of each other: a mean summed in another order can land on the other side of a colour step.
void expectColourNear(const Rgb8& got, const Rgb8& want, const std::string& what) {
  EXPECT_LE(std::abs(got.r - want.r), 1) << what;
  EXPECT_LE(std::abs(got.g - want.g), 1) << what;
  EXPECT_LE(std::abs(got.b - want.b), 1) << what;
}

TEST(ExportPng, LongSequenceStaysWithinTheSizeCapAndDropsTokenLabels) {
  // 4096 tokens, causal, W_Q = 0: every score is 0, so row i's weights are 1/(i + 1) on keys 0..i (by hand).
  // Past 2048 tokens the map keeps its budget of 2048 px, so each pixel pools 2 x 2 cells: pixel (x, y) shows
  // the mean of the unmasked cells of rows 2y, 2y + 1 and columns 2x, 2x + 1.
  Scene s = makeRandomScene({.n = 4096, .heads = 1, .d_model = 4, .causal = true, .seed = 1});
  s.heads[0].w_q.setZero();
  const Result r = CpuBackend(2).compute(s, {.keep_scores = false});
  const ExportRequest req = request(ExportWhat::Head, ExportFormat::Png, 0);
  const Figure fig = makeFigure(s, r, req);
  const FigureLayout layout = layoutFigure(fig);
  EXPECT_LE(layout.width, kMaxImageSide);
  EXPECT_LE(layout.height, kMaxImageSide);
  EXPECT_FALSE(layout.labels_shown);
  const std::string bytes = exportBytes(s, r, req);
  const Image img = decodePng(bytes);
  ASSERT_EQ(img.width, layout.width);
  const PixelRect& m = layout.maps[0];
  ASSERT_EQ(m.w, 2048);
  ASSERT_EQ(m.h, 2048);
  EXPECT_EQ(img.at(m.x + m.w - 2, m.y + 1), kMaskedColor);  // top right: keys after the query
  // Pixel (1, 2): rows 4, 5 (weights 1/5, 1/6), columns 2, 3, all unmasked: (2/5 + 2/6) / 4 = 0.18333.
  const double below = (1.0 / 5 + 1.0 / 6) / 2;
  expectColourNear(img.at(m.x + 1, m.y + 2), colorAt(ColorMap::Viridis, static_cast<float>(below)), "pixel (1, 2)");
  // Pixel (2, 2) on the diagonal: cell (4, 5) is masked, so the mean of 1/5, 1/6, 1/6 = 0.17778 (a masked
  // cell counted as 0 would give 0.13333, another colour: asserted below).
  const double diagonal = (1.0 / 5 + 2.0 / 6) / 3;
  expectColourNear(img.at(m.x + 2, m.y + 2), colorAt(ColorMap::Viridis, static_cast<float>(diagonal)),
                   "pixel (2, 2)");
  EXPECT_NE(colorAt(ColorMap::Viridis, static_cast<float>(diagonal)),
            colorAt(ColorMap::Viridis, static_cast<float>((1.0 / 5 + 1.0 / 6) / 4)));
  // The last pixel row: rows 4094, 4095, columns 0, 1: (1/4095 + 1/4096) / 2, near the bottom of the scale.
  expectColourNear(img.at(m.x, m.y + m.h - 1),
                   colorAt(ColorMap::Viridis, static_cast<float>((1.0 / 4095 + 1.0 / 4096) / 2)), "bottom left");
  std::printf("4096 x 4096 head: %d x %d px, %zu bytes\n", img.width, img.height, bytes.size());
}

TEST(ExportSvg, ParsesAsXmlWithEscapedTokensAndOneRectPerCell) {
  const Scene s = handScene();
  const Result r = handResult();
  TempDir dir;
  ExportRequest req = request(ExportWhat::Head, ExportFormat::Svg, 1);
  req.path = dir.file("head2.svg");
  exportResult(s, r, req);
  const std::string svg = readFile(req.path);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find(">a,b</text>"), std::string::npos);
  EXPECT_NE(svg.find(">say &quot;hi&quot;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">&lt;tag&gt;&amp;</text>"), std::string::npos);
  EXPECT_NE(svg.find("Head 2 attention weights"), std::string::npos);
  // Weight 1 and the masked cells as filled rects.
  EXPECT_NE(svg.find("fill=\"#fde725\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#c8c8c8\""), std::string::npos);
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("xml.etree.ElementTree");
  const std::string cmd =
      "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; t = E.parse(sys.argv[1]); "
      "ns = '{http://www.w3.org/2000/svg}'; print(len(t.findall('.//' + ns + 'text')))\" " +
      req.path + " > " + dir.file("count.txt");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "the SVG is not well-formed XML";
  std::size_t texts = 0;
  for (std::size_t p = svg.find("<text"); p != std::string::npos; p = svg.find("<text", p + 1)) ++texts;
  EXPECT_EQ(std::stoul(readFile(dir.file("count.txt"))), texts);
}

TEST(ExportSvg, LargeMapsAreEmbeddedAsPngImages) {
  // 300 x 300 = 90,000 cells, past the 40,000 drawn as rects: the map is one embedded PNG of the map's size.
  const Scene s = makeRandomScene({.n = 300, .heads = 1, .d_model = 4, .causal = true, .seed = 2});
  const Result r = CpuBackend(2).compute(s);
  const ExportRequest req = request(ExportWhat::Head, ExportFormat::Svg, 0);
  const FigureLayout layout = layoutFigure(makeFigure(s, r, req));
  const std::string svg = exportBytes(s, r, req);
  const std::string prefix = "xlink:href=\"data:image/png;base64,";
  const std::size_t at = svg.find(prefix);
  ASSERT_NE(at, std::string::npos);
  const std::string b64 = svg.substr(at + prefix.size(), svg.find('"', at + prefix.size()) - at - prefix.size());
  std::string png;  // base64 decoded by hand (RFC 4648)
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  unsigned bits = 0;
  int nbits = 0;
  for (char c : b64) {
    if (c == '=') break;
    bits = (bits << 6) | static_cast<unsigned>(alphabet.find(c));
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      png += static_cast<char>((bits >> nbits) & 0xFF);
    }
  }
  const Image img = decodePng(png);
  EXPECT_EQ(img.width, layout.maps[0].w);
  EXPECT_EQ(img.height, layout.maps[0].h);
  EXPECT_EQ(img.at(img.width - 1, 0), kMaskedColor);  // top right of a causal map
}

TEST(ExportCsv, OneHeadAsAQueryByKeyTable) {
  const Scene s = handScene();
  const Result r = handResult();
  const auto rows = parseCsv(exportBytes(s, r, request(ExportWhat::Head, ExportFormat::Csv, 1)));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"query\\key", "a,b", "say \"hi\"", "<tag>&"}));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(rows[i + 1].size(), 4u);
    EXPECT_EQ(rows[i + 1][0], s.query_tokens[i]);
    for (int j = 0; j < 3; ++j)  // a float32 printed exactly: seen within 3e-8 of the fraction
      EXPECT_NEAR(std::stod(rows[i + 1][j + 1]), kHandWeights[1][i][j], 1e-7) << i << "," << j;
  }
  EXPECT_EQ(rows[1][2], "0");  // masked weights are exactly 0
}

TEST(ExportCsv, AllHeadsInLongFormat) {
  const Scene s = handScene();
  const Result r = handResult();
  const auto rows = parseCsv(exportBytes(s, r, request(ExportWhat::Heads, ExportFormat::Csv)));
  ASSERT_EQ(rows.size(), 1u + 2 * 3 * 3);
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"head", "query_index", "query_token", "key_index", "key_token", "weight"}));
  // Head 2 (numbered from 1), query 2 "<tag>&", key 0 "a,b": 3/7.
  const auto& row = rows[1 + 9 + 2 * 3 + 0];
  EXPECT_EQ(row[0], "2");
  EXPECT_EQ(row[1], "2");
  EXPECT_EQ(row[2], "<tag>&");
  EXPECT_EQ(row[3], "0");
  EXPECT_EQ(row[4], "a,b");
  EXPECT_NEAR(std::stod(row[5]), 3.0 / 7, 1e-7);
}

TEST(ExportCsv, SimilarityWithHeadNames) {
  const Scene s = handScene();
  const Result r = handResult();
  const auto rows = parseCsv(exportBytes(s, r, request(ExportWhat::Similarity, ExportFormat::Csv)));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"head", "H1", "H2"}));
  EXPECT_EQ(rows[2][0], "H2");
  EXPECT_NEAR(std::stod(rows[1][2]), handCosine(), 1e-6);  // float32 cosine: seen 2e-8 off
  EXPECT_NEAR(std::stod(rows[2][2]), 1.0, 1e-6);
}

TEST(ExportNpy, HeadsAreFloat32HeadsByQueriesByKeys) {
  const Scene s = handScene();
  const Result r = handResult();
  const Npy npy = decodeNpy(exportBytes(s, r, request(ExportWhat::Heads, ExportFormat::Npy)));
  EXPECT_EQ(npy.major, 1);
  EXPECT_EQ(npy.minor, 0);
  EXPECT_EQ((10 + npy.header_len) % 64, 0u);  // numpy aligns the data to 64 bytes
  EXPECT_EQ(npy.dict.back(), '\n');
  EXPECT_NE(npy.dict.find("'descr': '<f4'"), std::string::npos);
  EXPECT_NE(npy.dict.find("'fortran_order': False"), std::string::npos);
  EXPECT_NE(npy.dict.find("'shape': (2, 3, 3)"), std::string::npos);
  ASSERT_EQ(npy.values.size(), 18u);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)  // float32 softmax: seen within 6e-8
        EXPECT_NEAR(npy.values[static_cast<std::size_t>(h * 9 + i * 3 + j)], kHandWeights[h][i][j], 1e-6);
}

TEST(ExportNpy, OneHeadAndSimilarityShapes) {
  const Scene s = handScene();
  const Result r = handResult();
  const Npy head = decodeNpy(exportBytes(s, r, request(ExportWhat::Head, ExportFormat::Npy, 1)));
  EXPECT_NE(head.dict.find("'shape': (3, 3)"), std::string::npos);
  ASSERT_EQ(head.values.size(), 9u);
  EXPECT_NEAR(head.values[7], 1.0 / 7, 1e-6);
  const Npy sim = decodeNpy(exportBytes(s, r, request(ExportWhat::Similarity, ExportFormat::Npy)));
  EXPECT_NE(sim.dict.find("'shape': (2, 2)"), std::string::npos);
  ASSERT_EQ(sim.values.size(), 4u);
  EXPECT_NEAR(sim.values[1], handCosine(), 1e-6);
}

TEST(ExportNpy, NumpyLoadsIt) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const Scene s = handScene();
  const Result r = handResult();
  TempDir dir;
  ExportRequest req = request(ExportWhat::Heads, ExportFormat::Npy);
  req.path = dir.file("weights.npy");
  exportResult(s, r, req);
  const std::string cmd =
      "/usr/bin/python3 -c \"import sys, numpy as np; a = np.load(sys.argv[1]); "
      "print(a.dtype, a.shape, a.flags['C_CONTIGUOUS'], '%.7f' % a[1, 2, 1])\" " +
      req.path + " > " + dir.file("out.txt");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(readFile(dir.file("out.txt")), "float32 (2, 3, 3) True 0.1428571\n");  // 1/7
}

TEST(ExportErrors, HeadOutOfRangeNamesTheFieldAndLeavesNoFile) {
  const Scene s = handScene();
  const Result r = handResult();
  TempDir dir;
  ExportRequest req = request(ExportWhat::Head, ExportFormat::Png, 2);
  req.path = dir.file("out.png");
  try {
    exportResult(s, r, req);
    FAIL() << "no error for head index 2 of 2 heads";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "head: expected an index 0 to 1 (head 1 to 2), got 2");
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ExportErrors, DirectoryAndMissingFolderAsPath) {
  const Scene s = handScene();
  const Result r = handResult();
  TempDir dir;
  ExportRequest req = request(ExportWhat::Heads, ExportFormat::Csv);
  req.path = dir.path.string();
  try {
    exportResult(s, r, req);
    FAIL() << "no error for a directory as the output path";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "output path");
    EXPECT_NE(std::string(e.what()).find("which is a folder"), std::string::npos) << e.what();
  }
  req.path = dir.file("no-such-folder/out.csv");
  EXPECT_THROW(exportResult(s, r, req), InputError);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ExportErrors, FailedExportKeepsTheOldFileAndLeavesNoTemporary) {
  const Scene s = handScene();
  const Result r = handResult();
  TempDir dir;
  const std::string path = dir.file("weights.npy");
  { std::ofstream(path) << "old"; }
  ExportRequest req = request(ExportWhat::Head, ExportFormat::Npy, -1);
  req.path = path;
  EXPECT_THROW(exportResult(s, r, req), InputError);
  EXPECT_EQ(readFile(path), "old");
  // A write that fails after the temporary exists (the rename onto a non-empty folder) removes it.
  std::filesystem::create_directory(dir.file("taken"));
  { std::ofstream(dir.file("taken/x")) << "x"; }
  EXPECT_THROW(writeFileAtomically(dir.file("taken"), "bytes"), InputError);
  EXPECT_EQ(dir.entries().size(), 2u);  // weights.npy and taken/, nothing else
  req.head = 0;
  exportResult(s, r, req);
  EXPECT_EQ(decodeNpy(readFile(path)).values.size(), 9u);
  EXPECT_EQ(dir.entries().size(), 2u);
}

TEST(ExportErrors, MissingFontIsAClearError) {
  const Scene s = handScene();
  const Result r = handResult();
  ::setenv("ATTNSCOPE_FONT", "/nonexistent/DejaVuSans.ttf", 1);
  try {
    exportBytes(s, r, request(ExportWhat::Heads, ExportFormat::Png));
    ::unsetenv("ATTNSCOPE_FONT");
    FAIL() << "no error without the font";
  } catch (const InputError& e) {
    ::unsetenv("ATTNSCOPE_FONT");
    EXPECT_EQ(e.field(), "font");
    EXPECT_NE(std::string(e.what()).find("fonts-dejavu-core"), std::string::npos) << e.what();
  }
  // CSV and NPY need no font.
  ::setenv("ATTNSCOPE_FONT", "/nonexistent/DejaVuSans.ttf", 1);
  EXPECT_NO_THROW(exportBytes(s, r, request(ExportWhat::Heads, ExportFormat::Csv)));
  ::unsetenv("ATTNSCOPE_FONT");
}

TEST(ExportErrors, ResultOfAnotherScene) {
  const Scene s = handScene();
  Result r = handResult();
  r.heads.pop_back();
  EXPECT_THROW(exportBytes(s, r, request(ExportWhat::Heads, ExportFormat::Npy)), InputError);
}
