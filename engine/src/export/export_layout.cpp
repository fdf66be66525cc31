// Where each part of an exported figure lands: title, panels (a grid for all heads), token labels, value
// annotations, axis titles and the colour bar, in pixels. The PNG and SVG exporters draw this one layout.
#include "attnscope/export/export_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attnscope/error.h"
#include "attnscope/text_bounds.h"
#include "export/export_text.h"

namespace attnscope {

namespace {

constexpr int kMargin = 16;
constexpr float kTitleSize = 18, kHeadingSize = 14, kAxisSize = 14, kTickSize = 13, kIndexSize = 12;
constexpr int kMaxCell = 48;         // cells never grow past this, except for tiny maps:
constexpr int kMinMapSide = 256;     // a map is at least this many pixels when the budget allows
constexpr int kSingleBudget = 1024;  // largest side of a lone map, pixels, growing to 2048 for long sequences
constexpr int kMinLabelCell = 10;    // smaller cells get every k-th token (k cells >= 10 px), down to:
constexpr int kMinThinnedCell = 3;   // smaller cells get position numbers instead of token labels
constexpr double kMaxLabelWidth = 160;
constexpr int kDendrogramWidth = 120;  // pixels from the leaves to the root's height
constexpr int kColorbarWidth = 18, kColorbarGap = 24, kPanelGapX = 28, kPanelGapY = 20, kLabelGap = 6;
constexpr Rgb8 kText{38, 38, 38}, kLightText{255, 255, 255}, kFrame{80, 80, 80};

// The height of a digit above the baseline, as a fraction of the em: centring a label on y puts its
// baseline at y + kDigitHalf * size. (DejaVu Sans digits are 0.729 em tall.)
constexpr double kDigitHalf = 0.3645;

// Negative numbers with a true minus sign (U+2212), never "-0.00".
std::string formatNumber(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(v));
  const double shown = std::atof(buf);
  return (v < 0 && shown != 0 ? "\u2212" : "") + std::string(buf);
}

// Control characters made visible; long labels cut with an ellipsis to kMaxLabelWidth. Measured by bisection
// over at most kMaxLabelChars characters (elideToWidth), so that a 30,000-character token costs what a short one
// does: the figure shows 160 pixels of it whatever its length.
constexpr std::size_t kMaxLabelChars = 64;  // 160 px at the smallest label size holds fewer than this
std::string displayLabel(const std::string& token, const Font& font, float size, double max_width) {
  const std::string s = visibleText(elideLabel(token, kMaxLabelChars + 1));  // the rest could never be shown
  return elideToWidth(s, max_width, [&](const std::string& t) { return font.textWidth(t, size); }, kMaxLabelChars);
}

// The dendrogram of a clustered similarity matrix as axis-aligned lines in `band` (x: the root's height at the
// left edge, height 0 at the right edge; y: leaf k at the middle of row k of a map with rows of cell_h pixels
// from map_y). Each merge is a vertical line joining its two children's heights and a horizontal line from each
// child to the merge's height, as SciPy's dendrogram(orientation='left') draws it.
void addDendrogram(const Figure& fig, int band_x, int band_w, double map_y, double cell_h, FigureLayout& L) {
  const int h = static_cast<int>(fig.dendrogram_order.size());
  double top = 0;
  for (const ClusterMerge& m : fig.dendrogram) top = std::max(top, m.height);
  if (top <= 0) top = 1;
  std::vector<double> node_y(static_cast<std::size_t>(2 * h), 0), node_x(static_cast<std::size_t>(2 * h), 0);
  for (int k = 0; k < h; ++k) {
    node_y[static_cast<std::size_t>(fig.dendrogram_order[static_cast<std::size_t>(k)])] = map_y + (k + 0.5) * cell_h;
    node_x[static_cast<std::size_t>(fig.dendrogram_order[static_cast<std::size_t>(k)])] = band_x + band_w - 1;
  }
  const Rgb8 line{60, 60, 60};
  for (std::size_t k = 0; k < fig.dendrogram.size(); ++k) {
    const ClusterMerge& m = fig.dendrogram[k];
    const std::size_t id = static_cast<std::size_t>(h) + k, a = static_cast<std::size_t>(m.a),
                      b = static_cast<std::size_t>(m.b);
    const int x = band_x + static_cast<int>(std::lround((1.0 - m.height / top) * (band_w - 1)));
    const int ya = static_cast<int>(std::lround(node_y[a])), yb = static_cast<int>(std::lround(node_y[b]));
    L.lines.push_back({x, std::min(ya, yb), x, std::max(ya, yb), line});
    // A merge is never higher than its parent (UPGMA's heights do not decrease), so x <= the children's x.
    L.lines.push_back(
        {std::min(x, static_cast<int>(node_x[a])), ya, std::max(x, static_cast<int>(node_x[a])), ya, line});
    L.lines.push_back(
        {std::min(x, static_cast<int>(node_x[b])), yb, std::max(x, static_cast<int>(node_x[b])), yb, line});
    node_x[id] = x;
    node_y[id] = (node_y[a] + node_y[b]) / 2;
  }
}

// A readable step between numbered positions: 1, 2, 5 x 10^k with about `target` pixels between labels.
int positionStep(int n, double cell, double target) {
  for (int step : {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000}) {
    if (step * cell >= target || step >= n) return step;
  }
  return 100000;
}

// The sizes of a figure's text, and the cell sizes that hold its labels: the defaults times figure.size's font
// (font_pt over kTickSize's 9.75 pt).
struct Type {
  double scale = 1;
  float title = kTitleSize, heading = kHeadingSize, axis = kAxisSize, tick = kTickSize, index = kIndexSize;
  double min_label_cell = kMinLabelCell, max_label_width = kMaxLabelWidth;
  int margin = kMargin, label_gap = kLabelGap;
};
Type typeOf(const Figure& fig) {
  Type t;
  if (fig.size.font_pt <= 0) return t;
  t.scale = fig.size.font_pt * 96.0 / 72.0 / kTickSize;
  const auto scaled = [&](float v) { return static_cast<float>(v * t.scale); };
  t.title = scaled(kTitleSize), t.heading = scaled(kHeadingSize), t.axis = scaled(kAxisSize);
  t.tick = scaled(kTickSize), t.index = scaled(kIndexSize);
  t.min_label_cell = kMinLabelCell * t.scale, t.max_label_width = kMaxLabelWidth * t.scale;
  t.margin = static_cast<int>(std::lround(kMargin * t.scale));
  t.label_gap = static_cast<int>(std::lround(kLabelGap * t.scale));
  return t;
}

struct AxisLabels {
  std::vector<std::pair<int, std::string>> ticks;  // (row or column index, text)
  float size = kTickSize;
  double max_width = 0;
};

// Which tokens label an axis of `cell`-pixel cells: every one from min_label_cell px, else every k-th, k the
// fewest cells that make min_label_cell px (cells of kMinThinnedCell px or more); 0 = none: positions numbered.
int tokenStep(double cell, const Type& type) {
  if (cell >= type.min_label_cell) return 1;
  if (cell < kMinThinnedCell) return 0;
  return static_cast<int>(std::ceil(type.min_label_cell / cell - 1e-9));
}

// n positions of `cell` pixels each, the first numbered `first`; tokens[i] for every token_step-th position
// first + i when token_step > 0, else numbers about `spacing_target` pixels apart.
AxisLabels axisLabels(const std::vector<std::string>& tokens, int n, double cell, int token_step, const Font& font,
                      double spacing_target, int first, const Type& type) {
  AxisLabels a;
  if (token_step > 0) {
    a.size = std::min(type.tick, static_cast<float>(std::floor(cell * token_step)) - 2);
    for (int i = 0; i < n; i += token_step)
      a.ticks.emplace_back(i, displayLabel(tokens[static_cast<std::size_t>(i)], font, a.size, type.max_label_width));
  } else {
    a.size = type.index;
    const int step = positionStep(n, cell, spacing_target);
    for (int i = (step - first % step) % step; i < n; i += step) a.ticks.emplace_back(i, std::to_string(first + i));
  }
  for (const auto& t : a.ticks) a.max_width = std::max(a.max_width, font.textWidth(t.second, a.size));
  return a;
}

struct Sizes {
  int map_w = 0, map_h = 0;
  double cell_w = 0, cell_h = 0;
};

// `capped`: cells of at most kMaxCell px (more for tiny maps); a figure of a given size lets them grow to fill it.
Sizes mapSizes(int rows, int cols, int budget, bool capped) {
  Sizes s;
  const int n = std::max(rows, cols);
  const int cell = capped ? std::min(budget / n, std::max(kMaxCell, kMinMapSide / n)) : budget / n;
  if (cell >= 1) {
    s.map_w = cell * cols;
    s.map_h = cell * rows;
  } else {
    const double scale = static_cast<double>(budget) / n;
    s.map_w = std::max(1, static_cast<int>(std::lround(cols * scale)));
    s.map_h = std::max(1, static_cast<int>(std::lround(rows * scale)));
  }
  s.cell_w = static_cast<double>(s.map_w) / cols;
  s.cell_h = static_cast<double>(s.map_h) / rows;
  return s;
}

// Columns of a grid of `panels` panels: the figure's own (a model's heads per layer), else about a square.
int gridColumns(int panels, int grid_columns) {
  if (grid_columns > 0) return std::min(grid_columns, panels);
  return panels == 1 ? 1 : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(panels))));
}
int gridColumns(const Figure& fig) { return gridColumns(static_cast<int>(fig.panels.size()), fig.grid_columns); }

