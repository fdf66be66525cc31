// Projections panel: one head's W_Q, W_K, W_V and biases, and W_O, as editable tables, with identity,
// random, zero and copy-from-head actions. A per-head edit recomputes only that head.
#include <string>

#include "attnscope/error.h"
#include "attnscope/scene/scene_edit.h"
#include "window/lesson/lesson.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// Fill actions for one matrix; `set` writes the new matrix into a scene copy.
void fillButtons(AppState& state, ViewState& view, const char* id, int rows, int cols, int head,
                 const std::function<void(Scene&, Matrix)>& set) {
  ImGui::PushID(id);
  if (ImGui::SmallButton("identity"))
    state.edit(
        std::string(id) + " identity", [&](Scene& s) { set(s, identityMatrix(rows, cols)); }, head);
  ImGui::SameLine();
  if (ImGui::SmallButton("random"))
    state.edit(
        std::string(id) + " random",
        [&](Scene& s) {
          set(s, randomMatrix(rows, cols, 1.0f / std::sqrt(static_cast<float>(rows)), view.presets.fill_seed++));
        },
        head);
  ImGui::SameLine();
  if (ImGui::SmallButton("zero"))
    state.edit(
        std::string(id) + " zero", [&](Scene& s) { set(s, Matrix::Zero(rows, cols)); }, head);
  ImGui::PopID();
}

// A head's bias by the scene's accessors: b_Q its own, b_K and b_V its own or its key/value head's.
using BiasOf = std::optional<RowVector>& (*)(Scene&, int);

void biasRow(AppState& state, const char* label, int head, BiasOf member, bool query_key) {
  ImGui::PushID(label);
  const HeadParams& params = state.scene().heads[static_cast<std::size_t>(head)];
  const int size = query_key ? params.dK() : state.scene().dV(head);
  const std::optional<RowVector> bias = member(const_cast<Scene&>(state.scene()), head);  // a copy: edits replace heads
  bool on = bias.has_value();
  if (ImGui::Checkbox(label, &on))
    state.edit(
        label,
        [&](Scene& s) {
          auto& b = member(s, head);
          if (on)
            b = RowVector::Zero(size);
          else
            b.reset();
        },
        head);
  if (bias) {
    Matrix as_matrix = *bias, edited;
    bool continuing = false;
    const AxisNames names = dimensionNames(label, 1, size);  // b, and q1.. / k1.. / v1.. as on the Steps tab
    if (matrixTable("bias", as_matrix, edited, continuing, (std::string("proj.") + label).c_str(), &names.rows,
                    &names.cols))
      state.edit(
          label, [&](Scene& s) { member(s, head) = RowVector(edited.row(0)); }, head,
          continuing);
  }
  ImGui::PopID();
}

}  // namespace

