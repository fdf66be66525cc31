// The contrast of exported figures of weights (contrast.h, setContrast): each cell's colour in the PNG and the
// SVG against colours worked out here from the weights in double (a softmax by hand), for every scale and the
// log scale; what the colour bar says; a pooled map's pixels; and that the numbers (NPY) stay raw and the
// similarity figure keeps its own scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/model/model_export.h"
#include "export/test_export_support.h"

using namespace attnscope;
using namespace attnscope::testing;

namespace {

// 4 tokens, d_model 1, no mask, two heads of d_k = 1 (scale 1): x = (0.5, 1, 1.5, 2), W_Q = 1 and W_K = a
// (a = 1 for head 1, -0.8 for head 2), so score_ij = a x_i x_j. Every weight is below 1, every row's max a
// different one: head 1 row 3 is exp(1, 2, 3, 4) / 84.79, its max 0.644 the largest of both heads; head 2's
// largest is its row 3, exp(-0.8, -1.6, -2.4, -3.2) / 0.783 -> 0.574.
const double kX[4] = {0.5, 1, 1.5, 2};
const double kA[2] = {1, -0.8};

Scene contrastScene() {
  Scene s;
  s.d_model = 1;
  s.query_tokens = {"w", "x", "y", "z"};
  s.query.resize(4, 1);
  for (int i = 0; i < 4; ++i) s.query(i, 0) = static_cast<float>(kX[i]);
  for (double a : kA) {
    HeadParams h;
    h.w_q = Matrix::Ones(1, 1);
    h.w_k = Matrix::Constant(1, 1, static_cast<float>(a));
    h.w_v = Matrix::Ones(1, 1);
    s.heads.push_back(h);
  }
  return s;
}

// The weights of contrastScene in double: w[head][i][j] = exp(a x_i x_j) / sum_k exp(a x_i x_k).
std::vector<std::vector<std::vector<double>>> contrastWeights() {
  std::vector<std::vector<std::vector<double>>> w(2, std::vector<std::vector<double>>(4, std::vector<double>(4)));
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      double sum = 0;
      for (int j = 0; j < 4; ++j) sum += std::exp(kA[h] * kX[i] * kX[j]);
      for (int j = 0; j < 4; ++j) w[h][i][j] = std::exp(kA[h] * kX[i] * kX[j]) / sum;
    }
  return w;
}

// The log scale by its definition: 1 + log10(r) / 3 over 3 decades, 0 at and below r = 0.001.
double logT(double r) { return r <= 0 ? 0 : std::max(0.0, 1 + std::log10(r) / 3); }

// Viridis at t, the entry min(255, floor(t * 256)). The file's colours come from float32 weights (softmax error
// about 1e-7 relative; the division and log10 in float add under 1e-6 to t): where t * 256 lies within 1e-3 of
// an entry's edge either neighbour is accepted, elsewhere only the one entry.
::testing::AssertionResult isViridisAt(Rgb8 got, double t) {
  const double x = std::clamp(t, 0.0, 1.0) * 256;
  const auto entry = [](double v) { return colorMapTable(ColorMap::Viridis)[static_cast<std::size_t>(std::clamp(
                                        static_cast<int>(std::floor(v)), 0, 255))]; };
  if (got == entry(x) || (std::fabs(x - std::round(x)) < 1e-3 && (got == entry(x - 1e-3) || got == entry(x + 1e-3))))
    return ::testing::AssertionSuccess();
  char buf[96];
  std::snprintf(buf, sizeof buf, "got #%02x%02x%02x, viridis(%.6f) is entry %d", got.r, got.g, got.b, t,
                std::min(255, static_cast<int>(std::floor(x))));
  return ::testing::AssertionFailure() << buf;
}

ExportRequest heads(ColorScale scale, bool log, ExportFormat format = ExportFormat::Png) {
  ExportRequest r;
  r.what = ExportWhat::Heads;
  r.format = format;
  r.contrast = {scale, log};
  return r;
}

Rgb8 centre(const Image& img, const PixelRect& r) { return img.at(r.x + r.w / 2, r.y + r.h / 2); }

// The figure's texts, to find the colour bar's label and ticks.
bool hasText(const FigureLayout& layout, const std::string& text) {
  return std::any_of(layout.texts.begin(), layout.texts.end(), [&](const TextItem& t) { return t.text == text; });
}

