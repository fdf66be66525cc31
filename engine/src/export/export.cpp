// exportResult: checks the request and the output path (PendingFile, as every output), renders the chosen format
// in memory, then writes it atomically (a failure never leaves a partial file).
#include "attnscope/export/export.h"

#include "attnscope/analysis/analysis.h"
#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "export/export_formats.h"

namespace attnscope {

std::string exportBytes(const Scene& scene, const Result& result, const ExportRequest& request) {
  checkResult(scene, result);
  if (request.what == ExportWhat::Head) checkHeadIndex(scene, request.head);
  switch (request.format) {
    case ExportFormat::Csv:
    case ExportFormat::Npy: {
      if (request.what != ExportWhat::Diff)
        return request.format == ExportFormat::Csv ? csvBytes(scene, result, request)
                                                   : npyBytes(scene, result, request);
      // The numbers of a diff are the deltas, written where the weights would be.
      Result delta;
      for (HeadDiff& d : diffResults(baselineOf(request), result))
        delta.heads.emplace_back().weights = std::move(d.delta);
      return request.format == ExportFormat::Csv ? csvBytes(scene, delta, request) : npyBytes(scene, delta, request);
    }
    case ExportFormat::Png:
    case ExportFormat::Svg: {
      const Figure figure = makeFigure(scene, result, request);
      const FigureLayout layout = layoutFigure(figure);
      return request.format == ExportFormat::Png ? pngBytes(figure, layout) : svgBytes(figure, layout);
    }
  }
  throw InputError("format", "png, svg, csv or npy", std::to_string(static_cast<int>(request.format)));
}

void exportResult(const Scene& scene, const Result& result, const ExportRequest& request) {
  PendingFile file(request.path);  // the path checked (a folder, a missing folder, unwritable) before rendering
  file.write(exportBytes(scene, result, request));
  file.commit();
}

}  // namespace attnscope
