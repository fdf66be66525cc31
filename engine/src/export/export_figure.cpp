// What an exported heatmap shows: the panels, titles, colour scale and masked cells of a request, built from
// the scene and its result (the PNG and SVG exporters both draw this Figure).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/scene/scene.h"
#include "export/export_formats.h"

namespace attnscope {

// The result must be this scene's: per head a weight map (n_q, n_k), or the row statistics to tile it from.
void checkResult(const Scene& scene, const Result& result) {
  const int h = scene.numHeads();
  if (static_cast<int>(result.heads.size()) != h)
    throw InputError("result.heads", std::to_string(h) + " heads (the scene's)", std::to_string(result.heads.size()));
  for (int i = 0; i < h; ++i) {
    const HeadResult& hr = result.heads[static_cast<std::size_t>(i)];
    if (!hr.hasMap() && hr.row_sum.size() == scene.nQ()) continue;  // weights on demand (compute/tiles.h)
    const Matrix& w = hr.weights;
    if (w.rows() != scene.nQ() || w.cols() != scene.nK())
      throw InputError("result.heads[" + std::to_string(i) + "].weights", shapeString(scene.nQ(), scene.nK()),
                       shapeString(w.rows(), w.cols()));
  }
}

const Matrix& similarityMatrix(const Scene& scene, const Result& result, SimilarityMetric metric) {
  const bool cosine = metric == SimilarityMetric::Cosine;
  const Matrix& m = cosine ? result.similarity.cosine : result.similarity.js;
  const int h = scene.numHeads();
  if (m.rows() != h || m.cols() != h)
    throw InputError(cosine ? "result.similarity.cosine" : "result.similarity.js", shapeString(h, h),
                     shapeString(m.rows(), m.cols()) + " (a result computed without analysis?)");
  return m;
}

namespace {

// Past this many cells a side, a head without its map (or a window of one) is drawn as a max-pooled overview:
// one block per pixel, each the largest weight it covers, so a sharp head stays visible and no (n, n) matrix
// is built. A kept whole map is drawn as before (each pixel the mean of its cells, by the rasteriser).
constexpr int kFullResolutionCells = 2048;

std::vector<std::string> slice(const std::vector<std::string>& tokens, int first, int last) {
  return {tokens.begin() + first, tokens.begin() + last};
}

// Head `head`'s window of weights as a panel; `pooled_side`: the blocks a side of a long map's overview.
HeatmapPanel weightPanel(const Scene& scene, const Result& result, int head, const ExportWindow& w, int pooled_side) {
  const HeadResult& hr = result.heads[static_cast<std::size_t>(head)];
  HeatmapPanel p;
  p.title = "Head " + std::to_string(head + 1);
  p.row_first = w.row0;
  p.col_first = w.col0;
  p.row_labels = slice(scene.query_tokens, w.row0, w.row1);
  p.col_labels = slice(scene.keyTokens(), w.col0, w.col1);
  if (hr.hasMap() && w.whole(scene)) {
    p.values = hr.weights;
    // masked: (n_q, n_k), 1 where the scene's combined mask forbids attending.
    p.masked = (allowedMask(scene).array() == 0).cast<std::uint8_t>();
    return p;
  }
  TileRequest request{.head = head, .row0 = w.row0, .row1 = w.row1, .col0 = w.col0, .col1 = w.col1};
  const int n = std::max(w.rows(), w.cols());
  if (n > kFullResolutionCells) {
    request.pooling = Pooling::Max;
    request.out_rows = std::max(1, static_cast<int>(static_cast<long long>(pooled_side) * w.rows() / n));
    request.out_cols = std::max(1, static_cast<int>(static_cast<long long>(pooled_side) * w.cols() / n));
    p.row_positions = w.rows();
    p.col_positions = w.cols();
  }
  Tile tile = weightTile(scene, result, request);
  p.values = std::move(tile.values);
  p.masked = std::move(tile.masked);
  return p;
}

// ", max of 32 x 32 positions per pixel" for a pooled panel, else "".
std::string pooledNote(const HeatmapPanel& p) {
  if (p.row_positions == 0) return "";
  const auto per = [](int positions, Eigen::Index blocks) {
    return std::to_string((positions + static_cast<int>(blocks) - 1) / static_cast<int>(blocks));
  };
  return " (max of up to " + per(p.row_positions, p.values.rows()) + " x " + per(p.col_positions, p.values.cols()) +
         " weights per pixel)";
}

}  // namespace

const Result& exportedWeights(const Scene& scene, const Result& result, const ExportRequest& request,
                              Result& weighted) {
  if (!request.value_norms || (request.what != ExportWhat::Head && request.what != ExportWhat::Heads)) return result;
  const Matrix& norms = *request.value_norms;  // (heads, n_k)
  const int h = scene.numHeads();
  if (norms.rows() != h || norms.cols() != scene.nK())
    throw InputError("value_norms", shapeString(h, scene.nK()) + " (heads, keys)",
                     shapeString(norms.rows(), norms.cols()));
  weighted.heads.resize(static_cast<std::size_t>(h));
  for (int i = 0; i < h; ++i) {
    const HeadResult& hr = result.heads[static_cast<std::size_t>(i)];
    if (!hr.hasMap())
      throw InputError("value_norms", "the heads' maps kept (a scene short enough to keep them)",
                       "maps read through tiles");
    weighted.heads[static_cast<std::size_t>(i)].weights = hr.weights.array().rowwise() * norms.row(i).array();
  }
  return weighted;
}

const Result& baselineOf(const ExportRequest& request) {
  if (!request.baseline) throw InputError("baseline", "snapshot A to compare the result with", "none");
  return *request.baseline;
}

void checkHeadIndex(const Scene& scene, int head) {
  const int h = scene.numHeads();
  if (head < 0 || head >= h)
    throw InputError("head", "an index 0 to " + std::to_string(h - 1) + " (head 1 to " + std::to_string(h) + ")",
                     std::to_string(head));
}

namespace {

// Viridis over 0..1, ticked every 0.2: weights, and the cosine of non-negative maps.
void setUnitScale(Figure& f) {
  f.map = ColorMap::Viridis;
  f.vmin = 0;
  f.vmax = 1;
  f.ticks = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
}

}  // namespace

void setWeightScale(Figure& f) {
  f.row_axis = "Query";
  f.col_axis = "Key";
  setUnitScale(f);
}

namespace {

// "%.3g": a top that is no round number (0.429), and the log scale's decades of it.
std::string significant(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(v));
  return buf;
}

// The largest unmasked value of panel `p`'s row `row` (every row when row < 0); 0 when none is above 0.
float largestUnmasked(const HeatmapPanel& p, int row) {
  const bool has_mask = p.masked.size() > 0;
  float top = 0;
  const Eigen::Index r0 = row < 0 ? 0 : row, r1 = row < 0 ? p.values.rows() : row + 1;
  for (Eigen::Index i = r0; i < r1; ++i)
    for (Eigen::Index j = 0; j < p.values.cols(); ++j)
      if (!(has_mask && p.masked(i, j)) && p.values(i, j) > top) top = p.values(i, j);  // NaN never wins
  return top;
}

}  // namespace

