// attnscope export: loads a scene, computes it, and writes one head, all heads
// or the head similarity as a PNG or SVG figure, a CSV table or a NPY array.
// Heads are numbered from 1 on the command line.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/analysis/value_norms.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/export/export.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/text_bounds.h"
#include "backend_choice.h"
#include "cli/cli.h"

namespace attnscope::cli {

namespace {

constexpr const char* kExportHelp =
    "usage: attnscope export SCENE --what head:N|heads|similarity --format "
    "png|svg|csv|npy --out PATH\n"
    "                        [--annotate] [--metric cosine|js] [--backend "
    "cpu|gpu|auto] [--rows A:B] [--cols C:D]\n"
    "                        [--contrast fixed|shared|head|row] [--log] [--dpi N] [--weighting weight|value-norm]\n"
    "                        [--width IN] [--height IN] [--font-size PT]\n"
    "  --what head:N     one head's attention weights; heads are numbered from "
    "1 (head:1 is the first)\n"
    "         heads      every head: a grid of heatmaps with one colour bar, "
    "(heads, n_q, n_k) in NPY\n"
    "         similarity the heads x heads similarity matrix (--metric cosine, "
    "the default, or js)\n"
    "         diff       B - A per head on a diverging scale centred at 0: "
    "SCENE is B, --against A.json is A\n"
    "  --against A.json  for diff: the scene to compare with (same head count "
    "and token counts)\n"
    "  --dendrogram      for similarity (PNG, SVG): heads in UPGMA cluster "
    "order, the dendrogram beside\n"
    "  --format          png or svg (a heatmap figure), csv (a table with a "
    "header row), npy (float32 for\n"
    "                    numpy.load); may be left out when --out ends in .png, "
    ".svg, .csv or .npy\n"
    "  --out PATH, -o    the file to write (written to a temporary file and "
    "renamed: never half a file)\n"
    "  --annotate        write each cell's value in the cell (PNG and SVG, "
    "when the cells are big enough)\n"
    "  --backend         cpu (default), gpu, or auto (the GPU when it starts, "
    "else the CPU)\n"
    "  --rows A:B        with head:N, only query positions A to B-1 (from 0; "
    "either end may be left out)\n"
    "  --cols C:D        with head:N, only key positions C to D-1; a window past "
    "2048 positions a side is drawn\n"
    "                    max-pooled in PNG and SVG, exact in CSV and NPY\n"
    "  --weighting       with head:N or heads: weight (default: alpha_ij), or value-norm (Kobayashi et al. 2020):\n"
    "                    alpha_ij ||(x_j W_V + b_V) W_O^h||, each weight times what its key's value adds through\n"
    "                    the head, in every format (titled \"attention weights x value norms\"; the maps kept)\n";

// How weights become colours, a figure's: each weight over a top, the window's colour scale.
MapContrast parseContrast(const std::string& scale, bool log) {
  MapContrast c;
  c.log = log;
  c.scale = scale == "shared" ? ColorScale::Shared
            : scale == "head" ? ColorScale::PerHead
            : scale == "row"  ? ColorScale::RowMax
                              : ColorScale::Fixed;
  return c;
}

ExportFormat parseFormat(const std::string& name) {
  if (name == "png") return ExportFormat::Png;
  if (name == "svg") return ExportFormat::Svg;
  if (name == "csv") return ExportFormat::Csv;
  return ExportFormat::Npy;
}

// --format, or the extension of --out when --format is absent.
ExportFormat chooseFormat(Args& args, const std::string& out) {
  const std::vector<std::string> formats = {"png", "svg", "csv", "npy"};
  const std::string given = args.takeChoice("--format", formats, "");
  if (!given.empty()) return parseFormat(given);
  const std::size_t dot = out.find_last_of('.');
  const std::string ext = dot == std::string::npos ? "" : out.substr(dot + 1);
  for (const std::string& f : formats)
    if (ext == f) return parseFormat(f);
  throw InputError("--format", "png, svg, csv or npy (or an --out path ending in one of them)", "nothing");
}

// "head:N" (N from 1 to the scene's head count), "heads" or "similarity".
void parseWhat(const std::string& what, int heads, ExportRequest& request) {
  if (what == "heads") {
    request.what = ExportWhat::Heads;
    return;
  }
  if (what == "similarity") {
    request.what = ExportWhat::Similarity;
    return;
  }
  if (what == "diff") {
    request.what = ExportWhat::Diff;
    return;
  }
  const std::string range =
      "head:1 to head:" + std::to_string(heads) + " (heads are numbered from 1), heads, similarity or diff";
  if (what.rfind("head:", 0) != 0) throw InputError("--what", range, "'" + what + "'");
  const std::string digits = what.substr(5);
  if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("--what", range, "'" + what + "'");
  const int n = std::stoi(digits);
  if (n < 1 || n > heads) throw InputError("--what", range, "'" + what + "'");
  request.what = ExportWhat::Head;
  request.head = n - 1;
}

// "A:B", "A:" or ":B" -> [first, last) with -1 for an end left out; the range itself is checked against the
// scene by the exporter.
void parseWindow(const std::string& field, const std::string& text, int& first, int& last) {
  const std::string expected = "A:B, positions from 0 with B excluded (either may be left out)";
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos || text.size() > 21) throw InputError(field, expected, "'" + text + "'");
  const auto number = [&](const std::string& digits, int fallback) {
    if (digits.empty()) return fallback;
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw InputError(field, expected, "'" + text + "'");
    return std::stoi(digits);
  };
  first = number(text.substr(0, colon), 0);
  last = number(text.substr(colon + 1), -1);
}

}  // namespace

