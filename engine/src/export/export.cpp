// exportResult: checks the request and the output path, renders the chosen format in memory, then writes it
// atomically (a failure never leaves a partial file).
#include "attnscope/export/export.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "attnscope/analysis/analysis.h"
#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "export/export_formats.h"

namespace attnscope {

namespace {

// Fails early, before anything is rendered, for a path that cannot take a file.
void checkOutputPath(const std::string& path) {
  if (path.empty()) throw InputError("output path", "a file path", "an empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError("output path", "a file path", "'" + path + "', which is a directory");
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw InputError("output path", "a file in an existing folder", "'" + path + "' (no folder '" + dir + "')");
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError("output path", "a writable location", "'" + path + "' (" + std::strerror(errno) + ")");
}

}  // namespace

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
  checkOutputPath(request.path);
  writeFileAtomically(request.path, exportBytes(scene, result, request));
}

}  // namespace attnscope