void drawProjectionsPanel(AppState& state, ViewState& view) {
  const Scene& scene = state.scene();
  const int heads = scene.numHeads();
  view.projections.head = std::clamp(view.projections.head, 0, heads - 1);
  const int h = view.projections.head;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Head");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  int shown = h + 1;
  if (ImGui::SliderInt("##head", &shown, 1, heads, "%d", ImGuiSliderFlags_AlwaysClamp))
    view.projections.head = std::clamp(shown, 1, heads) - 1;
  probeItem("proj.head");
  // Copying replaces this head's W_Q, W_K, W_V and biases by another head's.
  view.projections.copy_from_head = std::clamp(view.projections.copy_from_head, 1, heads);  // heads may have been removed
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Copy from head");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Replaces head %d's W_Q, W_K, W_V and biases by a copy of another head's", h + 1);
  ImGui::SameLine();
  intField("copy from head", "proj.copy_from", view.projections.copy_from_head, 1, heads, ImGui::GetFontSize() * 3);
  ImGui::SameLine();
  if (ImGui::Button("Copy"))
    state.edit("copy head", [&](Scene& s) {
      s.heads[static_cast<std::size_t>(h)] = s.heads[static_cast<std::size_t>(view.projections.copy_from_head - 1)];
    });
  probeItem("proj.copy");
  showFieldError("proj.copy_from");
  showEditError(state, "projections");

  // Matrices are looked up again after each edit: an edit replaces the scene's heads, so a reference taken
  // before it would dangle.
  const int d = scene.d_model;
  // W_K and W_V through the scene's accessors: in a grouped scene an edit changes the group's shared matrix.
  using MatrixOf = Matrix& (*)(Scene&, int);
  const struct {
    const char* name;
    const char* probe;
    const char* short_name;  // the walkthrough's, for its rows' and columns' names
    MatrixOf member;
  } mats[] = {{"W_Q (d_model x d_k)", "proj.w_q", "W_Q", [](Scene& s, int i) -> Matrix& { return s.heads[static_cast<std::size_t>(i)].w_q; }},
              {"W_K (d_model x d_k)", "proj.w_k", "W_K", [](Scene& s, int i) -> Matrix& { return s.wK(i); }},
              {"W_V (d_model x d_v)", "proj.w_v", "W_V", [](Scene& s, int i) -> Matrix& { return s.wV(i); }}};
  if (scene.grouped()) {  // wrapped: on one line it ran off the pane (gui_clipping)
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    textWrappedAtSpaces(formatted("W_K, W_V and their biases are key/value head %d's, shared by its query heads",
                                  scene.kvOf(h) + 1));
    ImGui::PopStyleColor();
  }
  for (const auto& entry : mats) {
    sectionHeader(entry.name);
    MatrixOf member = entry.member;
    const auto current = [&]() -> const Matrix& { return member(const_cast<Scene&>(state.scene()), h); };
    fillButtons(state, view, entry.name, d, static_cast<int>(current().cols()), h,
                [h, member](Scene& s, Matrix m) { member(s, h) = std::move(m); });
    Matrix edited;
    bool continuing = false;
    // Rows dim 1.., columns q1.. / k1.. / v1..: the Steps tab's names for the same matrix.
    const AxisNames names = dimensionNames(entry.short_name, current().rows(), current().cols());
    if (matrixTable(entry.name, current(), edited, continuing, entry.probe, &names.rows, &names.cols))
      state.edit(
          entry.name, [&](Scene& s) { member(s, h) = edited; }, h, continuing);
  }
  sectionHeader("Biases");
  biasRow(state, "b_Q", h, [](Scene& s, int i) -> std::optional<RowVector>& { return s.heads[static_cast<std::size_t>(i)].b_q; }, true);
  biasRow(state, "b_K", h, [](Scene& s, int i) -> std::optional<RowVector>& { return s.bK(i); }, true);
  biasRow(state, "b_V", h, [](Scene& s, int i) -> std::optional<RowVector>& { return s.bV(i); }, false);

  sectionHeader("W_O (sum of d_v x d_model), all heads");
  bool has_w_o = scene.w_o.has_value();
  if (ImGui::Checkbox("use W_O (off: the output is the concatenation)", &has_w_o))
    state.edit("W_O", [&](Scene& s) {
      if (has_w_o)
        s.w_o = identityMatrix(s.concatWidth(), s.d_model);
      else
        s.w_o.reset(), s.b_o.reset();
    });
  if (scene.w_o) {
    fillButtons(state, view, "W_O", scene.concatWidth(), d, -1, [](Scene& s, Matrix m) { s.w_o = std::move(m); });
    Matrix edited;
    bool continuing = false;
    const AxisNames names = dimensionNames("W_O", scene.w_o->rows(), scene.w_o->cols());  // c1.. x dim 1..
    if (matrixTable("W_O", *scene.w_o, edited, continuing, "proj.w_o", &names.rows, &names.cols))
      state.edit(
          "W_O", [&](Scene& s) { s.w_o = edited; }, -1, continuing);
  }
}

}  // namespace attnscope::app