// The colour bar's ticks, bottom first as the layout adds them: each label (the text 7 px right of the bar) with
// the y of its 3-pixel tick line (the lines right of the bar, one pixel high).
std::vector<std::pair<std::string, int>> barTicks(const FigureLayout& layout) {
  const PixelRect& bar = layout.colorbar;
  std::vector<std::string> labels;
  std::vector<int> ys;
  for (const TextItem& t : layout.texts)
    if (t.x == bar.x + bar.w + 7.0 && !t.vertical) labels.push_back(t.text);
  for (const LineItem& l : layout.lines)
    if (l.x0 == bar.x + bar.w && l.x1 == bar.x + bar.w + 3 && l.y0 == l.y1) ys.push_back(l.y0);
  std::vector<std::pair<std::string, int>> ticks;
  for (std::size_t k = 0; k < labels.size() && k < ys.size(); ++k) ticks.emplace_back(labels[k], ys[k]);
  EXPECT_EQ(labels.size(), ys.size());
  return ticks;
}

// The pixel row of the bar at fraction `up` of its height (0: bottom row, 1: top row).
int barRow(const PixelRect& bar, double up) { return bar.y + static_cast<int>(std::lround((1 - up) * (bar.h - 1))); }

// Every cell of both heads of contrastScene, exported with `req`, against want(head, i, j) as t.
template <typename Want>
void expectCells(const ExportRequest& req, Want want) {
  const Scene s = contrastScene();
  const Result r = CpuBackend(1).compute(s);
  const Figure fig = makeFigure(s, r, req);
  const FigureLayout layout = layoutFigure(fig);
  const Image img = decodePng(exportBytes(s, r, req));
  ASSERT_EQ(img.width, layout.width);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_TRUE(isViridisAt(centre(img, cellRect(fig, layout, h, i, j)), want(h, i, j)))
            << "head " << h + 1 << " cell " << i << "," << j;
}

}  // namespace

TEST(ExportContrast, RowMaxColoursEachWeightOverItsRowsLargest) {
  const auto w = contrastWeights();
  expectCells(heads(ColorScale::RowMax, false), [&](int h, int i, int j) {
    return w[h][i][j] / *std::max_element(w[h][i].begin(), w[h][i].end());
  });
  // Head 1 row 3 over its max: exp(-3, -2, -1, 0) = 0.050, 0.135, 0.368, 1: not the 0..1 colours.
  const Scene s = contrastScene();
  const Figure fig = makeFigure(s, CpuBackend(1).compute(s), heads(ColorScale::RowMax, false));
  const FigureLayout layout = layoutFigure(fig);
  EXPECT_EQ(fig.scale_label, "weight / row's max");
  EXPECT_TRUE(hasText(layout, "weight / row's max"));
  EXPECT_TRUE(hasText(layout, "0.0") && hasText(layout, "1.0"));
}

TEST(ExportContrast, RowMaxReadsOnlyTheAllowedCellsAndKeepsMaskedCellsGrey) {
  // The causal hand-worked scene's head 2: rows [1], [1/2, 1/2], [3/7, 1/7, 3/7] over their maxima are [1],
  // [1, 1], [1, 1/3, 1]; the masked cells above the diagonal stay grey.
  const Scene s = handScene();
  const Result r = CpuBackend(1).compute(s);
  ExportRequest req;
  req.what = ExportWhat::Head;
  req.head = 1;
  req.contrast = {ColorScale::RowMax, false};
  const Figure fig = makeFigure(s, r, req);
  const FigureLayout layout = layoutFigure(fig);
  const Image img = decodePng(exportBytes(s, r, req));
  const double want[3][3] = {{1, 0, 0}, {1, 1, 0}, {1, 1.0 / 3, 1}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const Rgb8 got = centre(img, cellRect(fig, layout, 0, i, j));
      if (j > i)
        EXPECT_EQ(got, kMaskedColor) << i << "," << j;
      else
        EXPECT_TRUE(isViridisAt(got, want[i][j])) << i << "," << j;
    }
}

