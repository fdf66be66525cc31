// exportResult: checks the request and the output path (PendingFile, as every output), then writes the chosen
// format into the temporary file as it is formatted (CSV and NPY in chunks; a figure once drawn) and renames it
// (a failure never leaves a partial file).
#include "attnscope/export/export.h"

#include <cstdio>

#include "attnscope/analysis/analysis.h"
#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "export/export_formats.h"

namespace attnscope {

namespace {

// Every format through one path: CSV and NPY are written to `sink` as they are formatted, figures once drawn.
void writeExport(const Scene& scene, const Result& result, const ExportRequest& request, const ByteSink& sink) {
  checkResult(scene, result);
  if (request.what == ExportWhat::Head) checkHeadIndex(scene, request.head);
  switch (request.format) {
    case ExportFormat::Csv:
    case ExportFormat::Npy: {
      const auto write = request.format == ExportFormat::Csv ? writeCsv : writeNpy;
      Result weighted;  // value-norm weighting's maps, when asked for
      if (request.what != ExportWhat::Diff)
        return write(scene, exportedWeights(scene, result, request, weighted), request, sink);
      // The numbers of a diff are the deltas, written where the weights would be.
      Result delta;
      for (HeadDiff& d : diffResults(baselineOf(request), result))
        delta.heads.emplace_back().weights = std::move(d.delta);
      return write(scene, delta, request, sink);
    }
    case ExportFormat::Png:
    case ExportFormat::Svg: {
      const Figure figure = makeFigure(scene, result, request);
      // The PNG at the request's dpi; the SVG in the layout's own units (vector: any dpi draws it sharp).
      return sink(request.format == ExportFormat::Png ? pngBytes(figure, pngLayout(figure))
                                                      : svgBytes(figure, layoutFigure(figure)));
    }
  }
  throw InputError("format", "png, svg, csv or npy", std::to_string(static_cast<int>(request.format)));
}

}  // namespace

void checkFigureSize(const FigureSize& size) {
  const auto check = [](const char* field, double v, double least, double most, const char* unit) {
    if (v == 0) return;  // the layout's own
    if (!(v >= least && v <= most)) {  // NaN fails too
      char expected[64], got[32];
      std::snprintf(expected, sizeof expected, "%g to %g %s (or 0: the figure's own)", least, most, unit);
      std::snprintf(got, sizeof got, "%g", v);
      throw InputError(field, expected, got);
    }
  };
  check("--width", size.width_in, kMinFigureInches, kMaxFigureInches, "inches");
  check("--height", size.height_in, kMinFigureInches, kMaxFigureInches, "inches");
  check("--font-size", size.font_pt, kMinFontPt, kMaxFontPt, "points");
}

std::string exportBytes(const Scene& scene, const Result& result, const ExportRequest& request) {
  std::string bytes;
  writeExport(scene, result, request, [&bytes](std::string_view chunk) { bytes.append(chunk); });
  return bytes;
}

void exportResult(const Scene& scene, const Result& result, const ExportRequest& request) {
  PendingFile file(request.path);  // the path checked (a folder, a missing folder, unwritable) before rendering
  writeExport(scene, result, request, [&file](std::string_view chunk) { file.write(chunk); });
  file.commit();
}

}  // namespace attnscope