// The pixel budget of each map's longer side (n cells a side) before the image is shrunk to kMaxImageSide.
int mapBudget(int grid_cols, int n) {
  return grid_cols == 1 ? std::clamp(n, kSingleBudget, 2 * kSingleBudget) : std::max(96, 2560 / grid_cols);
}

// A grid's panels share their axes, as matplotlib's sharex and sharey: every panel has the same shape and tokens,
// so the query labels are drawn left of the first column only and the key labels under each column's lowest
// panel, and the panels stand closer (kSharedGap apart, more where a panel's title needs it).
constexpr int kSharedGap = 10;

FigureLayout layoutWithBudget(const Figure& fig, const Font& font, int budget, bool capped) {
  FigureLayout L;
  const Type type = typeOf(fig);
  const int panels = static_cast<int>(fig.panels.size());
  const int rows = static_cast<int>(fig.panels[0].values.rows()), cols = static_cast<int>(fig.panels[0].values.cols());
  const int grid_cols = gridColumns(fig);
  const int grid_rows = (panels + grid_cols - 1) / grid_cols;
  const bool shared = panels > 1;
  const Sizes s = mapSizes(rows, cols, budget, capped);
  const double cell = std::min(s.cell_w, s.cell_h);
  // A pooled panel's rows and columns stand for more positions than they are: positions are numbered then.
  const HeatmapPanel& first = fig.panels[0];
  const int row_n = first.row_positions > 0 ? first.row_positions : rows;
  const int col_n = first.col_positions > 0 ? first.col_positions : cols;
  const double row_cell = static_cast<double>(s.map_h) / row_n, col_cell = static_cast<double>(s.map_w) / col_n;
  const int token_step = row_n == rows && col_n == cols ? tokenStep(cell, type) : 0;
  L.labels_shown = token_step > 0;

  // Labels: rows (queries) down the left, columns (keys) along the bottom, turned upright when too wide.
  // Numbered positions about 80 px apart, closer on a small map (a grid's) so that it has three or four.
  const double row_target = std::clamp(s.map_h / 4.0, 30.0, 80.0) * type.scale;
  const double col_target = std::clamp(s.map_w / 4.0, 30.0, 90.0) * type.scale;
  const AxisLabels row_labels =
      axisLabels(first.row_labels, row_n, row_cell, token_step, font, row_target, first.row_first, type);
  const AxisLabels col_labels =
      axisLabels(first.col_labels, col_n, col_cell, token_step, font, col_target, first.col_first, type);
  const double col_spacing =
      col_cell * (col_labels.ticks.size() > 1 ? col_labels.ticks[1].first - col_labels.ticks[0].first : 1);
  const bool col_upright = col_labels.max_width > col_spacing - 4;
  const double col_label_h =
      col_upright ? col_labels.max_width : font.ascent(col_labels.size) + font.descent(col_labels.size);

  // Annotations: the largest size up to 13 px whose widest value fits in a cell with 2 px to spare each side.
  float annot_size = 0;
  if (fig.annotate) {
    double widest = 0;
    for (const HeatmapPanel& p : fig.panels)
      widest = std::max({widest, font.textWidth(formatNumber(p.values.maxCoeff(), 2), 1.0f),
                         font.textWidth(formatNumber(p.values.minCoeff(), 2), 1.0f)});
    for (float size = std::min(static_cast<float>(13 * type.scale), static_cast<float>(cell * 0.45));
         size >= 7.0f; size -= 0.5f) {
      if (widest * size + 4 <= cell) {
        annot_size = size;
        break;
      }
    }
  }
  L.annotations_shown = annot_size > 0;

  // Titles: above each panel, or (row_titles, column_titles) once a row at the left and once a column on top.
  const bool named_grid = !fig.row_titles.empty() || !fig.column_titles.empty();
  const double heading_line = std::ceil(font.ascent(type.heading) + font.descent(type.heading)) + 4;
  const double heading_h = panels > 1 && !named_grid ? heading_line : 0;
  const double top_band = fig.column_titles.empty() ? 0 : heading_line;
  double row_title_w = 0, widest_title = 0;
  for (const std::string& t : fig.row_titles) row_title_w = std::max(row_title_w, font.textWidth(t, type.heading));
  if (row_title_w > 0) row_title_w = std::ceil(row_title_w) + 2 * type.label_gap;
  for (const HeatmapPanel& p : fig.panels)
    if (!named_grid) widest_title = std::max(widest_title, font.textWidth(p.title, type.heading));
  for (const std::string& t : fig.column_titles) widest_title = std::max(widest_title, font.textWidth(t, type.heading));
  const int row_label_w = static_cast<int>(std::ceil(row_labels.max_width)) + type.label_gap;
  const int label_h = static_cast<int>(4 + std::ceil(col_label_h));
  // Between panels: a grid's shared axes leave kSharedGap (and a title's overhang); unshared, each panel's own
  // labels sit between them.
  const int gap_x = shared ? std::max(static_cast<int>(std::lround(kSharedGap * type.scale)),
                                      static_cast<int>(std::ceil(widest_title - s.map_w)) + 8)
                           : kPanelGapX;
  const int gap_y = shared ? static_cast<int>(std::lround(kSharedGap * type.scale)) : kPanelGapY;
  const int pitch_x = s.map_w + gap_x;                                      // one panel to the next, across
  const int pitch_y = static_cast<int>(heading_h) + s.map_h + gap_y;       // and down
  const int axis_h = static_cast<int>(std::ceil(font.ascent(type.axis) + font.descent(type.axis)));
  const int title_h = static_cast<int>(std::ceil(font.ascent(type.title) + font.descent(type.title)));
  const int dendrogram_w = fig.dendrogram.empty() ? 0 : kDendrogramWidth + type.label_gap;
  const int grid_x = type.margin + axis_h + 8 + dendrogram_w + static_cast<int>(row_title_w);
  const int grid_y = type.margin + title_h + 12 + static_cast<int>(top_band);
  const int maps_x = grid_x + row_label_w;  // the first column's maps
  const int grid_w = row_label_w + grid_cols * s.map_w + (grid_cols - 1) * gap_x;
  const int grid_h = grid_rows * pitch_y - gap_y + label_h;

  for (int p = 0; p < panels; ++p) {
    const int c = p % grid_cols, r = p / grid_cols;
    const PixelRect map{maps_x + c * pitch_x, grid_y + r * pitch_y + static_cast<int>(heading_h), s.map_w, s.map_h};
    L.maps.push_back(map);
    const HeatmapPanel& panel = fig.panels[static_cast<std::size_t>(p)];
    if (!named_grid && !panel.title.empty())
      L.texts.push_back({panel.title, type.heading, map.x + map.w / 2.0, map.y - heading_h + font.ascent(type.heading),
                         TextAnchor::Middle, false, kText});
    if (!shared || c == 0)
      for (const auto& [i, text] : row_labels.ticks)
        L.texts.push_back({text, row_labels.size, static_cast<double>(map.x - type.label_gap),
                           map.y + (i + 0.5) * row_cell + kDigitHalf * row_labels.size, TextAnchor::End, false, kText});
    if (!shared || p + grid_cols >= panels)
      for (const auto& [j, text] : col_labels.ticks) {
        const double cx = map.x + (j + 0.5) * col_cell;
        if (col_upright)
          L.texts.push_back({text, col_labels.size, cx + kDigitHalf * col_labels.size, map.y + map.h + 4.0,
                             TextAnchor::End, true, kText});
        else
          L.texts.push_back({text, col_labels.size, cx, map.y + map.h + 4 + font.ascent(col_labels.size),
                             TextAnchor::Middle, false, kText});
      }
    if (!L.annotations_shown) continue;
    const std::vector<float> tops = contrastTops(fig, p);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < cols; ++j) {
        const bool masked = panel.masked.size() > 0 && panel.masked(i, j);
        if (masked) continue;  // as seaborn: masked cells carry no number
        const float v = panel.values(i, j);
        const Rgb8 under = cellColor(fig, v, false, tops[static_cast<std::size_t>(i)]);
        L.texts.push_back({formatNumber(v, 2), annot_size, map.x + (j + 0.5) * s.cell_w,
                           map.y + (i + 0.5) * s.cell_h + kDigitHalf * annot_size, TextAnchor::Middle, false,
                           relativeLuminance(under) > 0.408 ? kText : kLightText});
      }
    }
  }
  // A named grid's titles: each row's at its left (right-aligned before the query labels), each column's on top.
  for (std::size_t r = 0; r < fig.row_titles.size() && static_cast<int>(r) < grid_rows; ++r)
    L.texts.push_back({fig.row_titles[r], type.heading, grid_x - static_cast<double>(type.label_gap),
                       grid_y + r * pitch_y + s.map_h / 2.0 + kDigitHalf * type.heading, TextAnchor::End, false,
                       kText});
  for (std::size_t c = 0; c < fig.column_titles.size() && static_cast<int>(c) < grid_cols; ++c)
    L.texts.push_back({fig.column_titles[c], type.heading, maps_x + c * pitch_x + s.map_w / 2.0,
                       grid_y - top_band + font.ascent(type.heading), TextAnchor::Middle, false, kText});

  if (!fig.dendrogram.empty()) addDendrogram(fig, grid_x - dendrogram_w, kDendrogramWidth, L.maps[0].y, s.cell_h, L);

  // Axis titles: the row axis upright at the far left, the column axis under the grid.
  const double maps_top = grid_y + heading_h;
  const double maps_bottom = grid_y + (grid_rows - 1) * pitch_y + heading_h + s.map_h;
  const std::string row_axis = L.labels_shown ? fig.row_axis : fig.row_axis + " position";
  const std::string col_axis = L.labels_shown ? fig.col_axis : fig.col_axis + " position";
  L.texts.push_back({row_axis, type.axis, type.margin + font.ascent(type.axis), (maps_top + maps_bottom) / 2,
                     TextAnchor::Middle, true, kText});
  const double grid_map_cx = maps_x + (grid_w - row_label_w) / 2.0;
  const double col_axis_y = grid_y + grid_h + 8 + font.ascent(type.axis);
  L.texts.push_back({col_axis, type.axis, grid_map_cx, col_axis_y, TextAnchor::Middle, false, kText});

  // Colour bar: beside the maps, from the top of the first row of maps to the bottom of the last.
  L.colorbar = {grid_x + grid_w + static_cast<int>(std::lround(kColorbarGap * type.scale)), static_cast<int>(maps_top),
                static_cast<int>(std::lround(kColorbarWidth * type.scale)), static_cast<int>(maps_bottom - maps_top)};
  const PixelRect& bar = L.colorbar;
  double tick_w = 0;
  for (std::size_t k = 0; k < fig.ticks.size(); ++k) {
    const float t = fig.ticks[k];
    const int y = bar.y + static_cast<int>(std::lround((1.0 - colorBarParameter(fig, t)) * (bar.h - 1)));
    L.lines.push_back({bar.x + bar.w, y, bar.x + bar.w + 3, y, kFrame});
    const std::string text = k < fig.tick_labels.size() ? fig.tick_labels[k] : formatNumber(t, fig.tick_decimals);
    tick_w = std::max(tick_w, font.textWidth(text, type.tick));
    L.texts.push_back(
        {text, type.tick, bar.x + bar.w + 7.0, y + kDigitHalf * type.tick, TextAnchor::Start, false, kText});
  }
  L.lines.push_back({bar.x - 1, bar.y - 1, bar.x + bar.w, bar.y - 1, kFrame});
  L.lines.push_back({bar.x - 1, bar.y + bar.h, bar.x + bar.w, bar.y + bar.h, kFrame});
  L.lines.push_back({bar.x - 1, bar.y - 1, bar.x - 1, bar.y + bar.h, kFrame});
  L.lines.push_back({bar.x + bar.w, bar.y - 1, bar.x + bar.w, bar.y + bar.h, kFrame});
  const double label_x = bar.x + bar.w + 7 + std::ceil(tick_w) + 10 + font.ascent(type.axis);
  L.texts.push_back({fig.scale_label, type.axis, label_x, bar.y + bar.h / 2.0, TextAnchor::Middle, true, kText});

  // Title, centred over the maps (but never cut at the left edge), and the image size.
  const double title_w = font.textWidth(fig.title, type.title);
  const double title_cx = std::max(grid_map_cx, type.margin + title_w / 2);
  L.texts.push_back(
      {fig.title, type.title, title_cx, type.margin + font.ascent(type.title), TextAnchor::Middle, false, kText});
  const double right = std::max(label_x + font.descent(type.axis), title_cx + title_w / 2);
  L.width = static_cast<int>(std::ceil(right)) + type.margin;
  L.height =
      static_cast<int>(std::ceil(std::max(col_axis_y + font.descent(type.axis), bar.y + bar.h + 0.0))) + type.margin;
  return L;
}