std::string contrastHelp(int column) {
  const auto option = [column](const std::string& name) {
    return "  " + name + std::string(static_cast<std::size_t>(std::max(1, column - 2 - static_cast<int>(name.size()))), ' ');
  };
  const std::string indent(static_cast<std::size_t>(column), ' ');
  return option("--contrast") + "how a figure colours weights (PNG, SVG; CSV, NPY and JSON stay raw weights):\n" +
         indent + "fixed (0 to 1, the default), shared (0 to the largest weight drawn), head (each map\n" + indent +
         "over its own largest weight) or row (each query row over its largest unmasked weight)\n" +
         option("--log") + "colours on a log scale over 3 decades of the top (alone: of 1; or with --contrast)\n";
}

int takeDpi(Args& args) {
  const long dpi = args.takeInt("--dpi", 0, kMinDpi, kMaxDpi);  // 0: not given
  return dpi == 0 ? kFitDpi : static_cast<int>(dpi);  // not given: the default, lowered to what the figure fits
}

std::string dpiHelp(int column) {
  const std::string name = "  --dpi N", pad(static_cast<std::size_t>(column), ' ');
  return name + std::string(static_cast<std::size_t>(std::max(1, column - static_cast<int>(name.size()))), ' ') +
         "a PNG figure's pixels per inch, " + std::to_string(kMinDpi) + " to " + std::to_string(kMaxDpi) +
         " (default " + std::to_string(kDefaultDpi) + ": twice the layout's pixels\n" + pad +
         "a side, or the largest below it that a large figure's PNG fits, at least 96; 300 for print).\n" + pad +
         "An SVG is vector, sized at 96 per inch and sharp at any size\n";
}

FigureSize takeFigureSize(Args& args) {
  // Any number is taken here, so that checkFigureSize refuses every out-of-range one with the range, in one place.
  const auto number = [&args](const char* name) {
    const std::optional<std::string> value = args.take(name);
    if (!value) return 0.0;
    char* end = nullptr;
    const double x = std::strtod(value->c_str(), &end);
    if (value->empty() || *end != '\0')
      throw InputError(name, "a number", "'" + elideLabel(*value, 40) + "'");
    return x;
  };
  FigureSize size;
  size.width_in = number("--width");
  size.height_in = number("--height");
  size.font_pt = number("--font-size");
  checkFigureSize(size);
  return size;
}