TEST(ExportContrast, SharedMaxIsTheLargestWeightOfAllHeadsAndTheBarsTopTick) {
  const auto w = contrastWeights();
  double top = 0;
  for (const auto& head : w)
    for (const auto& row : head) top = std::max(top, *std::max_element(row.begin(), row.end()));
  expectCells(heads(ColorScale::Shared, false), [&](int h, int i, int j) { return w[h][i][j] / top; });
  const Scene s = contrastScene();
  const Figure fig = makeFigure(s, CpuBackend(1).compute(s), heads(ColorScale::Shared, false));
  const FigureLayout layout = layoutFigure(fig);
  char top_text[16];
  std::snprintf(top_text, sizeof top_text, "%.3g", top);
  EXPECT_STREQ(top_text, "0.644");  // the worked value above
  EXPECT_EQ(fig.scale_label, "attention weight");
  // 0 at the bar's bottom row, round steps (0.2, while under 85% of the top), the largest weight at its top row.
  // 0.2 sits 0.2 / top of the way up; top is the float32 weight here, within 1e-7 of the double: the row can
  // differ only when (1 - 0.2 / top) * (h - 1) is within 1e-4 of a half, so a row either side is accepted.
  const PixelRect& bar = layout.colorbar;
  const auto ticks = barTicks(layout);
  ASSERT_EQ(ticks.size(), 4u);
  EXPECT_EQ(ticks[0], std::make_pair(std::string("0.0"), barRow(bar, 0)));
  EXPECT_EQ(ticks[1].first, "0.2");
  EXPECT_NEAR(ticks[1].second, barRow(bar, 0.2 / top), 1);
  EXPECT_EQ(ticks[2].first, "0.4");
  EXPECT_NEAR(ticks[2].second, barRow(bar, 0.4 / top), 1);
  EXPECT_EQ(ticks[3], std::make_pair(std::string(top_text), barRow(bar, 1)));
}

TEST(ExportContrast, PerHeadPutsEachMapOverItsOwnLargestWeight) {
  const auto w = contrastWeights();
  double tops[2] = {0, 0};
  for (int h = 0; h < 2; ++h)
    for (const auto& row : w[h]) tops[h] = std::max(tops[h], *std::max_element(row.begin(), row.end()));
  EXPECT_NEAR(tops[1], 0.574, 5e-4);  // the worked value above, so the two tops differ
  expectCells(heads(ColorScale::PerHead, false), [&](int h, int i, int j) { return w[h][i][j] / tops[h]; });
  const Scene s = contrastScene();
  EXPECT_EQ(makeFigure(s, CpuBackend(1).compute(s), heads(ColorScale::PerHead, false)).scale_label,
            "weight / head's max");
}

TEST(ExportContrast, LogScalesOverThreeDecadesOfTheTop) {
  const auto w = contrastWeights();
  // Fixed, log: the top is 1.
  expectCells(heads(ColorScale::Fixed, true), [&](int h, int i, int j) { return logT(w[h][i][j]); });
  // Row max, log: head 2 row 3 over its max is exp(0, -0.8, -1.6, -2.4) -> t = 1, 0.884, 0.768, 0.653.
  expectCells(heads(ColorScale::RowMax, true), [&](int h, int i, int j) {
    return logT(w[h][i][j] / *std::max_element(w[h][i].begin(), w[h][i].end()));
  });
  // The bar: 0.001, 0.01, 0.1 and 1 of the top at its bottom, a third, two thirds and its top.
  const Scene s = contrastScene();
  const Figure fig = makeFigure(s, CpuBackend(1).compute(s), heads(ColorScale::RowMax, true));
  const FigureLayout layout = layoutFigure(fig);
  EXPECT_EQ(fig.scale_label, "weight / row's max, log scale");
  const PixelRect& bar = layout.colorbar;
  const auto ticks = barTicks(layout);
  ASSERT_EQ(ticks.size(), 4u);
  const char* labels[] = {"0.001", "0.01", "0.1", "1"};
  for (int k = 0; k < 4; ++k) EXPECT_EQ(ticks[static_cast<std::size_t>(k)], std::make_pair(std::string(labels[k]), barRow(bar, k / 3.0)));
}

TEST(ExportContrast, SharedLogTicksAreDecadesOfTheLargestWeight) {
  const auto w = contrastWeights();
  const double top = w[0][3][3];  // the largest (worked above)
  expectCells(heads(ColorScale::Shared, true), [&](int h, int i, int j) { return logT(w[h][i][j] / top); });
  const Scene s = contrastScene();
  const FigureLayout layout = layoutFigure(makeFigure(s, CpuBackend(1).compute(s), heads(ColorScale::Shared, true)));
  const auto ticks = barTicks(layout);
  ASSERT_EQ(ticks.size(), 4u);
  const char* labels[] = {"0.000644", "0.00644", "0.0644", "0.644"};
  for (int k = 0; k < 4; ++k) EXPECT_EQ(ticks[static_cast<std::size_t>(k)].first, labels[k]);
}

