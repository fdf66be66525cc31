// Exporters: heatmaps of a Result as PNG or SVG (title, token labels on both axes, colour bar, optional
// value annotations), and the numbers as CSV or NPY. Every file is written atomically.
#pragma once

#include <string>
#include <vector>

#include "attnscope/compute/result.h"
#include "attnscope/export/contrast.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// Diff: B - A of every head's weights, where the result is B and ExportRequest::baseline is A (a pinned snapshot,
// or another scene of the same shapes), on the diverging map centred at 0.
enum class ExportWhat { Head, Heads, Similarity, Diff };
enum class ExportFormat { Png, Svg, Csv, Npy };
enum class SimilarityMetric { Cosine, JensenShannon };

// A figure's layout is in CSS pixels, 96 to the inch (the SVG's size); a PNG is drawn at a dpi from kMinDpi to
// kMaxDpi (Figure::dpi, pngLayout in export_layout.h). The command line and the window draw kDefaultDpi, twice
// the layout's pixels a side, unless told otherwise; the engine's requests default to the layout itself.
constexpr int kLayoutDpi = 96, kDefaultDpi = 192, kMinDpi = 24, kMaxDpi = 1200;
// A dpi nobody gave (the command line without --dpi): kDefaultDpi, or the largest dpi below it whose PNG keeps
// within the image limits (a grid of 64 x 64 heads), never below kLayoutDpi; a figure too large even there is
// refused as InputError("figure", ...), never "--dpi". A dpi given is drawn as given or refused ("--dpi").
constexpr int kFitDpi = 0;

// A figure's size on the page, as matplotlib's figsize and font size; 0 = the layout's own (maps at their cell
// sizes, labels at 13 px, 9.75 pt). A width or height given is the whole figure's, the maps grown or shrunk to
// fill it (labels, titles and the colour bar keep the font's size) and centred on the rest; a font size is the
// tick and token labels', titles and axis names in proportion. Checked by checkFigureSize; a size too small for a
// figure's labels is refused by the layout (InputError "--width" or "--height", naming the least that fits).
struct FigureSize {
  double width_in = 0, height_in = 0;  // inches, 96 layout pixels each (the SVG's size; a PNG's at its dpi)
  double font_pt = 0;                  // points, 1/72 inch
  bool operator==(const FigureSize&) const = default;
};
constexpr double kMinFigureInches = 1, kMaxFigureInches = 42;  // 42 in: 4032 px, within kMaxImageSide
constexpr double kMinFontPt = 4, kMaxFontPt = 48;
// Throws InputError("--width" | "--height" | "--font-size", ...) for a side outside kMinFigureInches ..
// kMaxFigureInches or a font outside kMinFontPt .. kMaxFontPt (0, or not finite: NaN is refused too, 0 is "own").
void checkFigureSize(const FigureSize& size);

struct ExportRequest {
  ExportWhat what = ExportWhat::Heads;
  int head = 0;  // for ExportWhat::Head
  ExportFormat format = ExportFormat::Png;
  SimilarityMetric metric = SimilarityMetric::Cosine;
  bool annotate = false;  // write each cell's value in the cell (as seaborn's annot=True)
  // Similarity: heads in the order of UPGMA clustering on the metric (1 - cosine, or JS), with the dendrogram
  // drawn beside the matrix (PNG, SVG); CSV and NPY keep head order.
  bool dendrogram = false;
  const Result* baseline = nullptr;  // Diff: snapshot A (same head count and shapes as the result, B)
  // Head and Heads figures (PNG, SVG): how weights become colours (contrast.h, setContrast in export_layout.h).
  // Similarity and diff figures keep their own scales; CSV and NPY are the raw weights whatever it is.
  MapContrast contrast;
  // Head: a window of the map, query rows [row0, row1) x keys [col0, col1), 0-based, half-open; -1 = to the
  // end. CSV and NPY hold exactly those cells; a figure draws them (max-pooled when long, see makeFigure).
  int row0 = 0, row1 = -1, col0 = 0, col1 = -1;
  // Head and Heads figures: what the maps are of ("GPT-2 layer 6"), leading the title ("GPT-2 layer 6, head 4:
  // attention weights"); "" for the plain titles ("Head 4 attention weights").
  std::string subject;
  int dpi = kLayoutDpi;  // PNG: pixels per inch of the figure (SVG is vector, its size the layout's)
  FigureSize size;       // PNG and SVG: the figure's width, height and font (default: the layout's own)
  std::string path;
  // Head and Heads: value-norm weighting (Kobayashi et al. 2020), (heads, n_k) norms (analysis/value_norms.h's
  // sceneValueNorms, or a checkpoint layer's model::valueNorms): every format holds alpha_ij * norms(h, j), the
  // figure titled "attention weights x value norms", its bar "weight x value norm" up to the largest norm (a
  // weight of 1 on that key) and the CSV's column "weight_x_value_norm". Needs the maps kept (InputError
  // "value_norms" otherwise, and for a shape not (heads, n_k)). Null: the weights. Similarity and Diff ignore it.
  const Matrix* value_norms = nullptr;
};

// Throws InputError("rows" | "cols", ...) for a window outside the scene's map or asked of anything but one
// head: what exportResult would refuse, checked before the compute.
void checkExportWindow(const Scene& scene, const ExportRequest& request);

// Throws InputError for a head out of range, an unwritable path, etc.; never leaves a partial file.
void exportResult(const Scene& scene, const Result& result, const ExportRequest& request);

// The bytes exportResult writes (request.path is not read). Formats:
// - PNG/SVG: heatmaps as laid out by layoutFigure (export_layout.h); heads are titled from 1 ("Head 1").
// - CSV (RFC 4180; numbers in the shortest text that reads back as the same float32): Head: header
//   `query\key,<key tokens...>`, then one row per query token.
//   Heads: long format `head,query_index,query_token,key_index,key_token,weight`, head numbered from 1 (as on
//   the command line), positions from 0 (as in the NPY array). Similarity: header `head,H1,...,Hh`, then one
//   row per head.
//   Diff: as Heads with the column `delta` (B - A) in place of `weight`.
// - NPY (version 1.0, '<f4', C order): Heads and Diff (h, n_q, n_k); Head (n_q, n_k); Similarity (h, h).
// Masked weights are exactly 0 in CSV and NPY. A head's window has the window's shape (rows, cols) in NPY and
// its query and key tokens in CSV. A result without maps (MapPolicy::Auto past mapsLimitBytes) is read through
// tiles (compute/tiles.h), a block of rows at a time.
std::string exportBytes(const Scene& scene, const Result& result, const ExportRequest& request);

}  // namespace attnscope
