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

// Throws InputError unless the result is this scene's: one weight map (n_q, n_k) per head.
void checkResult(const Scene& scene, const Result& result);
// The (h, h) matrix of the metric; throws InputError when the result has none (computed without analysis).
const Matrix& similarityMatrix(const Scene& scene, const Result& result, SimilarityMetric metric);
// A diff request's snapshot A; throws InputError("baseline", ...) when the request has none.
const Result& baselineOf(const ExportRequest& request);
// Throws InputError("head", ...) unless 0 <= head < scene.numHeads().
void checkHeadIndex(const Scene& scene, int head);

// Panel `panel`'s heatmap at w x h pixels: each pixel is the colour of the mean of the unmasked cells it
// covers (kMaskedColor when all are masked); with whole-pixel cells that is exactly each cell's colour.
Canvas rasterizeMap(const Figure& figure, int panel, int w, int h);
std::string encodePng(const Canvas& canvas);
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