TEST(ExportContrast, SvgCellsAreFilledInTheSameColours) {
  const auto w = contrastWeights();
  const Scene s = contrastScene();
  const Result r = CpuBackend(1).compute(s);
  const ExportRequest req = heads(ColorScale::RowMax, true, ExportFormat::Svg);
  const Figure fig = makeFigure(s, r, req);
  const FigureLayout layout = layoutFigure(fig);
  const std::string svg = exportBytes(s, r, req);
  // A few cells: head 1 row 3 (exp(-3) .. 1 over the max), head 2 row 0.
  for (const auto& [h, i, j] : std::vector<std::tuple<int, int, int>>{{0, 3, 0}, {0, 3, 1}, {0, 3, 3}, {1, 0, 3}}) {
    const PixelRect c = cellRect(fig, layout, h, i, j);
    const std::string at = "<rect x=\"" + std::to_string(c.x) + "\" y=\"" + std::to_string(c.y) + "\" width=\"" +
                           std::to_string(c.w) + "\" height=\"" + std::to_string(c.h) + "\" fill=\"#";
    const std::size_t p = svg.find(at);
    ASSERT_NE(p, std::string::npos) << at;
    const std::string hex = svg.substr(p + at.size(), 6);
    const auto byte = [&](int k) { return static_cast<std::uint8_t>(std::stoi(hex.substr(2 * k, 2), nullptr, 16)); };
    const double t = logT(w[h][i][j] / *std::max_element(w[h][i].begin(), w[h][i].end()));
    EXPECT_TRUE(isViridisAt(Rgb8{byte(0), byte(1), byte(2)}, t)) << h << " " << i << "," << j << " #" << hex;
  }
  EXPECT_NE(svg.find("weight / row&apos;s max, log scale"), std::string::npos);
}

// A map of 2 x 4096 cells draws 2048 x 1 pixels (the single-map budget), each pixel 2 x 2 cells: under row max
// it shows the mean of the four cells each over its own row's max (a masked cell left out), then the log.
TEST(ExportContrast, APooledPixelIsTheMeanOfItsCellsEachOverItsTop) {
  constexpr int kCols = 4096;
  Figure f;
  setWeightScale(f);
  HeatmapPanel p;
  p.values.resize(2, kCols);
  p.masked = MaskMatrix::Zero(2, kCols);
  double v[2][kCols];
  for (int j = 0; j < kCols; ++j) {
    v[0][j] = 0.1 + 0.8 * (j % 7) / 6.0;   // row 0: 0.1 .. 0.9, max 0.9
    v[1][j] = 0.01 * (1 + j % 5);          // row 1: 0.01 .. 0.05, max 0.05
    for (int i = 0; i < 2; ++i) p.values(i, j) = static_cast<float>(v[i][j]);
  }
  p.masked(1, 0) = 1;
  p.row_labels = {"a", "b"};
  p.col_labels.assign(kCols, "t");
  f.panels.push_back(p);
  for (bool log : {false, true}) {
    setContrast(f, {ColorScale::RowMax, log});
    const FigureLayout layout = layoutFigure(f);
    const PixelRect& m = layout.maps[0];
    ASSERT_EQ(m.w, 2048);
    ASSERT_EQ(m.h, 1);
    const Image img = decodePng(model::figureBytes(f, ExportFormat::Png));
    double tops[2] = {0, 0};  // each row's largest float32 value: 0.9 and 0.05
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < kCols; ++j) tops[i] = std::max(tops[i], static_cast<double>(static_cast<float>(v[i][j])));
    for (int x : {0, 1, 2, 3, 100, 1023, 2047}) {
      double sum = 0;
      int count = 0;
      for (int i = 0; i < 2; ++i)
        for (int j = 2 * x; j < 2 * x + 2; ++j) {
          if (i == 1 && j == 0) continue;  // masked
          sum += static_cast<float>(v[i][j]) / tops[i];
          ++count;
        }
      const double mean = sum / count;
      EXPECT_TRUE(isViridisAt(img.at(m.x + x, m.y), log ? logT(mean) : mean)) << "pixel " << x << " log " << log;
    }
  }
}

TEST(ExportContrast, NumbersStayRawAndSimilarityKeepsItsScale) {
  const Scene s = contrastScene();
  const Result r = CpuBackend(1).compute(s);
  const auto w = contrastWeights();
  const Npy npy = decodeNpy(exportBytes(s, r, heads(ColorScale::RowMax, true, ExportFormat::Npy)));
  ASSERT_EQ(npy.values.size(), 32u);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)  // float32 softmax of 4 terms: within a few ulp of the double weights
        EXPECT_NEAR(npy.values[static_cast<std::size_t>(h * 16 + i * 4 + j)], w[h][i][j], 1e-6);
  ExportRequest sim = heads(ColorScale::RowMax, true);
  sim.what = ExportWhat::Similarity;
  Result with_analysis = CpuBackend(1).compute(s, {.analysis = true});
  const Figure fig = makeFigure(s, with_analysis, sim);
  EXPECT_EQ(fig.contrast, MapContrast{});  // cosine keeps its own 0..1 scale
  EXPECT_EQ(fig.vmin, 0);
  EXPECT_EQ(fig.vmax, 1);
}
