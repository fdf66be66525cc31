// Export panel: the current head, all heads, the similarity matrix (with its dendrogram in cluster order) or
// B - A against the Diff tab's pinned A to PNG, SVG, CSV or NPY, through the same exporter as `attnscope
// export`; a message says where the file went or why not.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <string>

#include "attnscope/export/export.h"
#include "window/panels/panels.h"
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

// "" when `path` ends in `extension` (any case), else the line that says what disagrees.
std::string extensionMismatch(const std::string& path, const char* format, const char* extension) {
  const std::size_t dot = path.rfind('.');
  std::string ext = dot == std::string::npos || path.find('/', dot) != std::string::npos ? "" : path.substr(dot);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == extension) return "";
  return std::string("path: the format is ") + format + ", so the file should end in " + extension + "; it ends in " +
         (ext.empty() ? std::string("no extension") : "'" + path.substr(dot) + "'") +
         ". Change the path or pick the format.";
}

}  // namespace

void drawExportPanel(AppState& state, ViewState& view) {
  const int heads = state.scene().numHeads();
  const char* what[] = {"one head", "all heads", "similarity", "B - A"};  // in ExportWhat's order
  const char* formats[] = {"PNG", "SVG", "CSV", "NPY"};
  const char* extensions[] = {".png", ".svg", ".csv", ".npy"};
  ImGui::TextUnformatted("What");
  for (int i = 0; i < 4; ++i) {
    sameLineIfFits(radioWidth(what[i]));
    ImGui::BeginDisabled(i == 3 && !view.diff_pinned);  // B - A needs the Diff tab's snapshot A
    ImGui::RadioButton(what[i], &view.export_what, i);
    ImGui::EndDisabled();
    probeItem(std::string("export.what.") + std::to_string(i));
  }
  if (view.export_what == 3 && !view.diff_pinned) view.export_what = 1;
  int& head = view.export_head;
  if (view.export_what == 0) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::SliderInt("head", &head, 1, heads, "%d", ImGuiSliderFlags_AlwaysClamp);  // a typed 0 shows as 1
    probeItem("export.head");
    head = std::clamp(head, 1, heads);
  }
  ImGui::TextUnformatted("Format");
  for (int i = 0; i < 4; ++i) {
    sameLineIfFits(radioWidth(formats[i]));
    if (ImGui::RadioButton(formats[i], &view.export_format, i)) {
      // keep the path's extension in step with the format
      const std::size_t dot = view.export_path.rfind('.');
      view.export_path =
          view.export_path.substr(0, dot == std::string::npos ? view.export_path.size() : dot) + extensions[i];
    }
  }
  if (view.export_what == 2) {
    ImGui::RadioButton("cosine", &view.metric, 0);
    ImGui::SameLine();
    ImGui::RadioButton("Jensen-Shannon", &view.metric, 1);
    ImGui::Checkbox("cluster order with dendrogram", &view.cluster_order);
  }
  if (view.export_format <= 1) ImGui::Checkbox("write each value in its cell", &view.export_annotate);
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 4);
  ImGui::InputText("path", &view.export_path);
  probeItem("export.path");
  // A path whose extension disagrees with the format would hold bytes its name does not promise: said here,
  // and the export refused until one of them changes.
  const std::string mismatch =
      extensionMismatch(view.export_path, formats[view.export_format], extensions[view.export_format]);
  if (!mismatch.empty()) {
    errorText(mismatch);
    probeItem("export.mismatch");
  }
  ImGui::BeginDisabled(!mismatch.empty());
  if (ImGui::Button("Export")) {
    ExportRequest request;
    request.what = static_cast<ExportWhat>(view.export_what);
    request.head = head - 1;
    request.format = static_cast<ExportFormat>(view.export_format);
    request.metric = view.metric == 0 ? SimilarityMetric::Cosine : SimilarityMetric::JensenShannon;
    request.annotate = view.export_annotate;
    request.path = view.export_path;
    request.dendrogram = view.export_what == 2 && view.cluster_order;
    if (view.export_what == 3) request.baseline = &view.diff_a;
    try {
      exportResult(state.scene(), state.result(), request);
      view.export_message = "Wrote " + view.export_path;
      view.export_failed = false;
    } catch (const std::exception& e) {
      view.export_message = std::string("Not written: ") + e.what();
      view.export_failed = true;
    }
  }
  ImGui::EndDisabled();
  probeItem("export.button");
  if (view.export_failed)
    errorText(view.export_message);
  else if (!view.export_message.empty())
    ImGui::TextWrapped("%s", view.export_message.c_str());
}

}  // namespace attnscope::app
