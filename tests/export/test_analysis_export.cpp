// The diff export (B - A on the diverging map) and the similarity matrix with its dendrogram, against hand
// numbers; and `attnscope export --what diff` end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "analysis/analysis_test_scenes.h"
#include "attnscope/analysis/analysis.h"
#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/scene/scene_json.h"
#include "command_support.h"
#include "export/test_export_support.h"

namespace attnscope {
namespace {

// A: the hand heads with s = 2; B: head 2 (current-token, index 1) with s = 3. Only head 2's map changes:
// diagonal e^3/(e^3+3) - e^2/(e^2+3), elsewhere 1/(e^3+3) - 1/(e^2+3).
struct AB {
  Scene a = test::handHeadsScene(), b = test::handHeadsScene();
  Result ra, rb;
  AB() {
    b.heads[1].w_q *= 1.5f;
    ra = CpuBackend(1).compute(a);
    rb = CpuBackend(1).compute(b);
  }
};
const double kDiag = std::exp(3.0) / (std::exp(3.0) + 3) - test::peakE();
const double kOff = 1 / (std::exp(3.0) + 3) - test::peakF();

TEST(DiffExport, NpyHoldsTheDeltasOnlyWhereTheEditReaches) {
  AB ab;
  ExportRequest request;
  request.what = ExportWhat::Diff;
  request.format = ExportFormat::Npy;
  request.baseline = &ab.ra;
  const testing::Npy npy = testing::decodeNpy(exportBytes(ab.b, ab.rb, request));
  EXPECT_NE(npy.dict.find("'shape': (4, 4, 4)"), std::string::npos) << npy.dict;
  ASSERT_EQ(npy.values.size(), 64u);
  for (int h = 0; h < 4; ++h)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        const double want = h != 1 ? 0.0 : (i == j ? kDiag : kOff);
        EXPECT_NEAR(npy.values[static_cast<std::size_t>(16 * h + 4 * i + j)], want, 1e-6) << h << i << j;
      }
  request.format = ExportFormat::Csv;
  const auto rows = testing::parseCsv(exportBytes(ab.b, ab.rb, request));
  EXPECT_EQ(rows[0].back(), "delta");
  EXPECT_EQ(rows.size(), 65u);
}

TEST(DiffExport, FigureIsDivergingAndCentredAtZero) {
  AB ab;
  ExportRequest request;
  request.what = ExportWhat::Diff;
  request.format = ExportFormat::Png;
  request.baseline = &ab.ra;
  const Figure f = makeFigure(ab.b, ab.rb, request);
  const double m = std::max(std::abs(kDiag), std::abs(kOff));
  EXPECT_EQ(f.map, ColorMap::Diverging);
  EXPECT_NEAR(f.vmax, m, 1e-6);
  EXPECT_NEAR(f.vmin, -m, 1e-6);
  EXPECT_NE(f.panels[0].title.find("unchanged"), std::string::npos);
  EXPECT_NE(f.panels[1].title.find("(0, 0)"), std::string::npos) << f.panels[1].title;  // the first diagonal cell
  // Pixels: an unchanged head is white (the map's centre), head 2's diagonal the top of the scale.
  const FigureLayout layout = layoutFigure(f);
  const testing::Image img = testing::decodePng(exportBytes(ab.b, ab.rb, request));
  ASSERT_EQ(img.width, layout.width);
  const Rgb8 white = colorAt(ColorMap::Diverging, 0.5f);
  EXPECT_EQ(white, (Rgb8{255, 255, 255}));
  auto centre = [&](int panel, int i, int j) {
    const PixelRect r = cellRect(f, layout, panel, i, j);
    return img.at(r.x + r.w / 2, r.y + r.h / 2);
  };
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(centre(0, i, j), white);
      EXPECT_EQ(centre(3, i, j), white);
      EXPECT_EQ(centre(1, i, j),
                colorAt(ColorMap::Diverging, static_cast<float>(((i == j ? kDiag : kOff) + m) / (2 * m))));
    }
}

TEST(DiffExport, NeedsASnapshotOfTheSameShape) {
  AB ab;
  ExportRequest request;
  request.what = ExportWhat::Diff;
  request.format = ExportFormat::Npy;
  EXPECT_THROW(exportBytes(ab.b, ab.rb, request), InputError);  // no baseline
  Result fewer = ab.ra;
  fewer.heads.pop_back();
  request.baseline = &fewer;
  try {
    exportBytes(ab.b, ab.rb, request);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "snapshot");
  }
}

