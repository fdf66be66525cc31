// Inputs panel: tokens (add, remove, rename, reorder), the input rows as an editable table, randomise,
// positional encodings, and separate key/value rows for cross-attention.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <string>

#include "attnscope/scene/scene_edit.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// One side's token list: rename in place, move up/down, remove; "+" appends.
void tokenList(AppState& state, TokenSide side, const char* id) {
  const Scene& scene = state.scene();
  const std::vector<std::string>& tokens = side == TokenSide::Query ? scene.query_tokens : scene.keyTokens();
  ImGui::PushID(id);
  for (int i = 0; i < static_cast<int>(tokens.size()); ++i) {
    ImGui::PushID(i);
    std::string name;
    ImGui::TextDisabled("%2d", i);  // positions from 0, as on the heatmaps' tooltips and in exports
    ImGui::SameLine();
    if (committedText(std::string(id) + "." + std::to_string(i), tokens[static_cast<std::size_t>(i)],
                      ImGui::GetFontSize() * 8, name))
      state.edit("rename token", [&](Scene& s) {
        auto& list = side == TokenSide::Query ? s.query_tokens : (s.key_tokens.empty() ? s.query_tokens : s.key_tokens);
        list[static_cast<std::size_t>(i)] = name;
      });
    ImGui::SameLine();
    if (ImGui::ArrowButton("##up", ImGuiDir_Up) && i > 0)
      state.edit("move token", [&](Scene& s) { moveToken(s, side, i, i - 1); });
    ImGui::SameLine();
    if (ImGui::ArrowButton("##down", ImGuiDir_Down) && i + 1 < static_cast<int>(tokens.size()))
      state.edit("move token", [&](Scene& s) { moveToken(s, side, i, i + 1); });
    ImGui::SameLine();
    if (ImGui::SmallButton("remove")) state.edit("remove token", [&](Scene& s) { removeToken(s, side, i); });
    ImGui::PopID();
  }
  if (ImGui::Button("+ token"))
    state.edit("add token", [&](Scene& s) {
      const int n = side == TokenSide::Query ? s.nQ() : s.nK();
      insertToken(s, side, n, "tok" + std::to_string(n));
    });
  ImGui::PopID();
}

}  // namespace

void drawInputsPanel(AppState& state, ViewState& view) {
  const Scene& scene = state.scene();
  bool cross = scene.key.has_value();
  if (ImGui::Checkbox("Separate key/value rows (cross-attention)", &cross))
    state.edit("cross-attention", [&](Scene& s) { setCrossAttention(s, cross); });
  cross = scene.key.has_value();  // as it is now, after this frame's edit
  if (ImGui::Button("Randomise inputs"))
    state.edit("randomise inputs", [&](Scene& s) {
      s.query = randomMatrix(s.nQ(), s.d_model, 1.0f, view.presets.fill_seed++);
      if (s.key) s.key = randomMatrix(static_cast<int>(s.key->rows()), s.d_model, 1.0f, view.presets.fill_seed++);
      if (s.value) s.value = randomMatrix(static_cast<int>(s.value->rows()), s.d_model, 1.0f, view.presets.fill_seed++);
    });
  ImGui::SameLine();
  if (ImGui::Button("Add positional encodings")) state.edit("positional encodings", addPositionalEncodings);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Adds sin/cos positions (Vaswani et al.) to every input row");
  showEditError(state, "inputs");

  sectionHeader(cross ? "Query tokens" : "Tokens");
  tokenList(state, TokenSide::Query, "query_tokens");
  sectionHeader(cross ? "Query rows (n_q x d_model)" : "Input rows X (n x d_model)");
  Matrix edited;
  bool continuing = false;
  if (matrixTable("query_rows", scene.query, edited, continuing, "inputs.query"))
    state.edit(
        "query rows", [&](Scene& s) { s.query = edited; }, -1, continuing);
  if (cross) {
    sectionHeader("Key tokens");
    tokenList(state, TokenSide::Key, "key_tokens");
    sectionHeader("Key rows (n_k x d_model)");
    if (matrixTable("key_rows", *scene.key, edited, continuing))
      state.edit(
          "key rows", [&](Scene& s) { s.key = edited; }, -1, continuing);
    sectionHeader("Value rows (n_k x d_model)");
    if (matrixTable("value_rows", scene.valueRows(), edited, continuing))
      state.edit(
          "value rows", [&](Scene& s) { s.value = edited; }, -1, continuing);
  }
}

}  // namespace attnscope::app