// Everything in the layout moved by (dx, dy) pixels.
void translate(FigureLayout& L, int dx, int dy) {
  for (PixelRect& m : L.maps) m.x += dx, m.y += dy;
  for (FillItem& f : L.fills) f.rect.x += dx, f.rect.y += dy;
  L.colorbar.x += dx, L.colorbar.y += dy;
  for (TextItem& t : L.texts) t.x += dx, t.y += dy;
  for (LineItem& l : L.lines) l.x0 += dx, l.x1 += dx, l.y0 += dy, l.y1 += dy;
}

// A figure of a given width and/or height (figure.size): the largest maps whose layout fits it, centred on the
// page. Throws InputError("--width" | "--height", ...) when even the smallest maps leave no room.
FigureLayout sizedLayout(const Figure& fig, const Font& font) {
  const int want_w = static_cast<int>(std::lround(fig.size.width_in * kLayoutDpi));
  const int want_h = static_cast<int>(std::lround(fig.size.height_in * kLayoutDpi));
  const auto fits = [&](const FigureLayout& L) {
    return (want_w == 0 || L.width <= want_w) && (want_h == 0 || L.height <= want_h);
  };
  constexpr int kLeast = 8;  // the smallest map budget tried: 8 px a map
  FigureLayout best = layoutWithBudget(fig, font, kLeast, false);
  if (!fits(best)) {
    const bool width = want_w > 0 && best.width > want_w;
    char least[96];
    std::snprintf(least, sizeof least, "at least %.1f in for this figure's labels and colour bar",
                  std::ceil(10.0 * (width ? best.width : best.height) / kLayoutDpi) / 10.0);
    char given[32];
    std::snprintf(given, sizeof given, "%g in", width ? fig.size.width_in : fig.size.height_in);
    throw InputError(width ? "--width" : "--height", least, given);
  }
  // The largest budget that fits (the layout grows with it, labels appearing as cells grow: checked, not assumed).
  int lo = kLeast, hi = 2 * kMaxImageSide;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    FigureLayout L = layoutWithBudget(fig, font, mid, false);
    if (fits(L)) {
      lo = mid;
      best = std::move(L);
    } else {
      hi = mid - 1;
    }
  }
  const int w = want_w > 0 ? want_w : best.width, h = want_h > 0 ? want_h : best.height;
  translate(best, (w - best.width) / 2, (h - best.height) / 2);
  best.width = w, best.height = h;
  return best;
}

}  // namespace

