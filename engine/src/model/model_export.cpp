// A model's maps as figures (the layers x heads grid, the rollout) through the scene exporters' layout and
// PNG/SVG renderers, and as JSON or NPY numbers.
#include "attnscope/model/model_export.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "attnscope/arrays/array_file.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/text_bounds.h"
#include "export/export_formats.h"

namespace attnscope::model {

namespace {

// (n, n), 1 = masked: the keys layer `layer`'s queries do not read (HeadLayout::keyAllowed: after the query, and
// before a sliding window). A saved tensor's layout is not causal: nothing masked.
MaskMatrix maskOf(int n, const HeadLayout& layout, int layer) {
  MaskMatrix m(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) m(i, j) = !layout.keyAllowed(layer, i, j);
  return m;
}

// layer: the checkpoint's index (h.0 is layer 1 in every message and title), -1 for every layer.
void checkLayer(const HeadLayout& c, int layer) {
  if (layer >= c.n_layer) throw InputError("--layer", "1 to " + std::to_string(c.n_layer), std::to_string(layer + 1));
}

// Maps not kept: each panel of the grid (layers from `first_layer`, n_head a row) becomes the (h, w) tile of its
// map's pixels, each block the mean of its allowed cells: the rasteriser's own pooling (pooledRange per pixel),
// so the image is the one the whole maps would draw, from h x w numbers a panel rather than n x n. A map with a
// pixel or more a cell is the whole map, at most the panel's pixels.
// Map (l, h) weighted by value norms (weightedMap, recomputed whole: O(n^2 d)) as forward.tile pools the
// weights: each of (rows, cols) blocks the mean of its allowed cells, masked where it covers none.
Tile weightedTile(const ForwardResult& forward, int l, int h, const KeyScales& scales, int rows, int cols) {
  const Matrix m = weightedMap(forward, l, h, &scales);
  const int n = forward.n;
  Tile tile{Matrix::Zero(rows, cols), MaskMatrix::Ones(rows, cols)};
  for (int p = 0; p < rows; ++p) {
    const auto [i0, i1] = pooledRange(p, rows, n);
    for (int q = 0; q < cols; ++q) {
      const auto [j0, j1] = pooledRange(q, cols, n);
      double sum = 0;
      int count = 0;
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < j1; ++j)
          if (forward.layout.keyAllowed(l, i, j)) sum += m(i, j), ++count;
      if (count > 0) tile.values(p, q) = static_cast<float>(sum / count), tile.masked(p, q) = 0;
    }
  }
  return tile;
}

// Where a grid's panels land. The layout reads only the first panel's shape and labels: where the maps are not
// kept, an untouched placeholder of the maps' shape (past an image's largest side, of that side standing for the
// n positions: pooled either way).
FigureLayout placeGrid(Figure& f, int n, bool kept) {
  if (kept) return layoutFigure(f);
  HeatmapPanel& head0 = f.panels.front();
  const int side = std::min(n, kMaxImageSide);
  head0.values.resize(side, side);  // allocated, never written: no memory touched
  if (side < n) head0.row_positions = head0.col_positions = n;
  FigureLayout placed = layoutFigure(f);
  head0.row_positions = head0.col_positions = 0;
  return placed;
}

// Every layer's grid is a layer a row; one so tall that even at kLayoutDpi its PNG would pass kMaxPngSide
// (1000 layers of 4 heads: 465 x 70,070 px) wraps several layers a row instead, about as wide as it is tall.
void wrapTallGrid(Figure& f, const ForwardResult& forward) {
  const FigureLayout one = placeGrid(f, forward.n, forward.keepsMaps());
  if (one.height <= kMaxPngSide) return;
  const int layers = forward.layout.n_layer;
  const int per_row = std::min(layers, static_cast<int>(std::ceil(std::sqrt(double(one.height) / one.width))));
  f.grid_columns = forward.layout.n_head * per_row;
  f.row_titles.clear(), f.column_titles.clear();  // several layers a row: each panel titled "L1 H1" again
}

void poolPanels(const ForwardResult& forward, int first_layer, Figure& f, const KeyScales* scales) {
  const int n = forward.n, heads = forward.layout.n_head;
  const FigureLayout placed = placeGrid(f, n, false);
  for (std::size_t i = 0; i < f.panels.size(); ++i) {
    HeatmapPanel& p = f.panels[i];
    const int l = first_layer + static_cast<int>(i) / heads, h = static_cast<int>(i) % heads;
    const PixelRect& rect = placed.maps[i];
    TileRequest request{.head = h};
    if (rect.w < n || rect.h < n) {
      request.pooling = Pooling::Mean;
      request.out_rows = rect.h;
      request.out_cols = rect.w;
      p.row_positions = p.col_positions = n;
    }
    Tile tile = !scales ? forward.tile(l, request)
                : weightedTile(forward, l, h, *scales, request.out_rows > 0 ? request.out_rows : n,
                               request.out_cols > 0 ? request.out_cols : n);
    p.values = std::move(tile.values);
    p.masked = std::move(tile.masked);
  }
}

}  // namespace

