// The exporters' private pieces: one function per file format (export_png.cpp, export_svg.cpp,
// export_csv.cpp, export_npy.cpp), and the heatmap rasteriser the PNG and SVG share.
#pragma once

#include <functional>
#include <string_view>

#include <string>
#include <vector>

#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "export/export_text.h"

namespace attnscope {

// Throws InputError unless the result is this scene's: per head one weight map (n_q, n_k), or the row
// statistics to compute it from (compute/tiles.h).
void checkResult(const Scene& scene, const Result& result);

// The cells a request exports of one head: its window (ExportRequest::row0 ...), or the whole map.
struct ExportWindow {
  int row0 = 0, row1 = 0, col0 = 0, col1 = 0;
  int rows() const { return row1 - row0; }
  int cols() const { return col1 - col0; }
  bool whole(const Scene& scene) const { return row0 == 0 && col0 == 0 && row1 == scene.nQ() && col1 == scene.nK(); }
};
// Throws InputError("rows" | "cols", ...) for a window outside the map, or one asked of anything but a head.
ExportWindow exportWindow(const Scene& scene, const ExportRequest& request);
// fn(i, w) for each query row i of the window, w its (window.cols()) weights: from the map when kept, else
// recomputed a block of rows at a time (about 16 MiB), so a long map is never whole in memory.
void forEachWeightRow(const Scene& scene, const Result& result, int head, const ExportWindow& window,
                      const std::function<void(int, const float*)>& fn);
// The (h, h) matrix of the metric; throws InputError when the result has none (computed without analysis).
const Matrix& similarityMatrix(const Scene& scene, const Result& result, SimilarityMetric metric);
// A diff request's snapshot A; throws InputError("baseline", ...) when the request has none.
const Result& baselineOf(const ExportRequest& request);
// The result to export for a request: `result` itself, or for Head and Heads with request.value_norms a copy of
// the heads' maps each column j times value_norms(h, j) (`weighted` holds it). Throws InputError("value_norms")
// for norms not (heads, n_k) or a result without its maps.
const Result& exportedWeights(const Scene& scene, const Result& result, const ExportRequest& request, Result& weighted);
// Throws InputError("head", ...) unless 0 <= head < scene.numHeads().
void checkHeadIndex(const Scene& scene, int head);

// Panel `panel`'s heatmap at w x h pixels: each pixel is the colour of the mean of the unmasked cells it
// covers (kMaskedColor when all are masked), each cell over its top under the figure's contrast
// (contrastTops, log after the mean); with whole-pixel cells that is exactly each cell's cellColor.
Canvas rasterizeMap(const Figure& figure, int panel, int w, int h);
// The canvas as PNG bytes; `dpi` > 0 also records it (a pHYs chunk in pixels per metre, after IHDR), so that
// slides, LaTeX and image viewers place a 300-dpi figure at its size rather than at 72 or 96 dpi.
std::string encodePng(const Canvas& canvas, int dpi = 0);
// RFC 4180: a field holding a comma, a quote, CR or LF is quoted, with its quotes doubled.
std::string csvField(const std::string& s);
// The NPY 1.0 header of a little-endian float32 C-order array of `shape` (the data starts at a multiple of 64).
std::string npyHeader(const std::vector<long>& shape);

std::string pngBytes(const Figure& figure, const FigureLayout& layout);
std::string svgBytes(const Figure& figure, const FigureLayout& layout);
// CSV and NPY go to `sink` in chunks of about 1 MiB as they are formatted, so that exporting a long map to a
// file never holds its whole text (about 40 bytes a weight in long-format CSV) in memory.
using ByteSink = std::function<void(std::string_view)>;
void writeCsv(const Scene& scene, const Result& result, const ExportRequest& request, const ByteSink& sink);
void writeNpy(const Scene& scene, const Result& result, const ExportRequest& request, const ByteSink& sink);

}  // namespace attnscope
