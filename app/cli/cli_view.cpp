// attnscope view: a saved attention tensor from any framework ((layers, heads, n, n) or (heads, n, n)) with
// its tokens: analyze-style head-type scores, statistics and per-layer similarity as JSON, and the grid figure.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/arrays/attention_tensor.h"
#include "attnscope/arrays/capture.h"
#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/head_finding.h"
#include "attnscope/model/model_export.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/text_bounds.h"
#include "cli/cli.h"

namespace attnscope::cli {

namespace {

using nlohmann::ordered_json;

constexpr const char* kViewHelp =
    "usage: attnscope view (FILE --tokens TOKENS [--tensor NAME] | CAPTURE) [--window W] [-o OUT.json]\n"
    "                      [--grid-out GRID.png|.svg] [--layer L] [--contrast fixed|shared|head|row] [--log] [--dpi N]\n"
    "                      [--width IN] [--height IN] [--font-size PT] [--analysis-out A.json]\n"
    "  FILE        a (layers, heads, n, n) or (heads, n, n) float array of attention weights: .npy, .npz or\n"
    "              .safetensors (--tensor NAME when the file holds several)\n"
    "  CAPTURE     a capture folder (capture.json and each layer's queries and keys, as\n"
    "              tools/capture/attnscope_capture.py writes them from a model run elsewhere; docs/capture.md):\n"
    "              every map computed from them on demand, the tokens its own\n"
    "  --tokens    a JSON list (inline, starting with '[') or a file: a JSON list or one token a line\n"
    "  -o, --out   every head's type scores, statistics, and each layer's head similarity (JSON; default:\n"
    "              standard output)\n"
    "  --grid-out  the layers x heads grid of heatmaps (or layer L's heads, with --layer) as PNG or SVG\n"
    "  --window    the local score's window (default 2)\n"
    "  --analysis-out\n"
    "              finding heads across the tensor, as `attnscope model --analysis-out` writes it: head_scores\n"
    "              (each head-type score -> [layer][head], null where undefined), tokens compared as text\n";

ordered_json matrixJson(const Matrix& m) {
  ordered_json rows = ordered_json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    ordered_json row = ordered_json::array();
    for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back(floatToJson(m(i, j)));
    rows.push_back(std::move(row));
  }
  return rows;
}

// The analysis of `analyze` on the tensor's maps, layer by layer (arrays::analyseTensorLayer, as the window).
ordered_json tensorAnalysis(const arrays::AttentionTensor& t, int window) {
  const model::HeadLayout& layout = t.forward.layout;
  ordered_json heads = ordered_json::array(), layers = ordered_json::array();
  for (int l = 0; l < layout.n_layer; ++l) {
    const arrays::TensorLayerAnalysis a = arrays::analyseTensorLayer(t.forward, t.tokens, l, window);
    for (int h = 0; h < layout.n_head; ++h) {
      const HeadTypeScores& scores = a.scores[static_cast<std::size_t>(h)];
      const HeadStats& stats = a.stats[static_cast<std::size_t>(h)];
      ordered_json j;
      j["layer"] = l + 1;
      j["head"] = h + 1;
      j["label"] = headTypeLabel(scores);
      for (const std::string& name : headTypeScoreNames()) j[name] = optionalJson(headTypeScore(scores, name));
      j["entropy"] = floatToJson(stats.entropy);
      j["max_weight"] = floatToJson(stats.max_weight);
      j["mean_distance"] = floatToJson(stats.mean_distance);
      heads.push_back(std::move(j));
    }
    layers.push_back({{"layer", l + 1}, {"cosine", matrixJson(a.similarity.cosine)}, {"js", matrixJson(a.similarity.js)}});
  }
  ordered_json out;
  out["tensor"] = t.tensor_name;
  out["layers"] = layout.n_layer;
  out["heads_per_layer"] = layout.n_head;
  out["tokens"] = t.tokens;
  out["heads"] = std::move(heads);
  out["similarity"] = std::move(layers);
  return out;
}

}  // namespace

