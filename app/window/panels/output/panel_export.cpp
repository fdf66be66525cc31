// Export panel: what is on show. For a scene: the current head, all heads, the similarity matrix (with its
// dendrogram in cluster order, a choice of its own: the heads grid keeps its order) or B - A against the Diff tab's
// pinned A; for a checkpoint run or a saved tensor: the focused map, the shown layer's heads, every layer (the
// grid), the shown layer's similarity, the rollout (the choice while the rollout is on show) or the subject pane's
// Find heads map (a head-type score, composition or logit attribution: as drawn, or its numbers), or the token
// view (the picked token's attention as coloured text, or its numbers). PNG (at a dpi), SVG, CSV or NPY: a path's known extension sets the
// format, and a picked format the path's extension. Through the same exporters as `attnscope export` and
// `attnscope model`; a message says where the file went or why not, until the request changes. With the value
// norms switch on, the maps are exported weighted (alpha_ij times key j's value norm, the CLI's numbers), or a
// line says why they cannot be.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "attnscope/analysis/value_norms.h"
#include "attnscope/atomic_file.h"
#include "attnscope/compute/similarity.h"
#include "attnscope/error.h"
#include "attnscope/export/export.h"
#include "attnscope/model/head_finding.h"
#include "attnscope/model/model_export.h"
#include "window/lesson/lesson.h"
#include "window/subject/model_session.h"
#include "window/panels/output/export_writer.h"
#include "window/runviews/token_view.h"
#include "window/subject/subject.h"
#include "window/panels/panels.h"
#include "window/files/file_chooser.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

float radioWidth(const char* label) {
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
}