void setContrast(Figure& f, const MapContrast& contrast, const std::string& label, const std::string& map_word,
                 const std::string& quantity, float fixed_top) {
  f.contrast = contrast;
  f.scale_label = label;
  f.vmin = 0;
  f.vmax = contrast.scale == ColorScale::Fixed ? fixed_top : 1;
  f.tick_labels.clear();
  if (contrast.scale == ColorScale::Shared) {
    float top = 0;
    for (const HeatmapPanel& p : f.panels) top = std::max(top, largestUnmasked(p, -1));
    if (top > 0) f.vmax = top;
  }
  if (contrast.scale == ColorScale::PerHead) f.scale_label = quantity + " / " + map_word + "'s max";
  if (contrast.scale == ColorScale::RowMax) f.scale_label = quantity + " / row's max";
  const float top = f.vmax;
  if (contrast.log) {
    // Three decades under the top, a third of the bar each.
    f.ticks = {top / 1000, top / 100, top / 10, top};
    if (top == 1.0f)
      f.tick_labels = {"0.001", "0.01", "0.1", "1"};
    else
      for (float t : f.ticks) f.tick_labels.push_back(significant(t));
    f.scale_label += ", log scale";
  } else if (top != 1.0f) {  // Shared, or Fixed on another top
    // 0 and round steps (1, 2 or 5 x 10^k, three to five of them) up to the top, which is the last tick: a step
    // closer than 15% of the bar to it is left out, so that their labels never meet.
    const double raw = top / 4.0, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double step = 10 * magnitude;
    for (double m : {1.0, 2.0, 5.0})
      if (m * magnitude >= raw) {
        step = m * magnitude;
        break;
      }
    const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step))));
    f.ticks.clear();
    for (int k = 0; k * step <= 0.85 * top; ++k) {
      f.ticks.push_back(static_cast<float>(k * step));
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.*f", decimals, k * step);
      f.tick_labels.push_back(buf);
    }
    f.ticks.push_back(top);
    f.tick_labels.push_back(significant(top));
  } else {
    f.ticks = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
  }
}