Figure modelGridFigure(const ForwardResult& forward, const HeadLayout& c, const std::vector<std::string>& tokens,
                       int layer, const MapContrast& contrast, const std::string& name, const KeyScales* scales,
                       const FigureSize& size) {
  checkLayer(c, layer);
  Figure f;
  setWeightScale(f);
  f.size = size;  // before the placement the pooling reads
  // A layer a row, named once at the left ("L1") and each head once on top ("H1"): wrapTallGrid wraps a tall
  // grid, its panels then titled; one layer's heads about square, each titled.
  f.grid_columns = layer < 0 ? c.n_head : 0;
  if (layer < 0) {
    for (int l = 0; l < c.n_layer; ++l) f.row_titles.push_back("L" + std::to_string(l + 1));
    for (int h = 0; h < c.n_head; ++h) f.column_titles.push_back("H" + std::to_string(h + 1));
  }
  const int first = layer < 0 ? 0 : layer, last = layer < 0 ? c.n_layer : layer + 1;
  for (int l = first; l < last; ++l) {
    const MaskMatrix masked = forward.keepsMaps() ? maskOf(forward.n, c, l) : MaskMatrix();  // window's cells too
    for (int h = 0; h < c.n_head; ++h) {
      HeatmapPanel p;
      // counted from 1, as the window does
      p.title = layer < 0 ? "L" + std::to_string(l + 1) + " H" + std::to_string(h + 1) : "Head " + std::to_string(h + 1);
      if (forward.keepsMaps()) {
        p.values = scales ? weightedMap(forward, l, h, scales) : forward.keptMap(l * c.n_head + h);
        p.masked = masked;
      }
      p.row_labels = p.col_labels = tokens;
      f.panels.push_back(std::move(p));
    }
  }
  // The colour bar's labels before the pooling's placement (its width counts in the image's), and its shared
  // top again once the pooled values are in.
  // Value-norm weighting: the bar says so and runs to the largest norm of the layers drawn (a weight of 1 there).
  float top = 0;
  if (scales)
    for (int l = first; l < last; ++l) {
      const Matrix& norms = (*scales)[static_cast<std::size_t>(l)];
      if (norms.size() > 0) top = std::max(top, norms.maxCoeff());
    }
  const auto colour = [&] {
    if (!scales) return setContrast(f, contrast);
    setContrast(f, contrast, "weight x value norm", "head", "weight x value norm", top > 0 ? top : 1.0f);
  };
  colour();
  if (layer < 0) wrapTallGrid(f, forward);
  if (!forward.keepsMaps()) {
    poolPanels(forward, first, f, scales);
    colour();
  }
  const std::string heads = std::to_string(c.n_head) + (c.n_head == 1 ? " head" : " heads");
  const std::string weights = scales ? "attention weights x value norms" : "attention weights";
  const std::string Weights = "A" + weights.substr(1);
  if (name.empty())
    f.title = layer < 0 ? Weights + ", " + std::to_string(c.n_layer) + " layers x " + heads
                        : Weights + ", layer " + std::to_string(layer + 1);
  else
    f.title = layer < 0 ? name + ": " + weights + ", " + std::to_string(c.n_layer) + " layers x " + heads
                        : name + " layer " + std::to_string(layer + 1) + ": " + weights + ", " + heads;
  return f;
}

