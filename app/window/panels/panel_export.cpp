// Export panel: the current head, all heads, the similarity matrix (with its dendrogram in cluster order) or
// B - A against the Diff tab's pinned A to PNG, SVG, CSV or NPY, through the same exporter as `attnscope
// export`; a message says where the file went or why not.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <exception>
#include <string>

#include "attnscope/export/export.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

void drawExportPanel(AppState& state, ViewState& view) {
  const int heads = state.scene().numHeads();
  const char* what[] = {"one head", "all heads", "similarity", "B - A"};  // in ExportWhat's order
  const char* formats[] = {"PNG", "SVG", "CSV", "NPY"};
  const char* extensions[] = {".png", ".svg", ".csv", ".npy"};
  ImGui::TextUnformatted("What");
  for (int i = 0; i < 4; ++i) {
    ImGui::SameLine();
    ImGui::BeginDisabled(i == 3 && !view.diff_pinned);  // B - A needs the Diff tab's snapshot A
    ImGui::RadioButton(what[i], &view.export_what, i);
    ImGui::EndDisabled();
  }
  if (view.export_what == 3 && !view.diff_pinned) view.export_what = 1;
  int& head = view.export_head;
  if (view.export_what == 0) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::SliderInt("head", &head, 1, heads);
    head = std::clamp(head, 1, heads);
  }
  ImGui::TextUnformatted("Format");
  for (int i = 0; i < 4; ++i) {
    ImGui::SameLine();
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
    } catch (const std::exception& e) {
      view.export_message = std::string("Not written: ") + e.what();
    }
  }
  probeItem("export.button");
  if (!view.export_message.empty()) ImGui::TextWrapped("%s", view.export_message.c_str());
}

}  // namespace attnscope::app