std::vector<float> contrastTops(const Figure& f, int panel) {
  const HeatmapPanel& p = f.panels[static_cast<std::size_t>(panel)];
  const auto rows = static_cast<int>(p.values.rows());
  switch (f.contrast.scale) {
    case ColorScale::PerHead:
      return std::vector<float>(static_cast<std::size_t>(rows), largestUnmasked(p, -1));
    case ColorScale::RowMax: {
      std::vector<float> tops(static_cast<std::size_t>(rows));
      for (int i = 0; i < rows; ++i) tops[static_cast<std::size_t>(i)] = largestUnmasked(p, i);
      return tops;
    }
    case ColorScale::Fixed:
    case ColorScale::Shared:
      break;
  }
  return std::vector<float>(static_cast<std::size_t>(rows), f.vmax);
}

Figure makeFigure(const Scene& scene, const Result& result, const ExportRequest& request) {
  checkResult(scene, result);
  Figure f;
  f.annotate = request.annotate;
  f.dpi = request.dpi;
  f.size = request.size;
  const int h = scene.numHeads();
  if (request.what == ExportWhat::Similarity) {
    const bool cosine = request.metric == SimilarityMetric::Cosine;
    const Matrix& m = similarityMatrix(scene, result, request.metric);  // (h, h)
    HeatmapPanel p;
    p.values = m;
    std::vector<int> order(static_cast<std::size_t>(h));
    for (int i = 0; i < h; ++i) order[static_cast<std::size_t>(i)] = i;
    if (request.dendrogram) {
      // Rows and columns in the leaf order of the clustering, so that the dendrogram's leaves meet their rows.
      const Clustering c =
          clusterHeads(result.similarity, cosine ? ClusterMetric::Cosine : ClusterMetric::JensenShannon);
      order = c.order;
      f.dendrogram = c.merges;
      f.dendrogram_order = c.order;
      for (int a = 0; a < h; ++a)
        for (int b = 0; b < h; ++b)
          p.values(a, b) = m(order[static_cast<std::size_t>(a)], order[static_cast<std::size_t>(b)]);
    }
    for (int i : order) p.row_labels.push_back("H" + std::to_string(i + 1));
    p.col_labels = p.row_labels;
    f.panels.push_back(std::move(p));
    f.row_axis = f.col_axis = "Head";
    if (cosine) {
      f.title = "Head similarity (cosine)";
      // Weight maps are non-negative, so their cosine lies in 0..1: a sequential scale uses all of it (the
      // diverging -1..1 map left half its bar unused and every cell the same red).
      f.scale_label = "cosine similarity of weight maps";
      setUnitScale(f);
    } else {
      // Jensen-Shannon divergence in nats is bounded by ln 2; 0 = identical rows.
      f.title = "Head similarity (Jensen-Shannon divergence)";
      f.scale_label = "JS divergence (nats, max ln 2)";
      f.map = ColorMap::Viridis;
      f.vmin = 0;
      f.vmax = static_cast<float>(std::log(2.0));
      f.ticks = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    }
    return f;
  }
  setWeightScale(f);
  f.scale_label = "attention weight";  // the diff's own below; the weights' set again by setContrast
  const ExportWindow window = exportWindow(scene, request);
  if (request.what == ExportWhat::Diff) {
    const MaskMatrix allowed = allowedMask(scene);
    const std::vector<HeadDiff> diffs = diffResults(baselineOf(request), result);
    float largest = 0;
    for (const HeadDiff& d : diffs) largest = std::max(largest, d.max_abs);
    const float m = largest > 0 ? largest : 1.0f;
    f.map = ColorMap::Diverging;
    f.vmin = -m;
    f.vmax = m;
    f.ticks = {-m, -m / 2, 0.0f, m / 2, m};
    f.tick_decimals = m >= 0.1f ? 2 : 4;
    f.scale_label = "change in weight, B \u2212 A";
    for (int i = 0; i < h; ++i) {
      HeatmapPanel p;
      p.title = "Head " + std::to_string(i + 1);
      p.row_labels = scene.query_tokens;
      p.col_labels = scene.keyTokens();
      const HeadDiff& d = diffs[static_cast<std::size_t>(i)];
      p.values = d.delta;
      p.masked = (allowed.array() == 0).cast<std::uint8_t>();
      char largest_text[96];
      std::snprintf(largest_text, sizeof largest_text, ": max |\u0394| %.3g at (%d, %d)", d.max_abs, d.row, d.col);
      p.title += d.max_abs > 0 ? largest_text : ": unchanged";
      f.panels.push_back(std::move(p));
    }
    f.title = "Change in attention weights (B \u2212 A)";
    return f;
  }
  // Value-norm weighting: the weighted maps, said in the title and on the bar, which runs to the largest norm.
  Result weighted_result;
  const Result& maps = exportedWeights(scene, result, request, weighted_result);
  const bool weighted = &maps != &result;
  const std::string weights = weighted ? "attention weights x value norms" : "attention weights";
  const auto colour = [&] {
    if (!weighted) return setContrast(f, request.contrast);
    const float top = request.value_norms->size() > 0 ? request.value_norms->maxCoeff() : 0.0f;
    setContrast(f, request.contrast, "weight x value norm", "head", "weight x value norm", top > 0 ? top : 1.0f);
  };
  if (request.what == ExportWhat::Head) {
    checkHeadIndex(scene, request.head);
    f.panels.push_back(weightPanel(scene, maps, request.head, window, pooledMapSide(1)));
    f.title = request.subject.empty() ? f.panels.back().title + " " + weights
                                      : request.subject + ", head " + std::to_string(request.head + 1) + ": " +
                                            weights;
    if (!window.whole(scene))
      f.title += ", queries " + std::to_string(window.row0) + "-" + std::to_string(window.row1 - 1) + ", keys " +
                 std::to_string(window.col0) + "-" + std::to_string(window.col1 - 1);
    f.title += pooledNote(f.panels.back());
    f.panels.back().title.clear();
    colour();
    return f;
  }
  for (int i = 0; i < h; ++i) f.panels.push_back(weightPanel(scene, maps, i, window, pooledMapSide(h)));
  f.title = "A" + weights.substr(1);
  f.title += h == 1 ? "" : h == 2 ? ", both heads" : ", all " + std::to_string(h) + " heads";
  if (!request.subject.empty()) {
    f.title[0] = 'a';
    f.title = request.subject + ": " + f.title;  // "GPT-2 layer 6: attention weights, all 12 heads"
  }
  f.title += pooledNote(f.panels.back());
  colour();
  return f;
}

Rgb8 cellColor(const Figure& figure, float value, bool masked, float top) {
  if (masked) return kMaskedColor;
  if (figure.contrast == MapContrast{}) return colorAt(figure.map, colorMapParameter(value, figure.vmin, figure.vmax));
  return colorAt(figure.map, contrastT(figure.contrast, value, top));
}

Rgb8 cellColor(const Figure& figure, float value, bool masked) { return cellColor(figure, value, masked, figure.vmax); }

float colorBarParameter(const Figure& figure, float value) {
  if (figure.contrast.log) return contrastT(figure.contrast, value, figure.vmax);
  return colorMapParameter(value, figure.vmin, figure.vmax);
}

}  // namespace attnscope
