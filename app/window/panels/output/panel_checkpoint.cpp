// Checkpoint panel: open a checkpoint folder of any family (GPT-2, Llama, Mistral, Qwen2, Qwen3) and type text; the
// forward runs off the UI thread and its layers x heads grid replaces the scene's heads in the centre pane
// (window/model/model_view.cpp); any layer of any family opens as the scene. An attention tensor opened from the
// file bar shows its scores and similarity here (tensor_analysis.cpp). Either's grid exports as a PNG or SVG figure.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/model/families.h"
#include "attnscope/model/model_export.h"
#include "window/subject/layer_scene.h"
#include "window/subject/model_session.h"
#include "window/model/model_view.h"
#include "window/panels/output/export_writer.h"
#include "window/panels/panels.h"
#include "window/files/file_chooser.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// The shown model's or tensor's layers x heads grid as the figure `view --grid-out` / `model --grid-out` write
// (model::modelGridFigure): every layer, or the layer on show; .png or .svg from the path; in the window's
// colours (`contrast`, ViewState's); a PNG at the Export tab's dpi and size (`dpi`, `size`: the window's one
// figure resolution and page).
// Made and written by the window's export writer (export_writer.h), off the UI thread, one export at a time.
void drawGridFigureExport(ModelSession& s, const MapContrast& contrast, int dpi, const FigureSize& size,
                          ExportWriter& writer) {
  if (const std::optional<ExportWriter::Outcome> done = writer.poll("checkpoint"))
    (done->failed ? s.figure_error : s.figure_note) = done->message;
  sectionHeader("Grid figure");
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##figure_path", "grid.png or grid.svg", &s.figure_path);
  probeItem("checkpoint.figure.path");
  if (ImGui::RadioButton("every layer", s.figure_all_layers)) s.figure_all_layers = true;
  probeItem("checkpoint.figure.all");
  ImGui::SameLine();
  const int shown_layer = s.layer;
  const std::string one = "layer " + std::to_string(shown_layer + 1);
  if (ImGui::RadioButton(one.c_str(), !s.figure_all_layers)) s.figure_all_layers = false;
  probeItem("checkpoint.figure.one");
  if (ImGui::Button("Export grid figure")) {
    s.figure_note.clear(), s.figure_error.clear();
    try {
      if (writer.busy())
        throw InputError("Export", "one export at a time", "still writing " + writer.path() + "; export again when it is done");
      const ExportFormat format = model::figureFormat("figure path", s.figure_path);
      const int layer = s.figure_all_layers ? -1 : shown_layer;
      // What the figure reads, held by the job: the forward shared, the rest copied.
      const std::shared_ptr<const model::ForwardResult> forward = s.sharedForward();
      const std::vector<std::string> labels = s.labels();
      const std::string title = s.title(), path = s.figure_path;
      ExportWriter::Job job;
      job.path = path;
      job.write = [forward, labels, title, path, layer, contrast, dpi, size, format] {
        Figure figure =
            model::modelGridFigure(*forward, forward->layout, labels, layer, contrast, title, nullptr, size);
        figure.dpi = dpi;
        writeFileAtomically(path, model::figureBytes(figure, format));
      };
      job.wrote = wroteLine(path) + (format == ExportFormat::Png ? " at " + std::to_string(dpi) + " dpi" : "");
      job.what = "grid figure";
      job.owner = "checkpoint";
      writer.start(std::move(job));
    } catch (const std::exception& e) {
      s.figure_error = e.what();
    }
  }
  probeItem("checkpoint.figure.export");
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  textWrappedAtSpaces("colours: " + contrastName(contrast) + " (the maps' colour scale)");
  ImGui::PopStyleColor();
  probeItem("checkpoint.figure.contrast");
  if (!s.figure_error.empty()) {
    errorText(s.figure_error);
    probeItem("checkpoint.figure.error");
  } else if (!s.figure_note.empty()) {
    textWrappedAtSpaces(s.figure_note);
    probeItem("checkpoint.figure.note");
  }
  if (writer.busy()) {
    ImGui::TextDisabled("Writing %s (%s)... %.1f s", writer.path().c_str(), writer.what().c_str(), writer.seconds());
    probeItem("checkpoint.figure.writing");
  }
}

// The model that ships (assets/models/tiny-induction, scripts/train_tiny_induction.py): a real trained model on a
// first run with nothing downloaded. It runs on 20 random tokens twice with Find heads on the induction score, and
// "which heads matter" set to the loss over the second copy (position 20 on), where the induction head predicts.
void drawTinyModelPreset(ViewState& view, ModelSession& s) {
  constexpr int kRepeated = 20;
  if (ImGui::Button("Try the tiny trained model")) {
    s.dir = std::string(ATTNSCOPE_ASSETS_DIR) + "/models/tiny-induction";
    s.repeated_length = kRepeated, s.repeated_seed = 0;
    const std::vector<std::string>& scores = headTypeScoreNames();
    view.find.score = static_cast<int>(std::find(scores.begin(), scores.end(), "induction") - scores.begin());
    view.find.patch_kind = 0, view.find.patch_metric = "loss", view.find.patch_position = kRepeated;
    s.start(kRepeated);
  }
  probeItem("checkpoint.tiny");
  ImGui::SameLine();
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  textWrappedAtSpaces("2 layers x 4 heads trained to copy repeated tokens: find its induction head, then ablate it");
  ImGui::PopStyleColor();
}

}  // namespace