Figure rolloutFigure(const Matrix& rollout, const std::vector<std::string>& tokens, bool causal,
                     const MapContrast& contrast, const std::string& name) {
  Figure f;
  setWeightScale(f);
  f.title = name.empty() ? "Attention rollout" : name + " attention rollout";
  HeatmapPanel p;
  p.values = rollout;
  HeadLayout full;  // no window: a product of windowed maps reaches back further than one window
  full.causal = causal;
  p.masked = maskOf(static_cast<int>(rollout.rows()), full, 0);
  p.row_labels = p.col_labels = tokens;
  f.panels.push_back(std::move(p));
  setContrast(f, contrast, "rollout weight", "map");
  return f;
}

Figure layerHeadFigure(const LayerHeadValues& values) {
  Figure f;
  f.title = values.title;
  f.row_axis = "Layer";
  f.col_axis = "Head";
  f.scale_label = values.scale_label;
  f.map = values.map;
  f.vmin = values.vmin, f.vmax = values.vmax;
  f.ticks = {values.vmin, 0.5f * (values.vmin + values.vmax), values.vmax};
  f.tick_decimals = 3;
  if (values.bar_labels.size() == 3) f.tick_labels = values.bar_labels;
  HeatmapPanel p;
  p.values = values.shown;
  const Eigen::Index layers = values.numbers.rows(), heads = values.numbers.cols();
  p.masked = MaskMatrix::Zero(layers, heads);
  for (Eigen::Index l = 0; l < layers; ++l)
    for (Eigen::Index h = 0; h < heads; ++h) p.masked(l, h) = std::isnan(values.numbers(l, h)) ? 1 : 0;
  for (Eigen::Index l = 0; l < layers; ++l) p.row_labels.push_back("L" + std::to_string(l + 1));
  for (Eigen::Index h = 0; h < heads; ++h) p.col_labels.push_back("H" + std::to_string(h + 1));
  f.panels.push_back(std::move(p));
  return f;
}

std::string layerHeadCsv(const LayerHeadValues& values) {
  std::string csv = "layer,head," + values.number_name + "\n";
  for (Eigen::Index l = 0; l < values.numbers.rows(); ++l)
    for (Eigen::Index h = 0; h < values.numbers.cols(); ++h) {
      const float v = values.numbers(l, h);
      csv += std::to_string(l + 1) + "," + std::to_string(h + 1) + ",";
      if (!std::isnan(v)) {  // the shortest text that reads back as the same float32, as the CSV exports write
        char buf[32];
        csv.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
      }
      csv += "\n";
    }
  return csv;
}

std::string layerHeadNpy(const LayerHeadValues& values) {
  const Eigen::Index layers = values.numbers.rows(), heads = values.numbers.cols();
  std::vector<float> data;
  for (Eigen::Index l = 0; l < layers; ++l)
    for (Eigen::Index h = 0; h < heads; ++h) data.push_back(values.numbers(l, h));
  return arrays::npyBytes({layers, heads}, data);
}