int pooledMapSide(int panels) { return mapBudget(gridColumns(panels, 0), kSingleBudget); }

FigureLayout layoutFigure(const Figure& figure) {
  const Font& font = Font::exportFont();
  if (figure.size.width_in > 0 || figure.size.height_in > 0) return sizedLayout(figure, font);
  const int grid_cols = gridColumns(figure);
  const auto n = static_cast<int>(std::max(figure.panels[0].values.rows(), figure.panels[0].values.cols()));
  int budget = mapBudget(grid_cols, n);
  FigureLayout layout = layoutWithBudget(figure, font, budget, true);
  // Shrink the maps until the whole image fits kMaxImageSide (labels and margins do not shrink).
  for (int attempt = 0; attempt < 8 && std::max(layout.width, layout.height) > kMaxImageSide && budget > 16;
       ++attempt) {
    budget = std::max(16, static_cast<int>(budget * 0.97 * kMaxImageSide / std::max(layout.width, layout.height)));
    layout = layoutWithBudget(figure, font, budget, true);
  }
  return layout;
}

namespace {

// Whether the image of a (width, height) layout at `dpi`, its sides rounded as pngLayout rounds them, keeps
// within kMaxPngSide and kMaxPngPixels.
bool pngFits(int width, int height, int dpi) {
  const double s = dpi / static_cast<double>(kLayoutDpi);
  const long long w = std::lround(width * s), h = std::lround(height * s);
  return std::max(w, h) <= kMaxPngSide && w * h <= kMaxPngPixels;
}

}  // namespace