int runView(Args& args) {
  if (args.takeFlag("--help") || args.takeFlag("-h")) {
    std::fputs(kViewHelp, stdout);
    std::fputs(contrastHelp(14).c_str(), stdout);
    std::fputs(dpiHelp(14).c_str(), stdout);
    std::fputs(figureSizeHelp(14).c_str(), stdout);
    std::fputs("              (--grid-out)\n", stdout);
    return 0;
  }
  const std::optional<std::string> tokens_arg = args.take("--tokens");
  const std::optional<std::string> tensor = args.take("--tensor");
  const std::optional<std::string> out = args.take("--out", "-o");
  const std::optional<std::string> grid_out = args.take("--grid-out");
  const std::optional<std::string> analysis_out = args.take("--analysis-out");
  const long layer = args.takeInt("--layer", 0, 1, 1000) - 1;
  const int window = static_cast<int>(args.takeInt("--window", kDefaultLocalWindow, 0, 1 << 20));
  const MapContrast contrast = takeContrast(args);
  const int dpi = takeDpi(args);
  const FigureSize figure_size = takeFigureSize(args);
  const std::vector<std::string> files = args.positionals(1);
  if (files.empty())
    throw InputError("view", "an attention tensor file or a capture folder: attnscope view FILE --tokens TOKENS", "none");
  const bool capture = arrays::isCaptureFolder(files[0]);
  if (capture && (tokens_arg || tensor))
    throw InputError(tokens_arg ? "--tokens" : "--tensor", "none with a capture (it names its tokens and tensors)",
                     tokens_arg ? *tokens_arg : *tensor);
  if (!capture && !tokens_arg) throw InputError("--tokens", "a JSON list or a file of tokens", "none");
  if (contrast != MapContrast{} && !grid_out)
    throw InputError(contrast.scale != ColorScale::Fixed ? "--contrast" : "--log", "--grid-out to colour", "none");
  if (figure_size != FigureSize{} && !grid_out) throw InputError(figureSizeOption(figure_size), "--grid-out to size", "none");
  const ExportFormat grid_format = grid_out ? model::figureFormat("--grid-out", *grid_out) : ExportFormat::Png;
  std::vector<std::string> tokens = capture ? std::vector<std::string>() : arrays::tokensFromArgument(*tokens_arg);
  std::vector<PendingFile> files_out;
  files_out.reserve(3);
  PendingFile* json_file = out ? &files_out.emplace_back(*out) : nullptr;
  PendingFile* grid_file = grid_out ? &files_out.emplace_back(*grid_out) : nullptr;
  PendingFile* analysis_file = analysis_out ? &files_out.emplace_back(*analysis_out) : nullptr;

  const arrays::AttentionTensor t =
      capture ? arrays::readCapture(files[0]) : arrays::readAttentionTensor(files[0], tensor, std::move(tokens));
  checkPendingOutputs();  // none of them is the file just read
  const model::HeadLayout& c = t.forward.layout;
  if (layer >= c.n_layer) throw InputError("--layer", "1 to " + std::to_string(c.n_layer), std::to_string(layer + 1));
  // What the analysis, its JSON and the figure will hold, refused under the memory budget before any is made
  // (30,000 heads of 2 x 2 are 480 KB of file and 60 GB of similarity JSON).
  std::size_t token_bytes = 0;
  for (const std::string& token : t.tokens) token_bytes += token.size();
  std::size_t estimate = arrays::tensorHoldBytes(c.n_layer, c.n_head, t.forward.n) +
                         arrays::tensorAnalysisJsonBytes(c.n_layer, c.n_head, t.forward.n, token_bytes);
  const std::string what = "view's analysis and JSON";
  checkMemoryBudget(files[0], what, estimate);
  Figure grid;
  if (grid_file) {
    const std::int64_t panels = static_cast<std::int64_t>(c.n_head) * (layer >= 0 ? 1 : c.n_layer);
    estimate += model::gridFigureBytes(panels, t.forward.n, token_bytes);
    checkMemoryBudget(*grid_out, what + " and the figure", estimate);
    // Titled after the tensor's file name ("attn.npy layer 6: attention weights, 16 heads"), or the captured
    // model's name.
    const std::string title = capture && !t.tensor_name.empty() ? t.tensor_name
                                                                 : std::filesystem::path(files[0]).filename().string();
    grid = model::modelGridFigure(t.forward, c, t.tokens, static_cast<int>(layer), contrast, title, nullptr,
                                  figure_size);
    if (grid_format == ExportFormat::Png) grid.dpi = dpi;  // an SVG's size is the layout's
    checkMemoryBudget(*grid_out, what + " and the figure's image", estimate + model::figureImageBytes(grid));
  }
  const std::string json = formatJson(tensorAnalysis(t, window));
  if (json_file) json_file->write(json);
  if (grid_file) grid_file->write(model::figureBytes(grid, grid_format));
  if (analysis_file) {  // the model command's head_scores, from the tensor's maps (O(layers heads) numbers)
    ordered_json a;
    a["tensor"] = t.tensor_name;
    a["tokens"] = t.tokens;
    a["local_window"] = window;
    a["head_scores"] = model::headScoresJson(model::modelHeadScores(t.forward, t.tokens, window));
    // Tokens from a file and the tensor's name in an .npz may be any bytes: invalid UTF-8 is written as U+FFFD
    // (as formatJson does), never nlohmann's type_error.
    analysis_file->write(a.dump(-1, ' ', false, ordered_json::error_handler_t::replace) + "\n");
  }
  commitAll(files_out);
  if (!json_file) writeStdout(json);
  // With the JSON on standard output, the file list goes to standard error so that stdout stays one document.
  for (const PendingFile& file : files_out)
    std::fprintf(json_file ? stdout : stderr, "wrote %s\n", printableLine(file.path(), 400).c_str());
  return 0;
}

}  // namespace attnscope::cli