ExportFormat figureFormat(const std::string& field, const std::string& path) {
  const std::size_t dot = path.find_last_of('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (ext == "png") return ExportFormat::Png;
  if (ext == "svg") return ExportFormat::Svg;
  throw InputError(field, "a path ending in .png or .svg", quoteFragment(path, 200));
}

std::size_t gridFigureBytes(std::int64_t panels, std::int64_t n, std::size_t token_bytes) {
  const double per_panel = 5.0 * static_cast<double>(n) * static_cast<double>(n)  // float values, 1-byte mask
                           + 2 * (32.0 * static_cast<double>(n) + static_cast<double>(token_bytes)) + 256;
  const double bytes = static_cast<double>(panels) * per_panel;
  return bytes >= 0x1p62 ? std::size_t{1} << 62 : static_cast<std::size_t>(bytes);
}

std::size_t figureImageBytes(const Figure& figure) {
  if (figure.panels.empty()) return 0;
  const FigureLayout layout = pngLayout(figure);  // the PNG's pixels; the SVG's are no more
  return 6 * static_cast<std::size_t>(layout.width) * static_cast<std::size_t>(layout.height) +
         layout.texts.size() * 256;
}

std::string figureBytes(const Figure& figure, ExportFormat format) {
  if (format != ExportFormat::Png && format != ExportFormat::Svg)
    throw InputError("format", "png or svg for a figure", format == ExportFormat::Csv ? "csv" : "npy");
  return format == ExportFormat::Png ? pngBytes(figure, pngLayout(figure)) : svgBytes(figure, layoutFigure(figure));
}

Matrix weightedMap(const ForwardResult& forward, int layer, int head, const KeyScales* scales) {
  Matrix m = forward.map(layer, head);
  if (scales) m.array().rowwise() *= (*scales)[static_cast<std::size_t>(layer)].row(head).array();
  return m;
}

nlohmann::ordered_json modelResultJson(const Model& model, const std::string& text, const std::vector<int>& ids,
                                       const ForwardResult& forward, const Matrix& rollout, int layer,
                                       JsonMatrices* streamed, const KeyScales* scales) {
  const HeadLayout c = model.layout();
  checkLayer(c, layer);
  nlohmann::ordered_json j;
  j["format"] = "attnscope-model-result";
  j["version"] = 1;
  j["checkpoint"] = model.dir;
  j["model_type"] = model.model_type;
  j["text"] = text;
  j["token_ids"] = ids;
  nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
  for (int id : ids) tokens.push_back(model.tokenizer.label(id));
  j["tokens"] = tokens;
  j["n_layer"] = c.n_layer;
  j["n_head"] = c.n_head;
  j["n_kv_head"] = c.n_kv_head;
  j["weighting"] = scales ? "value-norm" : "weight";
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (int l = layer < 0 ? 0 : layer; l < (layer < 0 ? c.n_layer : layer + 1); ++l) {
    nlohmann::ordered_json heads = nlohmann::ordered_json::array(), kv_heads = nlohmann::ordered_json::array();
    for (int h = 0; h < c.n_head; ++h) {
      const int n = forward.n;  // streamed: a kept map in place, or recomputed as the text reaches it
      if (!streamed) heads.push_back(matrixToJson(weightedMap(forward, l, h, scales)));
      else if (forward.keepsMaps() && !scales) heads.push_back(streamed->add(forward.keptMap(l * c.n_head + h)));
      else heads.push_back(streamed->addMade(n, n, [&forward, l, h, scales] { return weightedMap(forward, l, h, scales); }));
      kv_heads.push_back(c.kvHead(h) + 1);  // counted from 1, as layers and heads are named
    }
    // counted from 1; heads[0] is head 1, which reads key/value head kv_head[0]
    layers.push_back({{"layer", l + 1}, {"kv_head", kv_heads}, {"heads", heads}});
  }
  j["layers"] = layers;
  j["rollout"] = streamed ? streamed->add(rollout) : matrixToJson(rollout);
  return j;
}

std::string modelResultNpy(const ForwardResult& forward, const HeadLayout& c, int layer, const KeyScales* scales) {
  std::string out;
  writeModelResultNpy(forward, c, layer, [&](std::string_view bytes) { out.append(bytes); }, scales);
  return out;
}

void writeModelResultNpy(const ForwardResult& forward, const HeadLayout& c, int layer,
                         const std::function<void(std::string_view)>& sink, const KeyScales* scales) {
  checkLayer(c, layer);
  const long n = forward.n;
  const int first = layer < 0 ? 0 : layer, count = layer < 0 ? c.n_layer : 1;
  std::vector<long> shape = {c.n_head, n, n};
  if (layer < 0) shape.insert(shape.begin(), c.n_layer);
  sink(npyHeader(shape));
  for (int l = first; l < first + count; ++l)
    for (int h = 0; h < c.n_head; ++h) {
      const Matrix m = weightedMap(forward, l, h, scales);  // (n, n) row-major: C order, little-endian as the header says
      sink(std::string_view(reinterpret_cast<const char*>(m.data()), static_cast<std::size_t>(m.size()) * sizeof(float)));
    }
}

std::size_t modelResultBytes(const HeadLayout& c, int n, int layer, bool npy, std::size_t text_bytes) {
  const std::size_t maps = static_cast<std::size_t>(layer < 0 ? c.n_layer : 1) * static_cast<std::size_t>(c.n_head) *
                           static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  if (npy) return 4 * maps + 256;
  const std::size_t rollout = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  // The text and the token labels, each byte at most 6 in JSON ("\u0001"), and the ids.
  return (maps + rollout + static_cast<std::size_t>(n)) * kJsonBytesPerNumber + 12 * text_bytes + 4096;
}

}  // namespace attnscope::model