FigureLayout pngLayout(const Figure& figure) { return scaledToDpi(figure, layoutFigure(figure)); }

FigureLayout scaledToDpi(const Figure& figure, FigureLayout L) {
  int dpi = figure.dpi;
  if (dpi != kFitDpi && (dpi < kMinDpi || dpi > kMaxDpi))
    throw InputError("--dpi", "an integer from " + std::to_string(kMinDpi) + " to " + std::to_string(kMaxDpi),
                     std::to_string(dpi));
  const std::string limits =
      "a PNG stops at " + std::to_string(kMaxPngSide) + " px a side and 8192 x 8192 pixels in all";
  // The largest dpi whose image keeps within both limits (before the sides' rounding, checked by pngFits).
  const double fit = std::min({static_cast<double>(kMaxPngSide) / std::max(L.width, L.height),
                               std::sqrt(static_cast<double>(kMaxPngPixels) / L.width / L.height)});
  const int largest = static_cast<int>(std::min<double>(kMaxDpi, std::floor(kLayoutDpi * fit)));
  if (dpi == kFitDpi) {
    // Nobody asked for a dpi: kDefaultDpi, or the largest below it that fits, down to the layout's own.
    dpi = std::min(kDefaultDpi, largest);
    while (dpi >= kLayoutDpi && !pngFits(L.width, L.height, dpi)) --dpi;
    if (dpi < kLayoutDpi)
      throw InputError("figure",
                       "a layout whose PNG fits at " + std::to_string(kLayoutDpi) + " dpi or more (" + limits +
                           "; fewer panels, or an SVG)",
                       "a " + std::to_string(L.width) + " x " + std::to_string(L.height) + " px layout of " +
                           std::to_string(figure.panels.size()) + " panels");
  }
  L.dpi = dpi;
  if (dpi == kLayoutDpi) return L;
  const double s = dpi / static_cast<double>(kLayoutDpi);
  const auto at = [s](double v) { return static_cast<int>(std::lround(v * s)); };
  const long long w = at(L.width), h = at(L.height);
  if (!pngFits(L.width, L.height, dpi))
    throw InputError("--dpi",
                     "at most " + std::to_string(largest) + " for this " + std::to_string(L.width) + " x " +
                         std::to_string(L.height) + " px figure (" + limits + ")",
                     std::to_string(dpi));
  const auto scaleRect = [&](PixelRect& r) {
    const int x1 = at(r.x + r.w), y1 = at(r.y + r.h);
    r.x = at(r.x), r.y = at(r.y);
    r.w = x1 - r.x, r.h = y1 - r.y;
  };
  for (PixelRect& m : L.maps) scaleRect(m);
  for (FillItem& f : L.fills) scaleRect(f.rect);
  scaleRect(L.colorbar);
  for (LineItem& l : L.lines) {
    l.x0 = at(l.x0), l.y0 = at(l.y0);
    l.x1 = at(l.x1 + 1) - 1, l.y1 = at(l.y1 + 1) - 1;
  }
  for (TextItem& t : L.texts) {
    t.x *= s, t.y *= s;
    t.size = static_cast<float>(t.size * s);
  }
  L.width = static_cast<int>(w), L.height = static_cast<int>(h);
  return L;
}

PixelRect cellRect(const Figure& figure, const FigureLayout& layout, int panel, int row, int col) {
  const HeatmapPanel& p = figure.panels[static_cast<std::size_t>(panel)];
  const PixelRect& m = layout.maps[static_cast<std::size_t>(panel)];
  const auto rows = static_cast<long long>(p.values.rows()), cols = static_cast<long long>(p.values.cols());
  const int x0 = static_cast<int>(col * static_cast<long long>(m.w) / cols);
  const int x1 = static_cast<int>((col + 1) * static_cast<long long>(m.w) / cols);
  const int y0 = static_cast<int>(row * static_cast<long long>(m.h) / rows);
  const int y1 = static_cast<int>((row + 1) * static_cast<long long>(m.h) / rows);
  return {m.x + x0, m.y + y0, x1 - x0, y1 - y0};
}

}  // namespace attnscope
