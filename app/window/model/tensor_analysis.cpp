// An opened attention tensor's analysis in the Checkpoint tab: for one layer (the map shown full-size, else the
// layer chosen) each head's type label and scores and statistics, and the heads' cosine similarity: what
// `attnscope view` writes as JSON, from the same arrays::analyseTensorLayer.
#include <imgui.h>

#include <string>
#include <vector>

#include "window/subject/model_session.h"
#include "window/model/model_view.h"
#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

void drawTensorAnalysis(ModelSession& s) {
  const model::HeadLayout& c = s.layout();
  sectionHeader("Attention tensor");
  textWrappedAtSpaces(formatted("%s: %d x %d heads (layers x heads), %d tokens, shown in the centre pane.",
                                s.title().c_str(), c.n_layer, c.n_head, s.forward().n));
  probeItem("tensor.config");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", s.tensorFile().c_str());  // the whole path
  int layer = s.layer + 1;  // from 1, as the window counts; the full-size map follows
  if (stepperInt("layer", "tensor.layer", layer, 1, c.n_layer)) s.layer = layer - 1;
  const arrays::TensorLayerAnalysis& a = s.tensorAnalysis(layer - 1);
  const std::vector<std::string>& names = headTypeScoreNames();
  const char* titles[] = {"prev", "curr", "first", "local", "induct", "dup"};  // names' order
  const int columns = 5 + static_cast<int>(names.size());
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollX | ImGuiTableFlags_SizingFixedFit |
                                ImGuiTableFlags_BordersInnerV;
  const float row_h = ImGui::GetTextLineHeightWithSpacing() + 2 * ImGui::GetStyle().CellPadding.y;
  if (ImGui::BeginTable("tensor_scores", columns, flags,
                        ImVec2(0, static_cast<float>(c.n_head + 1) * row_h + ImGui::GetStyle().ScrollbarSize + 4))) {
    ImGui::TableSetupScrollFreeze(1, 1);
    for (const char* t : {"head", "type", "entropy", "max w", "dist"}) ImGui::TableSetupColumn(t);
    for (const char* t : titles) ImGui::TableSetupColumn(t);
    ImGui::TableHeadersRow();
    for (int h = 0; h < c.n_head; ++h) {
      const HeadTypeScores& scores = a.scores[static_cast<std::size_t>(h)];
      const HeadStats& stats = a.stats[static_cast<std::size_t>(h)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d", h + 1);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(headTypeCell(headTypeLabel(scores)));
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", stats.entropy);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", stats.max_weight);
      ImGui::TableNextColumn();
      ImGui::Text("%.2f", stats.mean_distance);
      for (const std::string& name : names) {
        ImGui::TableNextColumn();
        if (const std::optional<double> v = headTypeScore(scores, name))
          ImGui::Text("%.3f", *v);
        else
          ImGui::TextDisabled("-");  // no query row has such a key (no repeated token, say)
      }
    }
    ImGui::EndTable();
  }
  probeItem("tensor.scores");
  ImGui::TextUnformatted("Cosine similarity of the heads' maps");
  const Matrix& cosine = a.similarity.cosine;  // (heads, heads)
  if (ImGui::BeginTable("tensor_similarity", c.n_head + 1, flags | ImGuiTableFlags_ScrollY,
                        ImVec2(0, std::min(12, c.n_head + 1) * row_h + ImGui::GetStyle().ScrollbarSize + 4))) {
    ImGui::TableSetupScrollFreeze(1, 1);
    ImGui::TableSetupColumn("");
    for (int h = 0; h < c.n_head; ++h) ImGui::TableSetupColumn(("H" + std::to_string(h + 1)).c_str());
    ImGui::TableHeadersRow();
    for (int r = 0; r < c.n_head; ++r) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("H%d", r + 1);
      for (int k = 0; k < c.n_head; ++k) {
        ImGui::TableNextColumn();
        ImGui::Text("%.3f", cosine(r, k));
      }
    }
    ImGui::EndTable();
  }
  probeItem("tensor.similarity");
}

}  // namespace attnscope::app
