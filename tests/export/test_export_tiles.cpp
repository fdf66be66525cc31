// Exports through tiles: a window of one head (NPY, CSV) and the max-pooled figure of a long head, from a
// result that keeps no maps, against the double reference of compute/reference_rows.h. Block edges are written
// out here from the documented rule (pixel p covers the cells whose first pixel it is), not taken from the
// engine; only where a block lands in the image comes from the engine's layout (cellRect).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/export/colormap.h"
#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "compare.h"  // first: it includes Eigen as types.h does
#include "compute/reference_rows.h"
#include "export/test_export_support.h"

namespace attnscope {
namespace {

using test::MatrixD;
using test::referenceRows;
using testing::decodeNpy;
using testing::decodePng;
using testing::parseCsv;

// 2500 tokens (past the 2048 drawn at full resolution), causal, key 10 padded, 2 heads.
Scene longScene() {
  Scene s = test::randomScene(2500, 2, 16, true, 3);
  s.key_padding.assign(static_cast<std::size_t>(s.nK()), 0);
  s.key_padding[10] = 1;
  return s;
}

Result withoutMaps(const Scene& s) {
  ComputeOptions drop;
  drop.maps = MapPolicy::Drop;
  drop.keep_scores = false;
  drop.analysis = false;
  Result r = CpuBackend(2).compute(s, drop);
  EXPECT_FALSE(r.heads[0].hasMap());  // the tiled path runs
  return r;
}

ExportRequest window(ExportFormat format, int row0, int row1, int col0, int col1) {
  ExportRequest req;
  req.what = ExportWhat::Head;
  req.head = 1;
  req.format = format;
  req.row0 = row0, req.row1 = row1, req.col0 = col0, req.col1 = col1;
  return req;
}

// Recomputed float32 weights (about 1e-3 here) against double: largest error seen 7.4e-9.
constexpr double kTol = 2e-8;

TEST(ExportTiles, NpyWindowOfAHeadWithoutMaps) {
  const Scene s = longScene();
  const Result r = withoutMaps(s);
  // Rows 1000..1039 x keys 900..1099: allowed, causally masked (j > i) and the padded key out of reach.
  const testing::Npy npy = decodeNpy(exportBytes(s, r, window(ExportFormat::Npy, 1000, 1040, 900, 1100)));
  EXPECT_NE(npy.dict.find("'shape': (40, 200)"), std::string::npos) << npy.dict;
  ASSERT_EQ(npy.values.size(), 40u * 200u);
  const MatrixD want = referenceRows(s, 1, 1000, 1040).middleCols(900, 200);
  const Eigen::Map<const Matrix> got(npy.values.data(), 40, 200);
  const double error = test::maxError(got, want);
  EXPECT_LT(error, kTol) << error;
  std::printf("window error %.2g\n", error);
  EXPECT_EQ(got(0, 101), 0.0f);  // query 1000, key 1001: causal, exactly 0
}

TEST(ExportTiles, CsvWindowHasTheWindowsTokensAndWeights) {
  const Scene s = longScene();
  const Result r = withoutMaps(s);
  const auto rows = parseCsv(exportBytes(s, r, window(ExportFormat::Csv, 5, 8, 8, 12)));
  ASSERT_EQ(rows.size(), 4u);  // header + queries 5, 6, 7
  EXPECT_EQ(rows[0], (std::vector<std::string>{"query\\key", "t8", "t9", "t10", "t11"}));
  const MatrixD want = referenceRows(s, 1, 5, 8);
  double error = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(rows[static_cast<std::size_t>(i + 1)].size(), 5u);
    EXPECT_EQ(rows[static_cast<std::size_t>(i + 1)][0], "t" + std::to_string(5 + i));
    for (int j = 0; j < 4; ++j)  // keys 8.. of queries 5..7 are all after the query: 0
      error = test::worse(
          error,
          test::valueError(
              std::strtod(rows[static_cast<std::size_t>(i + 1)][static_cast<std::size_t>(j + 1)].c_str(), nullptr),
              want(i, 8 + j)));
  }
  EXPECT_EQ(error, 0.0);
  // Query 20: keys 8, 9 allowed, 10 padded, 11 allowed.
  const auto row20 = parseCsv(exportBytes(s, r, window(ExportFormat::Csv, 20, 21, 8, 12)));
  const MatrixD want20 = referenceRows(s, 1, 20, 21);
  ASSERT_EQ(row20.size(), 2u);
  for (int j = 0; j < 4; ++j)
    error = test::worse(error, test::valueError(std::strtod(row20[1][static_cast<std::size_t>(j + 1)].c_str(), nullptr),
                                                want20(0, 8 + j)));
  EXPECT_EQ(row20[1][3], "0");
  EXPECT_LT(error, kTol) << error;
}

// Cells [lo, hi) that pixel p of `pixels` covers out of n: those whose first pixel, floor(i * pixels / n), is
// p; at least one cell.
std::pair<int, int> block(int p, int pixels, int n) {
  auto first_cell = [&](int q) { return static_cast<int>((static_cast<long long>(q) * n + pixels - 1) / pixels); };
  const int lo = first_cell(p), hi = first_cell(p + 1);
  return lo < hi ? std::pair{lo, hi} : std::pair{lo - 1, lo};
}

TEST(ExportTiles, LongHeadFigureIsMaxPooledPerPixel) {
  const Scene s = longScene();
  const Result r = withoutMaps(s);
  ExportRequest req;
  req.what = ExportWhat::Head;
  req.head = 0;
  req.format = ExportFormat::Png;
  const Figure fig = makeFigure(s, r, req);
  ASSERT_EQ(fig.panels.size(), 1u);
  ASSERT_EQ(fig.panels[0].values.rows(), 1024);  // pooled to one block per pixel of a lone map
  ASSERT_EQ(fig.panels[0].values.cols(), 1024);
  EXPECT_NE(fig.title.find("max of up to 3 x 3 weights per pixel"), std::string::npos) << fig.title;
  const FigureLayout layout = layoutFigure(fig);
  const testing::Image img = decodePng(exportBytes(s, r, req));
  ASSERT_EQ(img.width, layout.width);
  const int n = s.nQ();
  // Blocks on the diagonal, below it, in the padded key's column, above the diagonal (all masked), the corners.
  for (const auto& [y, x] : {std::pair{0, 0}, std::pair{500, 500}, std::pair{700, 3}, std::pair{700, 4},
                             std::pair{100, 800}, std::pair{1023, 1023}, std::pair{1023, 0}}) {
    const auto [r0, r1] = block(y, 1024, n);
    const auto [c0, c1] = block(x, 1024, n);
    const MatrixD w = referenceRows(s, 0, r0, r1);
    double peak = 0;
    bool any = false;
    for (int i = r0; i < r1; ++i)
      for (int j = c0; j < c1; ++j)
        if (j <= i && j != 10) {
          any = true;
          peak = std::max(peak, w(i - r0, j));
        }
    const PixelRect cell = cellRect(fig, layout, 0, y, x);
    ASSERT_EQ(cell.w, 1);
    ASSERT_EQ(cell.h, 1);
    const Rgb8 want = any ? colorAt(ColorMap::Viridis, static_cast<float>(peak)) : kMaskedColor;
    const Rgb8 got = img.at(cell.x, cell.y);
    // 8-bit colours of a float32 against a double maximum: a channel may round the other way (seen: none).
    EXPECT_LE(std::abs(got.r - want.r) + std::abs(got.g - want.g) + std::abs(got.b - want.b), 1)
        << "block " << y << "," << x << " peak " << peak;
  }
}

TEST(ExportTiles, BadWindowsAreRefused) {
  const Scene s = longScene();
  auto field = [&](const ExportRequest& req) {
    try {
      checkExportWindow(s, req);
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("none");
  };
  EXPECT_EQ(field(window(ExportFormat::Npy, 10, 5, 0, -1)), "rows");    // empty
  EXPECT_EQ(field(window(ExportFormat::Npy, 0, 2501, 0, -1)), "rows");  // past n_q
  EXPECT_EQ(field(window(ExportFormat::Npy, 0, -1, 2500, -1)), "cols");
  EXPECT_EQ(field(window(ExportFormat::Npy, 0, -1, 0, -1)), "none");
  ExportRequest heads = window(ExportFormat::Npy, 0, 4, 0, -1);
  heads.what = ExportWhat::Heads;
  EXPECT_EQ(field(heads), "rows");
}

}  // namespace
}  // namespace attnscope