TEST(SimilarityExport, DendrogramOrdersTheMatrixAndIsDrawnBeside) {
  const Scene scene = test::handHeadsScene();
  const Result result = CpuBackend(1).compute(scene);
  ExportRequest request;
  request.what = ExportWhat::Similarity;
  request.format = ExportFormat::Png;
  request.dendrogram = true;
  const Figure f = makeFigure(scene, result, request);
  // The leaf order and the cosines worked out by hand from the hand weights (analysis_test_scenes.h).
  const std::vector<int> order = {1, 2, 0, 3};
  ASSERT_EQ(f.dendrogram_order, order);
  ASSERT_EQ(f.panels[0].values.rows(), 4);
  ASSERT_EQ(f.panels[0].values.cols(), 4);
  for (int a = 0; a < 4; ++a) {
    EXPECT_EQ(f.panels[0].row_labels[a], "H" + std::to_string(order[a] + 1));
    // float32 cosines against the double formula: seen 6e-8.
    for (int b = 0; b < 4; ++b) EXPECT_NEAR(f.panels[0].values(a, b), test::handCosine(order[a], order[b]), 1e-6);
  }
  const FigureLayout layout = layoutFigure(f);
  int left_lines = 0;
  for (const LineItem& l : layout.lines)
    if (l.x1 < layout.maps[0].x) ++left_lines;
  EXPECT_EQ(left_lines, 3 * 3);  // three lines per merge, h - 1 = 3 merges
  // The root's vertical line is at the band's left edge (its height is the largest).
  request.dendrogram = false;
  const FigureLayout plain = layoutFigure(makeFigure(scene, result, request));
  EXPECT_GT(layout.maps[0].x, plain.maps[0].x);
}

int runExport(const std::string& args, std::string& err) {
  const test::CommandRun r = test::runAttnscope("export " + args);
  err = r.err;
  return r.status;
}

TEST(DiffExport, CommandLine) {
  AB ab;
  const testing::TempDir dir;
  saveSceneFile(ab.a, dir.file("a.json"));
  saveSceneFile(ab.b, dir.file("b.json"));
  std::string err;
  ASSERT_EQ(runExport("'" + dir.file("b.json") + "' --what diff --against '" + dir.file("a.json") + "' --out '" +
                          dir.file("d.npy") + "'",
                      err),
            0)
      << err;
  std::ifstream in(dir.file("d.npy"), std::ios::binary);
  const testing::Npy npy = testing::decodeNpy(std::string(std::istreambuf_iterator<char>(in), {}));
  ASSERT_EQ(npy.values.size(), 64u);
  EXPECT_NEAR(npy.values[16 + 5], kDiag, 1e-6);  // head 2, (1, 1)
  EXPECT_EQ(
      runExport("'" + dir.file("b.json") + "' --what similarity --dendrogram --out '" + dir.file("s.svg") + "'", err),
      0)
      << err;
  // The command line's part is the plumbing (flags to the request, the scene read back from its file): its SVG
  // is the exporter's for that request, byte for byte. The figure's numbers against hand cosines and its
  // cluster order are tested on the exporter itself (SimilarityExport.DendrogramOrdersTheMatrixAndIsDrawnBeside).
  {
    ExportRequest request;
    request.what = ExportWhat::Similarity;
    request.format = ExportFormat::Svg;
    request.dendrogram = true;
    const Scene b_read = loadSceneFile(dir.file("b.json"));
    std::ifstream svg(dir.file("s.svg"), std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(svg), {}),
              exportBytes(b_read, CpuBackend(1).compute(b_read), request));
  }
  // Bad: no --against, --against with another what, a scene of other shapes, --dendrogram with heads.
  Scene other = ab.a;
  other.heads.pop_back();
  other.w_o = other.w_o->topRows(12).eval();
  saveSceneFile(other, dir.file("other.json"));
  const std::string b = "'" + dir.file("b.json") + "'", out = " --out '" + dir.file("x.png") + "'";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {b + " --what diff" + out, "--against: expected the scene A"},
      {b + " --what heads --against " + b + out, "--against: expected only with --what diff"},
      {b + " --what diff --against '" + dir.file("other.json") + "'" + out, "--against: expected 4 heads"},
      {b + " --what heads --dendrogram" + out, "--dendrogram: expected only with --what similarity"},
  };
  for (const auto& [args, message] : bad) {
    EXPECT_EQ(runExport(args, err), 2) << args;
    EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
    EXPECT_NE(err.find(message), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace attnscope