const char* figureSizeOption(const FigureSize& size) {
  return size.width_in != 0 ? "--width" : size.height_in != 0 ? "--height" : "--font-size";
}

std::string figureSizeHelp(int column) {
  const auto option = [column](const std::string& name) {
    return name + std::string(static_cast<std::size_t>(std::max(1, column - static_cast<int>(name.size()))), ' ');
  };
  const std::string pad(static_cast<std::size_t>(column), ' ');
  char range[160];
  std::snprintf(range, sizeof range, "%g to %g inches; the maps grow or shrink to fill it, the text keeps its size",
                kMinFigureInches, kMaxFigureInches);
  char font[160];
  std::snprintf(font, sizeof font, "%g to %g (default 9.75: 13 px); titles and axis names in proportion",
                kMinFontPt, kMaxFontPt);
  return option("  --width IN") + "a figure's width (PNG, SVG; default: its layout's own), " + range + "\n" +
         option("  --height IN") + "a figure's height, as --width (both: the maps as large as fit, centred)\n" +
         option("  --font-size PT") + "the figure's tick and token labels in points, " + font + "\n" + pad +
         "(a PNG's pixels are inches times --dpi)\n";
}

MapContrast takeContrast(Args& args) {
  const std::string scale = args.takeChoice("--contrast", {"fixed", "shared", "head", "row"}, "fixed");
  return parseContrast(scale, args.takeFlag("--log"));
}