// The next item on this line when `width` more fits in the pane, else on the next line.
void sameLineIfFits(float width) {
  const float right = ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width;
  if (right <= ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
}

const char* const kFormats[] = {"PNG", "SVG", "CSV", "NPY"};  // in ExportFormat's order
const char* const kExtensions[] = {".png", ".svg", ".csv", ".npy"};

// The path's extension, lower case ("" for none).
std::string extensionOf(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  std::string ext = dot == std::string::npos || path.find('/', dot) != std::string::npos ? "" : path.substr(dot);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// The format a path's extension names (an index into kFormats), if any.
std::optional<int> formatOfPath(const std::string& path) {
  const std::string ext = extensionOf(path);
  for (int i = 0; i < 4; ++i)
    if (ext == kExtensions[i]) return i;
  return std::nullopt;
}

// "" when `path` ends in `extension` (any case), else the line that says what disagrees (a path with none of the
// four extensions: a known one sets the format).
std::string extensionMismatch(const std::string& path, const char* format, const char* extension) {
  const std::string ext = extensionOf(path);
  if (ext == extension) return "";
  return std::string("path: the format is ") + format + ", so the file should end in " + extension + "; it ends in " +
         (ext.empty() ? std::string("no extension") : "'" + path.substr(path.rfind('.')) + "'") +
         ". Change the path or pick the format.";
}

bool isFigureFormat(int format) {
  return format == static_cast<int>(ExportFormat::Png) || format == static_cast<int>(ExportFormat::Svg);
}

// "" for a figure size the exporters take (checkFigureSize), else its line.
std::string sizeProblem(const FigureSize& size) {
  try {
    checkFigureSize(size);
    return "";
  } catch (const InputError& e) {
    return e.what();
  }
}

// The figure's page: width and height in inches and the labels' font in points, 0 = the figure's own; greyed out
// for CSV and NPY (numbers have no size).
void sizeInputs(FigureSize& size, bool figure) {
  ImGui::BeginDisabled(!figure);
  const float w = ImGui::GetFontSize() * 4.5f;
  const auto input = [&](const char* label, double& v, const char* id, const char* tip) {
    ImGui::SetNextItemWidth(w);
    ImGui::InputDouble(label, &v, 0, 0, v == 0 ? "auto" : "%g");
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", tip);
    probeItem(id);
  };
  input("width in", size.width_in, "export.width",
        "The figure's width in inches (1 to 42; 0 = its own): the maps grow or shrink to fill it");
  ImGui::SameLine();
  input("height in", size.height_in, "export.height",
        "The figure's height in inches (1 to 42; 0 = its own); with a width too, the maps as large as fit, centred");
  ImGui::SameLine();
  input("font pt", size.font_pt, "export.font",
        "The labels' font size in points (4 to 48; 0 = 9.75): titles and axis names in proportion");
  ImGui::EndDisabled();
}

// "" for a dpi the exporters take, else the line that says why not.
std::string dpiProblem(int dpi) {
  if (dpi >= kMinDpi && dpi <= kMaxDpi) return "";
  return "dpi: expected an integer from " + std::to_string(kMinDpi) + " to " + std::to_string(kMaxDpi) + ", got " +
         std::to_string(dpi);
}

// What a checkpoint run's or tensor's export reads of the session, taken when Export is clicked: the forward and
// the checkpoint shared (never mutated), the rest copied, so the writer's thread reads nothing the UI thread
// changes (a new forward landing meanwhile replaces the session's, not this).
struct RunSnapshot {
  std::shared_ptr<const model::ForwardResult> forward;
  std::shared_ptr<const model::Model> checkpoint;  // null for a tensor
  std::vector<std::string> labels;
  std::string title;
  int layer = 0, focus_head = -1;
  std::vector<int> windows;  // per layer: ModelSession::windowOf
  std::shared_ptr<const Matrix> rollout;  // (n, n), when the rollout is asked for (a copy of the session's)
  std::shared_ptr<const model::LayerHeadValues> scores;  // Find heads' map, when it is asked for
  TokenViewState tokens;  // the token view's token, direction and head
  const model::HeadLayout& layout() const { return forward->layout; }
};

RunSnapshot snapshotOf(const ModelSession& s, const Matrix* rollout,
                       std::shared_ptr<const model::LayerHeadValues> scores, const TokenViewState& tokens) {
  RunSnapshot r{s.sharedForward(), s.sharedCheckpoint(), s.labels(), s.title(), s.layer, s.focus_head, {}, nullptr,
                std::move(scores), tokens};
  for (int l = 0; l < s.layout().n_layer; ++l) r.windows.push_back(s.windowOf(l));
  if (rollout) r.rollout = std::make_shared<const Matrix>(*rollout);
  return r;
}

// The rollout (n, n): as `model --rollout-out` draws it (a figure titled "<name> attention rollout"), or its
// numbers as one map's CSV or NPY (a one-head scene of it, causal where the model is).
std::string rolloutBytes(const RunSnapshot& s, ExportFormat format, const MapContrast& contrast, int dpi,
                         const FigureSize& size) {
  const bool causal = s.layout().causal;
  if (format == ExportFormat::Png || format == ExportFormat::Svg) {
    Figure f = model::rolloutFigure(*s.rollout, s.labels, causal, contrast, s.title);
    f.dpi = dpi;
    f.size = size;
    return model::figureBytes(f, format);
  }
  const int n = static_cast<int>(s.rollout->rows());
  Scene scene;
  scene.description = s.title + " attention rollout";
  scene.d_model = 1;
  scene.query_tokens = s.labels;
  scene.query = Matrix::Zero(n, 1);  // only its row count (n) is read by the exporters
  scene.heads.resize(1);
  if (causal) scene.mask = MaskKind::Causal;
  Result result;
  result.heads.resize(1);
  result.heads[0].weights = *s.rollout;
  ExportRequest request;
  request.what = ExportWhat::Head;
  request.format = format;
  return exportBytes(scene, result, request);
}

// Layer `layer` of a model's forward or a tensor as a scene of its maps with a result holding them: n tokens, h
// heads without projections, the forward's mask (causal, and a sliding window) as the scene's, and the heads'
// similarity; so that the scene exporters write one head, all heads or the similarity unchanged.
std::pair<Scene, Result> layerMaps(const RunSnapshot& s, int layer) {
  const model::ForwardResult& f = *s.forward;
  const int n = f.n, h = s.layout().n_head;
  Scene scene;
  scene.description = s.title + " layer " + std::to_string(layer + 1);
  scene.d_model = 1;
  scene.query_tokens = s.labels;
  scene.query = Matrix::Zero(n, 1);  // only its row count (n) is read by the exporters
  scene.heads.resize(static_cast<std::size_t>(h));
  const int window = s.windows[static_cast<std::size_t>(layer)];
  if (s.checkpoint && s.layout().causal && window == 0) {
    scene.mask = MaskKind::Causal;
  } else if (s.checkpoint && s.layout().causal) {  // key j visible to query i when i - window < j <= i
    scene.mask = MaskKind::Explicit;
    scene.explicit_mask = MaskMatrix::Zero(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = std::max(0, i - window + 1); j <= i; ++j) scene.explicit_mask(i, j) = 1;
  }
  Result result;
  result.heads.resize(static_cast<std::size_t>(h));
  std::vector<const Matrix*> maps;
  for (int head = 0; head < h; ++head) {
    result.heads[static_cast<std::size_t>(head)].weights = f.map(layer, head);
    maps.push_back(&result.heads[static_cast<std::size_t>(head)].weights);
  }
  result.similarity = headSimilarity(maps);
  return {std::move(scene), std::move(result)};
}

// Value-norm weighting of an export: on while the switch is on and the export is of maps with values to weigh;
// else `why` says in one line why the file holds the plain weights ("" while the switch is off).
struct ExportWeighting {
  bool on = false;
  std::string why;
};

// A scene's: its one head or all heads, while its maps are kept (a long scene's window draws weighted tiles, its
// export writes the plain weights).
ExportWeighting sceneWeighting(const AppState& state, const ViewState& view) {
  if (view.run.value_norm != 1) return {};
  if (state.headsFromOverviews() || longScene(state))
    return {false, "value norms: a long scene's maps are read through tiles of plain weights, so this file holds "
                   "the weights"};
  if (view.exporter.what >= 2)
    return {false, std::string("value norms: the ") + (view.exporter.what == 2 ? "similarity" : "B - A") +
                       " is of the plain weights"};
  return {true, ""};
}

// A checkpoint run's or a capture's with values: a map, a layer's heads or every layer (a saved tensor has none).
ExportWeighting modelWeighting(const ViewState& view, const ModelSession& s, int what) {
  if (view.run.value_norm != 1) return {};
  if (!s.hasValueNorms())
    return {false, "value norms: a saved tensor holds no values (W_V, W_O), so this file holds the weights"};
  if (what == 3) return {false, "value norms: the similarity is of the plain weights"};
  if (what == 4) return {false, "value norms: the rollout is of the plain weights"};
  if (what == 5) return {false, "value norms: Find heads' map holds its own numbers"};
  // what 6, the token view: weighted as the view draws it
  return {true, ""};
}

// Every layer's (heads, n) value norms (model::valueNorms, as `attnscope model --weighting value-norm`), or only
// layer `layer`'s (the others empty) when layer >= 0.
model::KeyScales modelValueNorms(const RunSnapshot& s, int layer) {
  model::KeyScales norms(static_cast<std::size_t>(s.layout().n_layer));
  for (int l = 0; l < s.layout().n_layer; ++l)
    if (layer < 0 || l == layer)
      norms[static_cast<std::size_t>(l)] =
          s.checkpoint ? model::valueNorms(*s.checkpoint, *s.forward, l) : model::carriedValueNorms(*s.forward, l);
  return norms;
}

// What is on show, as ViewState::exporter.model_what counts it: the rollout, else the focused map, else the grid.
int modelWhatOnShow(const ViewState& view, const ModelSession& s) {
  return view.run.rollout == 1 ? 4 : s.focused() ? 0 : 2;
}

// The bytes of a model's or tensor's export: `what` as ViewState::exporter.model_what, of the session's layer (and
// focused head), in `format`; figures of weights in the window's colours (`contrast`). `weighted`: value-norm
// weighting (modelWeighting's on).
std::string modelExportBytes(const RunSnapshot& s, int what, ExportFormat format, const std::string& path,
                             const MapContrast& contrast, int dpi, const FigureSize& size, bool weighted) {
  if (what == 4) return rolloutBytes(s, format, contrast, dpi, size);
  if (what == 6) {  // the token view, as it shows (weighted when the view is)
    TokenText t = tokenViewText(*s.forward, s.labels, s.title, s.layer, s.tokens, MapWeighting{weighted, s.checkpoint});
    t.dpi = dpi;
    t.size = size;
    return tokenTextBytes(t, format);
  }
  if (what == 5) {  // Find heads' map: as drawn (its own colours), or its numbers
    if (format == ExportFormat::Csv) return model::layerHeadCsv(*s.scores);
    if (format == ExportFormat::Npy) return model::layerHeadNpy(*s.scores);
    Figure f = model::layerHeadFigure(*s.scores);
    f.dpi = dpi;
    f.size = size;
    return model::figureBytes(f, format);
  }
  const bool figure = format == ExportFormat::Png || format == ExportFormat::Svg;
  const int layer = what == 2 ? -1 : s.layer;
  const model::KeyScales norms = weighted ? modelValueNorms(s, layer) : model::KeyScales();
  const model::KeyScales* scales = weighted ? &norms : nullptr;
  const auto grid = [&](int shown) {  // every layer (-1) or one, as `model --grid-out` draws them
    Figure f = model::modelGridFigure(*s.forward, s.layout(), s.labels, shown, contrast, s.title, scales, size);
    f.dpi = dpi;
    return model::figureBytes(f, format);
  };
  if (what == 2) {  // every layer: the grid figure, or (layers, heads, n, n) as NPY
    if (format == ExportFormat::Csv)
      throw InputError("path", "a .png, .svg or .npy path for every layer's maps (CSV holds one layer's)", path);
    return figure ? grid(-1) : model::modelResultNpy(*s.forward, s.layout(), -1, scales);
  }
  if (what == 1 && figure) return grid(s.layer);
  const auto [scene, result] = layerMaps(s, s.layer);
  ExportRequest request;
  request.what = what == 0 ? ExportWhat::Head : what == 1 ? ExportWhat::Heads : ExportWhat::Similarity;
  request.head = std::max(0, s.focus_head);
  request.format = format;
  request.metric = SimilarityMetric::Cosine;
  request.subject = s.title + " layer " + std::to_string(s.layer + 1);  // "GPT-2 layer 6, head 4: ..."
  request.dpi = dpi;
  request.size = size;
  if (what != 3) request.contrast = contrast;
  if (weighted) request.value_norms = &norms[static_cast<std::size_t>(s.layer)];
  return exportBytes(scene, result, request);
}

// What the export's colours will be, under the button: the window's colour scale for a figure of weights, and
// that CSV and NPY hold the raw weights whatever it is. `weights`: the choice is a map or maps of weights;
// `weighted`: they are weighted by value norms.
void contrastLine(const MapContrast& contrast, ExportFormat format, bool weights, bool weighted) {
  std::string line;
  if ((format == ExportFormat::Csv || format == ExportFormat::Npy) && weighted)
    line = "numbers: each weight times its key's value norm, alpha_ij ||(x_j W_V + b_V) W_O^h|| (the colour scale "
           "is for PNG and SVG)";
  else if (format == ExportFormat::Csv || format == ExportFormat::Npy)
    line = "numbers: the raw weights (the colour scale is for PNG and SVG)";
  else if (weights && weighted)
    line = "colours: " + contrastName(contrast) + " (the maps' colour scale) of weight x value norm, the bar up to "
           "the largest norm";
  else if (weights)
    line = "colours: " + contrastName(contrast) + " (the maps' colour scale)";
  else
    return;  // similarity and B - A have scales of their own, on the figure's bar
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  textWrappedAtSpaces(line);
  ImGui::PopStyleColor();
  probeItem("export.contrast");
}

// The "What" choices for a checkpoint run or a tensor, named after the session's layer and focused head.
void modelWhat(ViewState& view, ModelSession& s) {
  if (view.exporter.model_what == 0 && !s.focused()) view.exporter.model_what = -1;  // the map went back to the grid
  // What is on show changed (the rollout switched on, a map opened): the choice follows it again.
  const int on_show = modelWhatOnShow(view, s);
  if (on_show != view.exporter.model_on_show) view.exporter.model_what = -1, view.exporter.model_on_show = on_show;
  int what = view.exporter.model_what < 0 ? modelWhatOnShow(view, s) : view.exporter.model_what;
  const std::string layer = "layer " + std::to_string(s.layer + 1);
  const bool token_picked = view.tokens.token >= 0 && view.tokens.token < s.forward().n;  // the token view shows one
  const std::string labels[] = {
      s.focused() ? layer + ", head " + std::to_string(s.focus_head + 1) : std::string("one map (click a tile)"),
      layer + "'s heads", "every layer", layer + "'s similarity", "the rollout", "Find heads' map",
      token_picked ? "token view (token " + std::to_string(view.tokens.token) + ")" : std::string("token view")};
  // The rollout once computed (asked for here when it is the choice; the centre's rollout view asks too).
  const bool rollout_ready = what == 4 ? s.rollout() != nullptr : true;
  ImGui::TextUnformatted("What");
  // Find heads' map while the subject pane draws one (this frame or the last).
  const bool scores_shown = view.find.shown && view.find.shown_frame >= ImGui::GetFrameCount() - 1;
  if (what == 5 && !scores_shown) what = modelWhatOnShow(view, s), view.exporter.model_what = -1;
  if (what == 6 && !token_picked) what = modelWhatOnShow(view, s), view.exporter.model_what = -1;
  for (int i = 0; i < 7; ++i) {
    sameLineIfFits(radioWidth(labels[i].c_str()));
    ImGui::BeginDisabled((i == 0 && !s.focused()) || (i == 5 && !scores_shown) || (i == 6 && !token_picked));
    if (ImGui::RadioButton(labels[i].c_str(), &what, i)) view.exporter.model_what = i;
    ImGui::EndDisabled();
    probeItem(std::string("export.model.what.") + std::to_string(i));
  }
  if (!rollout_ready) {
    ImGui::TextDisabled("computing the rollout...");
    probeItem("export.rollout_pending");
  }
  if (what == 5) {
    textWrappedAtSpaces(view.find.shown->title);
    probeNote("export.scores_title", view.find.shown->title);
  }
}

// Everything an export reads from the panel, as one string: the message stays while it is the same.
std::string exportRequestKey(const ViewState& view, const Subject& subject) {
  return std::string(subject.paneTitle()) + "|" + std::to_string(view.exporter.what) + "|" +
         std::to_string(view.exporter.model_what) + "|" + std::to_string(view.exporter.head) + "|" +
         std::to_string(view.exporter.format) + "|" + std::to_string(view.similarity.metric) + "|" +
         std::to_string(view.exporter.cluster_order) + "|" + std::to_string(view.exporter.annotate) + "|" +
         std::to_string(view.exporter.dpi) + "|" + std::to_string(view.exporter.size.width_in) + "|" +
         std::to_string(view.exporter.size.height_in) + "|" + std::to_string(view.exporter.size.font_pt) + "|" +
         contrastName(view.contrast) + "|" +
         std::to_string(view.run.value_norm) + "|" + view.exporter.path;
}

}  // namespace

void drawExportPanel(AppState& state, ViewState& view) {
  const Subject subject(state, view);
  if (!subject.ready()) {
    textWrappedAtSpaces("The model is still running: nothing to export yet.");
    probeItem("export.nothing");
    return;
  }
  const int heads = state.scene().numHeads();
  const char* what[] = {"one head", "all heads", "similarity", "B - A"};  // in ExportWhat's order
  const char* const* formats = kFormats;
  const char* const* extensions = kExtensions;
  if (ModelSession* run = subject.run()) {
    modelWhat(view, *run);
  } else {
    ImGui::TextUnformatted("What");
    for (int i = 0; i < 4; ++i) {
      sameLineIfFits(radioWidth(what[i]));
      ImGui::BeginDisabled(i == 3 && !view.diff.pinned);  // B - A needs the Diff tab's snapshot A
      ImGui::RadioButton(what[i], &view.exporter.what, i);
      ImGui::EndDisabled();
      probeItem(std::string("export.what.") + std::to_string(i));
    }
  }
  if (view.exporter.what == 3 && !view.diff.pinned) view.exporter.what = 1;
  int& head = view.exporter.head;
  const bool scene = subject.editable();
  if (scene && view.exporter.what == 0) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::SliderInt("head", &head, 1, heads, "%d", ImGuiSliderFlags_AlwaysClamp);  // a typed 0 shows as 1
    probeItem("export.head");
    head = std::clamp(head, 1, heads);
  }
  ImGui::TextUnformatted("Format");
  for (int i = 0; i < 4; ++i) {
    sameLineIfFits(radioWidth(formats[i]));
    if (ImGui::RadioButton(formats[i], &view.exporter.format, i)) {
      // keep the path's extension in step with the format
      const std::size_t dot = view.exporter.path.rfind('.');
      view.exporter.path =
          view.exporter.path.substr(0, dot == std::string::npos ? view.exporter.path.size() : dot) + extensions[i];
    }
    probeItem(std::string("export.format.") + std::to_string(i));
  }
  if (scene && view.exporter.what == 2) {
    ImGui::RadioButton("cosine", &view.similarity.metric, 0);
    ImGui::SameLine();
    ImGui::RadioButton("Jensen-Shannon", &view.similarity.metric, 1);
    ImGui::Checkbox("cluster order with dendrogram", &view.exporter.cluster_order);  // not the heads grid's order
    probeItem("export.cluster_order");
  }
  if (scene && view.exporter.format <= 1) ImGui::Checkbox("write each value in its cell", &view.exporter.annotate);
  {
    // Always there (greyed out but for PNG), so that a format switched by the path moves nothing under the mouse.
    const bool png = view.exporter.format == static_cast<int>(ExportFormat::Png);
    ImGui::BeginDisabled(!png);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
    ImGui::InputInt("dpi", &view.exporter.dpi, 0, 0);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip(png ? "PNG pixels per inch: 96 is the layout's own size, 192 twice it a side, 300 for print"
                            : "SVG is vector (sharp at any size); CSV and NPY are numbers: no dpi");
    probeItem("export.dpi");
    sizeInputs(view.exporter.size, isFigureFormat(view.exporter.format));
  }
  const ImGuiStyle& style = ImGui::GetStyle();
  ImGui::SetNextItemWidth(-(ImGui::CalcTextSize("Browse...").x + 2 * style.FramePadding.x + style.ItemSpacing.x));
  ImGui::InputTextWithHint("##export_path", "map.png, .svg, .csv or .npy", &view.exporter.path);
  probeItem("export.path");
  ImGui::SameLine();
  browseButton("export.browse", view.exporter.path, ChooseWhat::SaveFile);
  // The path's extension wins: a typed ".svg" makes the format SVG, taken right after the path is typed, so that
  // it never shows as disagreeing for a frame.
  if (const std::optional<int> from_path = formatOfPath(view.exporter.path)) view.exporter.format = *from_path;
  // A path of none of the four extensions would hold bytes its name does not promise: said here, and the export
  // refused until it changes; so is a dpi the exporters refuse.
  const std::string mismatch =
      extensionMismatch(view.exporter.path, formats[view.exporter.format], extensions[view.exporter.format]);
  const bool figure = isFigureFormat(view.exporter.format);
  std::string problem = !mismatch.empty() || view.exporter.format != static_cast<int>(ExportFormat::Png)
                            ? mismatch
                            : dpiProblem(view.exporter.dpi);
  if (problem.empty() && figure) problem = sizeProblem(view.exporter.size);
  if (!problem.empty()) {
    errorText(problem);
    probeItem(!mismatch.empty() ? "export.mismatch" : dpiProblem(view.exporter.dpi).empty() ? "export.size_error"
                                                                                             : "export.dpi_error");
  }
  // The last message is about the request it answered: another request (what, head, format, path, dpi, order, ...)
  // clears it.
  const std::string request_now = exportRequestKey(view, subject);
  if (request_now != view.exporter.message_request) view.exporter.message.clear(), view.exporter.failed = false;
  ModelSession* run = subject.run();
  const int model_what = !run                           ? 0
                         : view.exporter.model_what < 0 ? modelWhatOnShow(view, *run)
                                                        : view.exporter.model_what;
  const ExportWeighting weighting = run ? modelWeighting(view, *run, model_what) : sceneWeighting(state, view);
  ExportWriter& writer = exportWriter(view.exporter);
  if (const std::optional<ExportWriter::Outcome> done = writer.poll("export")) {
    view.exporter.message = done->message;
    view.exporter.failed = done->failed;
  }
  ImGui::BeginDisabled(!problem.empty());
  const bool clicked = ImGui::Button("Export");
  const auto format = static_cast<ExportFormat>(view.exporter.format);
  const std::string& path = view.exporter.path;
  if (clicked && writer.busy()) {
    // One export at a time: the one running is not disturbed, and this click is said not to have started one.
    view.exporter.message = formatted("Not started: still writing %s (%.1f s so far); export again when it is done",
                                      writer.path().c_str(), writer.seconds());
    view.exporter.failed = true;
  } else if (clicked && run && model_what == 4 && !run->rollout()) {
    view.exporter.message = "Not started: the rollout is still computing; export again when it is shown";
    view.exporter.failed = true;
  } else if (clicked && run) {
    // A snapshot of the run: the file is made and written on the writer's thread.
    const RunSnapshot snapshot = snapshotOf(*run, model_what == 4 ? run->rollout() : nullptr,
                                            model_what == 5 ? view.find.shown : nullptr, view.tokens);
    const MapContrast contrast = view.contrast;
    const int dpi = view.exporter.dpi;
    const FigureSize size = view.exporter.size;
    const bool weighted = weighting.on;
    ExportWriter::Job job;
    job.path = path;
    job.write = [snapshot, model_what, format, path, contrast, dpi, size, weighted] {
      writeFileAtomically(path, modelExportBytes(snapshot, model_what, format, path, contrast, dpi, size, weighted));
    };
    job.wrote = wroteLine(path) + " (" +
                (model_what == 5   ? snapshot.scores->title
                 : model_what == 6 ? run->title() + " token view, token " + std::to_string(view.tokens.token)
                                   : run->title()) +
                (weighted ? ", weights x value norms)" : ")");
    job.what = run->title();
    job.owner = "export";
    writer.start(std::move(job));
    view.exporter.message.clear(), view.exporter.failed = false;
  } else if (clicked) {
    ExportRequest request;
    request.what = static_cast<ExportWhat>(view.exporter.what);
    request.head = head - 1;
    request.format = format;
    request.metric = view.similarity.metric == 0 ? SimilarityMetric::Cosine : SimilarityMetric::JensenShannon;
    request.annotate = view.exporter.annotate;
    request.path = path;
    request.dendrogram = view.exporter.what == 2 && view.exporter.cluster_order;
    request.dpi = view.exporter.dpi;
    request.size = view.exporter.size;
    if (view.exporter.what <= 1) request.contrast = view.contrast;  // a head or all heads: weights
    // Copies of the scene and its result (and B - A's pinned A): an edit meanwhile changes none of them.
    const auto scene_copy = std::make_shared<const Scene>(state.scene());
    const auto result_copy = std::make_shared<const Result>(state.result());
    const auto baseline = view.exporter.what == 3 ? std::make_shared<const Result>(view.diff.a) : nullptr;
    const bool weighted = weighting.on;
    ExportWriter::Job job;
    job.path = path;
    job.write = [scene_copy, result_copy, baseline, request, weighted]() mutable {
      const Matrix norms = weighted ? sceneValueNorms(*scene_copy) : Matrix();  // (heads, n_k)
      if (weighted) request.value_norms = &norms;
      if (baseline) request.baseline = baseline.get();
      exportResult(*scene_copy, *result_copy, request);
    };
    job.wrote = wroteLine(path) + (weighted ? " (weights x value norms)" : "");
    job.what = "the scene";
    job.owner = "export";
    writer.start(std::move(job));
    view.exporter.message.clear(), view.exporter.failed = false;
  }
  ImGui::EndDisabled();
  probeItem("export.button");
  if (clicked) view.exporter.message_request = request_now;
  contrastLine(view.contrast, static_cast<ExportFormat>(view.exporter.format),
               scene ? view.exporter.what <= 1 : model_what <= 2 || model_what == 4, weighting.on);
  if (!weighting.why.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    textWrappedAtSpaces(weighting.why);
    ImGui::PopStyleColor();
    probeItem("export.value_norm_why");
  }
  if (writer.busy()) {  // the writer's progress, as loading shows its own
    ImGui::TextDisabled("Writing %s (%s)... %.1f s", writer.path().c_str(), writer.what().c_str(), writer.seconds());
    probeItem("export.writing");
  }
  if (view.exporter.failed) {
    errorText(view.exporter.message);
    probeItem("export.error");
    probeNote("export.error", view.exporter.message);
  } else if (!view.exporter.message.empty()) {
    ImGui::TextWrapped("%s", view.exporter.message.c_str());
    probeItem("export.message");
    probeNote("export.message", view.exporter.message);
  }
}

}  // namespace attnscope::app
