// The figure behind the PNG and SVG exports, and where every part of it lands (pixels; the SVG's user units
// are the same pixels), so that both formats and the tests read one layout.
#pragma once

#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/export/colormap.h"
#include "attnscope/export/contrast.h"
#include "attnscope/export/export.h"
#include "attnscope/types.h"

namespace attnscope {

// One heatmap: a matrix on the figure's colour scale.
struct HeatmapPanel {
  std::string title;                    // "Head 2" in a grid of heads; empty for a single map
  Matrix values;                        // (rows, cols)
  MaskMatrix masked;                    // (rows, cols), 1 = masked, drawn in kMaskedColor; empty = none masked
  std::vector<std::string> row_labels;  // one per row: query tokens, or head names
  std::vector<std::string> col_labels;  // one per column: key tokens, or head names
  // The positions the rows and columns stand for: rows are positions [row_first, row_first + row_positions)
  // (0 positions: one per row). A pooled overview has fewer rows than positions; its axes are numbered.
  int row_first = 0, row_positions = 0;
  int col_first = 0, col_positions = 0;
};

struct Figure {
  std::string title;        // "Head 2 attention weights"
  std::string row_axis;     // "Query"
  std::string col_axis;     // "Key"
  std::string scale_label;  // the colour bar's label, "attention weight"
  ColorMap map = ColorMap::Viridis;
  float vmin = 0, vmax = 1;  // the colour bar's scale; for weights under a contrast, see setContrast
  std::vector<float> ticks;  // colour bar ticks, values on the scale
  int tick_decimals = 1;
  std::vector<std::string> tick_labels;  // one per tick when set (log and shared-max scales), else formatted
  // Weights figures only (a scene's heads, a model's grid, the rollout): how each cell's weight becomes a
  // colour (contrast.h), set by setContrast. The default (Fixed, linear) is the plain vmin..vmax scale, which
  // every other figure (similarity, B - A) keeps.
  MapContrast contrast;
  bool annotate = false;  // write each cell's value (2 decimals) in the cell when it fits
  int grid_columns = 0;   // panels per row of the grid; 0 = about square (ceil(sqrt(panels)))
  // A grid's rows and columns named once, at its left and over its top ("L1".. and "H1".. for a model's layers x
  // heads), in place of the panels' own titles; empty = each panel titled above it.
  std::vector<std::string> row_titles, column_titles;
  FigureSize size;  // the page's width, height and font (export.h); default the layout's own
  // The PNG's pixels per inch, the layout's pixels being 1/96 inch (CSS pixels, the SVG's units): 96 draws the
  // layout as it is, 192 twice as many pixels a side, 300 3.125 times (pngLayout).
  int dpi = kLayoutDpi;
  std::vector<HeatmapPanel> panels;
  // A similarity matrix in cluster order: the merges (cluster ids as clusterUpgma's) and the leaf order, which
  // is the panel's row order. The dendrogram is drawn left of the row labels. Empty = none.
  std::vector<ClusterMerge> dendrogram;
  std::vector<int> dendrogram_order;
};

// How attention weights are drawn (every weights figure, a scene's or a model's): rows "Query", columns "Key",
// viridis on 0..1, ticks every 0.2. The colour bar's label is the caller's.
void setWeightScale(Figure& figure);
// A weights figure's contrast, once its panels are filled (setWeightScale's before): figure.contrast, and the
// colour bar that says what it shows. Fixed: `label` on 0..1. Shared: vmax = the largest unmasked value of
// every panel (the top each weight is divided by; 1 when none is above 0), the bar 0..vmax, `label`, with vmax
// its top tick. PerHead / RowMax: the bar 0..1, labelled "<quantity> / <map_word>'s max" / "<quantity> / row's
// max". Log: ticks at 0.001, 0.01, 0.1 and 1 of the top (vmax), ", log scale" after the label. `map_word`: what
// one panel is ("head"; "map" for the rollout). `fixed_top`: Fixed's top, 1 for weights (value-norm weighted
// maps: the largest norm, the bar's round steps as Shared's). Called again (panels refilled) it sets the same
// from scratch.
void setContrast(Figure& figure, const MapContrast& contrast, const std::string& label = "attention weight",
                 const std::string& map_word = "head", const std::string& quantity = "weight", float fixed_top = 1);
// The top each unmasked value of panel `panel`'s row `row` is divided by under figure.contrast: figure.vmax for
// Fixed and Shared; the panel's largest unmasked value for PerHead; the row's for RowMax. A pooled panel's
// values are its blocks (a max per block for a scene's long map, a mean per pixel for a model grid's), so its
// tops are those of the blocks drawn. One per row of the panel.
std::vector<float> contrastTops(const Figure& figure, int panel);

// The figure for a request (what, head, metric, annotate, contrast; format and path are not read). Heads are
// named from 1 ("Head 1" is request.head == 0). Weights use viridis under request.contrast (setContrast); cosine similarity the diverging map on -1..1;
// Jensen-Shannon viridis on 0..ln 2; a diff (B - A) the diverging map on -m..m, m the largest |B - A| (1 when
// nothing changed), each head titled with its largest change and where. Masked cells are those allowedMask(scene)
// forbids.
// Throws InputError for a head out of range or a result that does not belong to the scene.
Figure makeFigure(const Scene& scene, const Result& result, const ExportRequest& request);

struct PixelRect {
  int x = 0, y = 0, w = 0, h = 0;
};

enum class TextAnchor { Start, Middle, End };

// A run of text. (x, y) is the anchor point on the baseline; `vertical` text is turned 90 degrees
// anticlockwise about (x, y) and reads from bottom to top (SVG's rotate(-90 x y)).
struct TextItem {
  std::string text;  // UTF-8
  float size = 12;   // pixels per em (CSS font-size)
  double x = 0, y = 0;
  TextAnchor anchor = TextAnchor::Start;
  bool vertical = false;
  Rgb8 color{0, 0, 0};
};

struct LineItem {  // a 1-pixel axis-aligned line (ticks, frames): pixels [x0, x1] x [y0, y1]
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  Rgb8 color{0, 0, 0};
};

struct FillItem {  // a filled rectangle (a token's chip in a token text figure), drawn under lines and text
  PixelRect rect;
  Rgb8 color{0, 0, 0};
};

struct FigureLayout {
  int width = 0, height = 0;
  std::vector<PixelRect> maps;  // one per panel: the heatmap's pixels
  std::vector<FillItem> fills;  // drawn after the maps, before the lines
  PixelRect colorbar;           // top = figure.vmax, bottom = figure.vmin
  bool labels_shown = false;    // token labels on the axes, every k-th on small cells (positions on tiny ones)
  bool annotations_shown = false;
  std::vector<TextItem> texts;
  std::vector<LineItem> lines;
  int dpi = kLayoutDpi;  // pixels per inch of this layout (pngLayout's: the dpi drawn, the PNG's pHYs)
};

// Largest side of an exported image's layout, in pixels (at kLayoutDpi).
constexpr int kMaxImageSide = 4096;
// A PNG at figure.dpi is at most this many pixels a side and in all (8192 x 8192, a 192 MiB canvas: the default
// 192 dpi of the largest layout, kMaxImageSide a side, fits), else pngLayout refuses.
constexpr int kMaxPngSide = 16384;
constexpr long long kMaxPngPixels = 8192LL * 8192;

// Cells are square and whole pixels: min(budget / n, max(48, 256 / n)) for n = max(n_q, n_k), so 48 px
// (more for a few tokens, about 256 px a side) down to 1 px; the budget is 1024 px for one map (n itself up to
// 2048 for longer sequences) and 2560 / grid columns per head in a grid. Past the budget the map keeps it and
// each pixel shows the mean of the unmasked cells it covers (masked only when all are; under a contrast, the
// mean of the cells each over its top, contrastTops). Every token labels cells of 10 px, every k-th token cells
// of 3 to 10 px (k cells make 10 px), else positions are numbered; annotations need cells wide enough for their
// text (else none). A grid's panels share their axes (query labels left of the first column, key labels under
// each column's lowest panel) and stand 10 px apart, or as far as their titles need. The maps shrink until no
// side exceeds kMaxImageSide.
// figure.size: a font of font_pt scales every text, the 10 px a label needs, the margins and the colour bar by
// font_pt / 9.75; a width or height makes the maps the largest (cells uncapped) whose layout fits within it, the
// layout then centred on a page of exactly that size (InputError "--width" / "--height" naming the least size
// when even 8 px maps do not fit). Needs the font (throws InputError when it is missing).
FigureLayout layoutFigure(const Figure& figure);
// The PNG's layout: layoutFigure's scaled by s = figure.dpi / 96: the image round(width * s) x round(height * s),
// each map and the colour bar from round(x * s) to round((x + w) * s), each line's pixels [x0, x1] from
// round(x0 * s) to round((x1 + 1) * s) - 1, text at (x * s, y * s) and size * s. Throws InputError("--dpi", ...)
// for a dpi outside kMinDpi..kMaxDpi, or one whose image passes kMaxPngSide or kMaxPngPixels (naming the largest
// dpi the figure allows). figure.dpi kFitDpi (export.h): kDefaultDpi or the largest dpi below it that fits, down
// to kLayoutDpi (InputError("figure", ...) past that).
FigureLayout pngLayout(const Figure& figure);
// pngLayout's scaling of any layout of the figure (a token text's too): `layout` at figure.dpi.
FigureLayout scaledToDpi(const Figure& figure, FigureLayout layout);
// The side, in blocks, a long map in a figure of `panels` maps is pooled to, so that layoutFigure gives each
// block one pixel: 1024 for a lone map, max(96, 2560 / grid columns) in a grid.
int pooledMapSide(int panels);

// The pixels of cell (row, col) of panel `panel`: columns [x, x + w), rows [y, y + h) of the image. Cell
// edges are floor(col * map.w / cols); when w and h are >= 1 every pixel inside is the cell's colour.
PixelRect cellRect(const Figure& figure, const FigureLayout& layout, int panel, int row, int col);

// The colour a value is drawn in: kMaskedColor when masked; under the default contrast colorAt(map, (v - vmin) /
// (vmax - vmin)); else colorAt(map, contrastT(figure.contrast, v, top)), `top` the value's (contrastTops).
Rgb8 cellColor(const Figure& figure, float value, bool masked, float top);
// With the top of Fixed and Shared (figure.vmax).
Rgb8 cellColor(const Figure& figure, float value, bool masked);
// Where value `v` sits on the colour bar, 0 (bottom) to 1 (top): on the log scale contrastT(v, vmax), else
// (v - vmin) / (vmax - vmin), clamped.
float colorBarParameter(const Figure& figure, float value);

}  // namespace attnscope