void drawCheckpointPanel(AppState& state, ViewState& view) {
  if (!view.run.session) view.run.session = std::make_shared<ModelSession>();
  ModelSession& s = *view.run.session;
  s.on_gpu = state.backend().name() == "gpu";  // the forward where the window computes
  if (!s.tensorFile().empty() && s.forward().n > 0) {  // an opened tensor: its analysis first, then the checkpoint
    drawTensorAnalysis(s);
    ImGui::Spacing();
    drawGridFigureExport(s, view.contrast, view.exporter.dpi, view.exporter.size, exportWriter(view.exporter));
    ImGui::Spacing();
  }
  sectionHeader("Checkpoint");
  // Every family the loader reads (docs/models.md's table), wrapped to the pane.
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  ImGui::TextWrapped("GPT-2, Llama, Mistral, Qwen2, Qwen3, Pythia (GPT-NeoX), Gemma 1-3, Phi-3, OLMo 2, Mixtral, "
                     "BERT, RoBERTa");
  ImGui::PopStyleColor();
  drawTinyModelPreset(view, s);
  const ImGuiStyle& style = ImGui::GetStyle();
  ImGui::SetNextItemWidth(-(ImGui::CalcTextSize("Browse...").x + 2 * style.FramePadding.x + style.ItemSpacing.x));
  ImGui::InputTextWithHint("##checkpoint_dir", "folder (or its config.json): model.safetensors, tokenizer", &s.dir);
  probeItem("checkpoint.path");
  ImGui::SameLine();
  browseButton("checkpoint.browse", s.dir, ChooseWhat::Folder);
  wrappedTextInput("##checkpoint_text", s.text, ImVec2(-1, ImGui::GetTextLineHeight() * 3.5f));
  probeItem("checkpoint.text");
  if (ImGui::Button("Open model and run")) s.start();
  probeItem("checkpoint.run");
  // Instead of the text: L random tokens twice, where induction heads show (the subject pane's Find heads).
  ImGui::SameLine();
  if (ImGui::Button("Run on repeated random tokens")) s.start(s.repeated_length);
  probeItem("checkpoint.repeated");
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("random tokens: L");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("00000").x + 2 * style.FramePadding.x);
  ImGui::InputInt("##repeated_length", &s.repeated_length, 0);
  s.repeated_length = std::clamp(s.repeated_length, 1, 1 << 16);
  probeItem("checkpoint.repeated_length");
  ImGui::SameLine();
  ImGui::TextDisabled("seed");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("0000000000").x + 2 * style.FramePadding.x);
  ImGui::InputInt("##repeated_seed", &s.repeated_seed, 0);
  s.repeated_seed = std::max(s.repeated_seed, 0);
  probeItem("checkpoint.repeated_seed");
  drawModelProgress(view, "checkpoint");
  if (!s.error.empty() && !s.running()) {
    if (s.cancelled)
      ImGui::TextDisabled("%s", s.error.c_str());
    else
      errorText(s.error);
    probeItem("checkpoint.error");
    probeNote("checkpoint.error", s.error);
  }
  if (!s.checkpoint() || s.forward().n == 0) return;

  // What was opened: the family and its shapes, then where the maps are.
  const model::HeadLayout& c = s.layout();
  textWrappedAtSpaces(model::familyDisplayName(s.checkpoint()->model_type) + ": " + s.describe() + ".");
  probeItem("checkpoint.config");
  textWrappedAtSpaces(formatted("%d tokens: every map is in the centre pane%s.", s.forward().n,
                                c.n_kv_head < c.n_head ? ", the query heads of each KV head framed together" : ""));
  textWrappedAtSpaces("Computed on " + s.computedOn() + ".");
  probeItem("checkpoint.computed_on");
  probeNote("checkpoint.computed_on", s.computedOn());
  if (!s.forward().keepsMaps()) {  // past the memory budget (or ATTNSCOPE_MODEL_MAPS=drop)
    textWrappedAtSpaces("No maps kept (past the memory budget): the grid's tiles and a map shown full-size are "
                        "recomputed from Q and K.");
    probeItem("checkpoint.maps_on_demand");
  }
  if (!s.shown) {
    if (ImGui::Button("Show the model")) s.shown = true;
    probeItem("checkpoint.show");
  }
  int layer_shown = s.layer + 1;  // layers counted from 1 in the window; the full-size map follows
  if (stepperInt("layer", "checkpoint.layer", layer_shown, 1, c.n_layer)) s.layer = layer_shown - 1;
  const std::string why_not = layerSceneUnavailable(s);
  ImGui::BeginDisabled(!why_not.empty());
  const std::string open = "Open layer " + std::to_string(s.layer + 1) + " as the scene";
  if (ImGui::Button(open.c_str())) openModelLayerAsScene(state, view, s.layer);
  ImGui::EndDisabled();
  probeItem("checkpoint.open_layer");
  if (!why_not.empty()) {  // the reason, wrapped (a narrow pane would cut it off)
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    textWrappedAtSpaces(why_not);
    ImGui::PopStyleColor();
    probeItem("checkpoint.open_layer.why_not");
  }
  ImGui::Spacing();
  drawGridFigureExport(s, view.contrast, view.exporter.dpi, view.exporter.size, exportWriter(view.exporter));
}

}  // namespace attnscope::app