int runExport(Args& args) {
  if (args.takeFlag("--help") || args.takeFlag("-h")) {
    std::fputs(kExportHelp, stdout);
    std::fputs(contrastHelp(20).c_str(), stdout);
    std::fputs("                    (head:N and heads; similarity and diff keep their own scales)\n", stdout);
    std::fputs(dpiHelp(20).c_str(), stdout);
    std::fputs(figureSizeHelp(20).c_str(), stdout);
    return 0;
  }
  const std::optional<std::string> what = args.take("--what");
  const std::optional<std::string> out = args.take("--out", "-o");
  if (!what) throw InputError("--what", "head:N, heads, similarity or diff", "nothing (see attnscope export --help)");
  if (!out) throw InputError("--out", "the path of the file to write", "nothing (see attnscope export --help)");
  ExportRequest request;
  request.path = *out;
  request.format = chooseFormat(args, *out);
  request.annotate = args.takeFlag("--annotate");
  request.dendrogram = args.takeFlag("--dendrogram");
  request.contrast = takeContrast(args);
  const long dpi_given = args.takeInt("--dpi", 0, kMinDpi, kMaxDpi);  // 0: not given
  request.dpi = dpi_given != 0 ? static_cast<int>(dpi_given) : kFitDpi;
  request.size = takeFigureSize(args);
  if (request.size != FigureSize{} && (request.format == ExportFormat::Csv || request.format == ExportFormat::Npy))
    throw InputError(figureSizeOption(request.size), "only with a PNG or SVG figure", request.format == ExportFormat::Csv ? "csv" : "npy");
  if (dpi_given != 0 && (request.format == ExportFormat::Csv || request.format == ExportFormat::Npy))
    throw InputError("--dpi", "only with a PNG or SVG figure", request.format == ExportFormat::Csv ? "csv" : "npy");
  const std::optional<std::string> against = args.take("--against");
  request.metric = args.takeChoice("--metric", {"cosine", "js"}, "cosine") == "js" ? SimilarityMetric::JensenShannon
                                                                                   : SimilarityMetric::Cosine;
  const std::string backend_name = args.takeChoice("--backend", {"cpu", "gpu", "auto"}, "cpu");
  const bool value_norm = args.takeChoice("--weighting", {"weight", "value-norm"}, "weight") == "value-norm";
  const std::optional<std::string> rows = args.take("--rows");
  const std::optional<std::string> cols = args.take("--cols");
  if (rows) parseWindow("--rows", *rows, request.row0, request.row1);
  if (cols) parseWindow("--cols", *cols, request.col0, request.col1);
  const std::vector<std::string> files = args.positionals(1);
  if (files.empty()) throw InputError("export", "a scene file: attnscope export SCENE ...", "none");

  const Scene scene = loadSceneFile(files[0]);
  parseWhat(*what, scene.numHeads(), request);
  if (request.what == ExportWhat::Diff && !against)
    throw InputError("--against", "the scene A to compare with (--what diff shows SCENE - A)", "nothing");
  if (request.what != ExportWhat::Diff && against)
    throw InputError("--against", "only with --what diff", "'" + *against + "' with --what " + *what);
  if ((rows || cols) && request.what != ExportWhat::Head)
    throw InputError(rows ? "--rows" : "--cols", "only with --what head:N", "--what " + *what);
  checkExportWindow(scene, request);  // before the compute: a bad window costs nothing
  if (request.dendrogram && request.what != ExportWhat::Similarity)
    throw InputError("--dendrogram", "only with --what similarity", "--what " + *what);
  const bool weights = request.what == ExportWhat::Head || request.what == ExportWhat::Heads;
  if (request.contrast != MapContrast{} && !weights)
    throw InputError(request.contrast.scale != ColorScale::Fixed ? "--contrast" : "--log",
                     "only with --what head:N or heads (a figure of weights)", "--what " + *what);
  if (value_norm && !weights)
    throw InputError("--weighting", "value-norm only with --what head:N or heads (maps of weights)", "--what " + *what);
  std::vector<std::string> warnings;
  std::unique_ptr<Backend> backend = makeBackend(backend_name, 0, warnings);
  Result baseline;
  if (against) {
    const Scene scene_a = loadSceneFile(*against);
    if (scene_a.nQ() != scene.nQ() || scene_a.nK() != scene.nK() || scene_a.numHeads() != scene.numHeads())
      throw InputError("--against",
                       std::to_string(scene.numHeads()) + " heads over " + shapeString(scene.nQ(), scene.nK()) +
                           " tokens (as " + files[0] + ")",
                       std::to_string(scene_a.numHeads()) + " heads over " + shapeString(scene_a.nQ(), scene_a.nK()));
    baseline = backend->compute(scene_a, {.keep_scores = false, .analysis = false});
    request.baseline = &baseline;
  }
  // Scores are not exported (masked cells come from the scene's mask); similarity only when asked for. Maps
  // are kept while they fit mapsLimitBytes(); past it heads are read through tiles (a diff needs both maps, and
  // value-norm weighting the weighted maps).
  const bool keep = request.what == ExportWhat::Diff || value_norm;
  // The kept maps and their weighted copy: refused before the compute where they pass the memory budget.
  if (value_norm)
    checkMemoryBudget("--weighting", "the heads' maps and their value-norm weighted copy", 2 * mapBytes(scene, false));
  // (heads, n_k), in double and then checked: a norm past float32's range is refused before the compute.
  const Matrix norms = value_norm ? float32ValueNorms(sceneValueNormsDouble(scene)) : Matrix();
  const Result result = backend->compute(scene, {.keep_scores = false,
                                                 .analysis = request.what == ExportWhat::Similarity,
                                                 .maps = keep ? MapPolicy::Keep : MapPolicy::Auto});
  if (value_norm) request.value_norms = &norms;
  warnings.insert(warnings.end(), result.warnings.begin(), result.warnings.end());
  for (const std::string& w : warnings) std::fprintf(stderr, "attnscope: warning: %s\n", w.c_str());
  exportResult(scene, result, request);
  std::printf("wrote %s\n", request.path.c_str());
  return 0;
}

}  // namespace attnscope::cli
