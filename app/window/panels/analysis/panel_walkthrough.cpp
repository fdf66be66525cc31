// Walkthrough panel: the worked example step by step (Prev/Next, the arrow keys, Home and End), each matrix as a
// small table and heatmap, the tutorial's printed numbers beside the computed ones with disagreements highlighted.
// Built from the current scene, so an edit updates every step (and drops comparisons that no longer apply).
// The scene's inputs shown in the steps (X, W_Q, W_K, W_V, biases, W_O) are editable tables, as in the Inputs
// and Projections panels; computed matrices are read-only.
#include <GLFW/glfw3.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "attnscope/export/colormap.h"
#include "attnscope/analysis/walkthrough.h"
#include "window/lesson/lesson.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

const ImVec4 kDisagree(1.0f, 0.42f, 0.38f, 1.0f);
const ImVec4 kEdited(0.95f, 0.78f, 0.35f, 1.0f);  // amber: not wrong, just no longer comparable

// A matrix as a grid of numbers drawn straight into the draw list (an ImGui table per matrix cost several ms a
// frame on llvmpipe), its rows and columns named (tokens, dimensions: lesson.h) in grey left of and above it.
// `disagreements` marks cells in red with both numbers on hover; `dim` greys the numbers; `masked` (null: none)
// writes "masked" in grey where a key is masked, as the heads' maps do. `probe` names the labels
// ("<probe>.row.<i>", "<probe>.col.<j>").
// `printed_decimals` >= 0: numbers as the text printed them, with that many decimals ("0.71", "0"); else computed
// ones, to 4 decimals without trailing zeros ("0.7071", "0", "2"), as the CLI writes them (walkthrough.h).
// `wrong_decimals`: the printed numbers' decimals, for the disagreements' tooltips.
void numberGrid(const Matrix& m, const std::vector<Disagreement>& disagreements, bool dim, int printed_decimals,
                const AxisNames& names, const std::string& probe, const MaskMatrix* masked = nullptr,
                int wrong_decimals = 2) {
  const Eigen::Index rows = std::min<Eigen::Index>(m.rows(), 16), cols = std::min<Eigen::Index>(m.cols(), 16);
  const float pad = ImGui::GetFontSize() * 0.3f;
  const auto text_of = [&](double x) {
    return printed_decimals >= 0 && std::isfinite(x) ? printedNumber(x, printed_decimals) : computedNumber(x);
  };
  float cell_w = std::max(ImGui::CalcTextSize("-0.00").x, masked ? ImGui::CalcTextSize("masked").x : 0.0f);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) cell_w = std::max(cell_w, ImGui::CalcTextSize(text_of(m(i, j)).c_str()).x);
  for (Eigen::Index j = 0; j < cols; ++j)
    cell_w = std::max(cell_w, ImGui::CalcTextSize(names.cols[static_cast<std::size_t>(j)].c_str()).x);
  cell_w += 2 * pad;
  float label_w = 0;
  for (Eigen::Index i = 0; i < rows; ++i)
    label_w = std::max(label_w, ImGui::CalcTextSize(names.rows[static_cast<std::size_t>(i)].c_str()).x);
  label_w += 2 * pad;
  const float cell_h = ImGui::GetTextLineHeightWithSpacing();
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const ImVec2 p0(top.x + label_w, top.y + cell_h);  // the numbers' top left, under the column names
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ImU32 grey = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  for (Eigen::Index j = 0; j < cols; ++j) {
    const char* name = names.cols[static_cast<std::size_t>(j)].c_str();
    drawProbedText(list, probe + ".col." + std::to_string(j),
                   ImVec2(p0.x + cell_w * (j + 1) - ImGui::CalcTextSize(name).x - pad, top.y), grey, name);
    probeNote(probe + ".col." + std::to_string(j), name);
  }
  for (Eigen::Index i = 0; i < rows; ++i) {
    drawProbedText(list, probe + ".row." + std::to_string(i), ImVec2(top.x, p0.y + cell_h * i + 1), grey,
                   names.rows[static_cast<std::size_t>(i)].c_str());
    probeNote(probe + ".row." + std::to_string(i), names.rows[static_cast<std::size_t>(i)]);
  }
  list->AddRectFilled(p0, ImVec2(p0.x + cell_w * cols, p0.y + cell_h * rows), IM_COL32(255, 255, 255, 14));
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) {
      const Disagreement* wrong = nullptr;
      for (const Disagreement& d : disagreements)
        if (d.row == i && d.col == j) wrong = &d;
      const bool is_masked = masked && i < masked->rows() && j < masked->cols() && (*masked)(i, j);
      const std::string shown = is_masked ? "masked" : text_of(m(i, j));
      const char* text = shown.c_str();
      if (i < 8 && j < 8) probeNote(probe + "." + std::to_string(i) + "." + std::to_string(j), shown);
      const ImVec2 c0(p0.x + cell_w * j, p0.y + cell_h * i);
      const ImU32 color = wrong ? ImGui::GetColorU32(kDisagree)
                                : (dim || is_masked ? grey : ImGui::GetColorU32(ImGuiCol_Text));
      list->AddText(ImVec2(c0.x + cell_w - ImGui::CalcTextSize(text).x - pad, c0.y + 1), color, text);
      if (wrong && ImGui::IsWindowHovered() && mouse.x >= c0.x && mouse.x < c0.x + cell_w && mouse.y >= c0.y &&
          mouse.y < c0.y + cell_h)
        ImGui::SetTooltip("printed %s, computed %s, difference %s", printedNumber(wrong->printed, wrong_decimals).c_str(),
                          computedNumber(wrong->computed).c_str(), computedNumber(wrong->difference(), 4, true).c_str());
    }
  ImGui::Dummy(ImVec2(label_w + cell_w * cols, cell_h * (rows + 1)));
}

// Weights as a small heatmap of ImGui rectangles (a few cells: no texture needed); masked cells in the heads'
// maps' grey (kMaskedColor), not as weight 0.
void smallHeatmap(const Matrix& m, const MaskMatrix* masked) {
  const float cell = ImGui::GetFontSize() * 1.2f;
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImDrawList* list = ImGui::GetWindowDrawList();
  const Eigen::Index rows = std::min<Eigen::Index>(m.rows(), 32), cols = std::min<Eigen::Index>(m.cols(), 32);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) {
      const bool is_masked = masked && i < masked->rows() && j < masked->cols() && (*masked)(i, j);
      const Rgb8 c = is_masked ? kMaskedColor : colorAt(ColorMap::Viridis, m(i, j));
      const ImVec2 c0(p0.x + j * cell, p0.y + i * cell);
      list->AddRectFilled(c0, ImVec2(c0.x + cell - 1, c0.y + cell - 1), IM_COL32(c.r, c.g, c.b, 255));
    }
  ImGui::Dummy(ImVec2(cols * cell, rows * cell));
}

// A step's matrix that is one of the scene's inputs (X, a head's W and b, W_O), so the walkthrough edits it in
// place: `set` writes the edited matrix into a scene copy; `head` >= 0 when only that head needs recomputing.
struct SceneInput {
  std::function<void(Scene&, const Matrix&)> set;
  int head = -1;
};

std::optional<SceneInput> sceneInput(const Step& step, const std::string& name) {
  const auto bias = [](const Matrix& m) { return RowVector(m.row(0)); };  // a bias step shows (1, d)
  if (name == "X") return SceneInput{[](Scene& s, const Matrix& m) { s.query = m; }};
  if (name == "X_key") return SceneInput{[](Scene& s, const Matrix& m) { s.key = m; }};
  if (name == "X_value") return SceneInput{[](Scene& s, const Matrix& m) { s.value = m; }};
  if (name == "W_O") return SceneInput{[](Scene& s, const Matrix& m) { s.w_o = m; }};
  if (name == "b_O") return SceneInput{[bias](Scene& s, const Matrix& m) { s.b_o = bias(m); }};
  const int h = step.head;
  if (h < 0) return std::nullopt;
  const auto head = [h](Scene& s) -> HeadParams& { return s.heads[static_cast<std::size_t>(h)]; };
  if (name == "W_Q") return SceneInput{[head](Scene& s, const Matrix& m) { head(s).w_q = m; }, h};
  if (name == "W_K") return SceneInput{[h](Scene& s, const Matrix& m) { s.wK(h) = m; }, h};  // or its group's
  if (name == "W_V") return SceneInput{[h](Scene& s, const Matrix& m) { s.wV(h) = m; }, h};
  if (name == "b_Q") return SceneInput{[head, bias](Scene& s, const Matrix& m) { head(s).b_q = bias(m); }, h};
  if (name == "b_K") return SceneInput{[h, bias](Scene& s, const Matrix& m) { s.bK(h) = bias(m); }, h};
  if (name == "b_V") return SceneInput{[h, bias](Scene& s, const Matrix& m) { s.bV(h) = bias(m); }, h};
  return std::nullopt;
}

}  // namespace

void drawWalkthroughPanel(AppState& state, ViewState& view) {
  if (longScene(state)) {  // its steps show whole (n, n) score and weight matrices
    longSceneNote(state, "The walkthrough");
    return;
  }
  const std::shared_ptr<const Walkthrough> held = state.walkthrough();  // alive through an edit below
  const Walkthrough& walk = *held;
  const int count = static_cast<int>(walk.steps.size());
  if (count == 0) {
    ImGui::TextWrapped("No steps for this scene.");
    return;
  }
  const ImGuiIO& io = ImGui::GetIO();
  const bool keys = !io.WantTextInput;
  // Disabled at either end, so that a click that would do nothing says so.
  ImGui::BeginDisabled(view.walk.step <= 0);
  if ((ImGui::Button("< Prev") || (keys && ImGui::IsKeyPressed(GLFW_KEY_LEFT))) && view.walk.step > 0) --view.walk.step;
  ImGui::EndDisabled();
  probeItem("walk.prev");
  ImGui::SameLine();
  ImGui::BeginDisabled(view.walk.step + 1 >= count);
  if ((ImGui::Button("Next >") || (keys && ImGui::IsKeyPressed(GLFW_KEY_RIGHT))) && view.walk.step + 1 < count)
    ++view.walk.step;
  ImGui::EndDisabled();
  probeItem("walk.next");
  if (keys && ImGui::IsKeyPressed(GLFW_KEY_HOME)) view.walk.step = 0;  // the first step and the last
  if (keys && ImGui::IsKeyPressed(GLFW_KEY_END)) view.walk.step = count - 1;
  view.walk.step = std::clamp(view.walk.step, 0, count - 1);
  ImGui::SameLine();
  ImGui::Text("step %d of %d", view.walk.step + 1, count);
  probeNote("walk.step", std::to_string(view.walk.step + 1));
  // The text's misprints where they are: this step's in red, each in a sentence (the first three; the rest
  // counted); on the other steps one line naming the steps that hold them, each a button that goes there.
  const std::vector<std::string> sentences = disagreementSentences(walk.steps[static_cast<std::size_t>(view.walk.step)]);
  if (!sentences.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kDisagree);
    std::string said;
    for (std::size_t k = 0; k < sentences.size() && k < 3; ++k) said += (k ? " " : "") + sentences[k];
    if (sentences.size() > 3)
      said += formatted(" %zu more number%s disagree%s (red below; hover for both).", sentences.size() - 3,
                        sentences.size() == 4 ? "" : "s", sentences.size() == 4 ? "s" : "");
    textWrappedAtSpaces(said);
    probeNote("walk.disagreements", said);
    probeItem("walk.disagreements");
    ImGui::PopStyleColor();
  } else if (const std::vector<MisprintedStep> misprinted = misprintedSteps(walk); !misprinted.empty()) {
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("Misprinted in the text:");
    std::string said;
    for (std::size_t k = 0; k < misprinted.size(); ++k) {
      const MisprintedStep& m = misprinted[k];
      const std::string label = "step " + std::to_string(m.step + 1);
      ImGui::SameLine();
      if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize(label.c_str()).x + ImGui::GetFontSize()) ImGui::NewLine();
      if (ImGui::SmallButton((label + "##errata" + std::to_string(k)).c_str())) view.walk.step = m.step;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s: numbers the text prints differ from the computed ones", m.what.c_str());
      probeItem("walk.errata." + std::to_string(k));
      said += (k ? ", " : "") + label + " (" + m.what + ")";
    }
    probeNote("walk.errata", said);
  }
  if (view.walk.step == 0) {  // where a reader begins: what a step is and how to go on
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.55f, 0.75f, 1.0f, 1.0f));
    textWrappedAtSpaces("Start here: each step computes one matrix of the worked example from the ones before it. "
                        "Next > (or the Right arrow key) goes on; the heatmaps in the centre are the result.");
    ImGui::PopStyleColor();
    probeItem("walk.start");
  }

  const Step& step = walk.steps[static_cast<std::size_t>(view.walk.step)];
  view.walk.head = step.head;  // the heads panel outlines this head
  ImGui::Spacing();
  ImGui::TextColored(ImVec4(0.55f, 0.75f, 1.0f, 1.0f), "%s", step.title.c_str());
  probeItem("walk.title");
  probeItem("walk.step" + std::to_string(view.walk.step));  // which step is shown, for the GUI test
  if (!step.note.empty()) textWrappedAtSpaces(step.note);
  showEditError(state, "walkthrough");
  // The scene's masked cells (n_q, n_k), for the scores', weights' and thumbnail's "masked" (as on the maps).
  const Scene& scene = state.scene();
  const MaskMatrix masked =
      scene.hasMask() ? MaskMatrix((allowedMask(scene).array() == 0).cast<std::uint8_t>()) : MaskMatrix();
  for (const StepMatrix& sm : step.matrices) {
    const std::optional<SceneInput> input = sceneInput(step, sm.name);
    const AxisNames names = walkAxisNames(sm, step.head >= 0);
    const bool by_key =
        sm.name == "weights" && masked.rows() == sm.computed.rows() && masked.cols() == sm.computed.cols();
    const MaskMatrix* mask = by_key ? &masked : nullptr;
    sectionHeader(sm.name.c_str());
    if (input) {
      // An input of the scene: edited in place through the one edit path, so every step follows it.
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
      ImGui::TextWrapped("An input of the scene: drag a value, or Ctrl+click to type one.");
      ImGui::PopStyleColor();
      Matrix edited;
      bool continuing = false;
      const std::string probe = "walk." + sm.name;
      if (matrixTable(probe.c_str(), sm.computed, edited, continuing, probe.c_str(), &names.rows, &names.cols))
        state.edit(
            "walkthrough " + sm.name, [&](Scene& s) { input->set(s, edited); }, input->head, continuing);
    } else if (sm.printed) {
      ImGui::BeginGroup();
      ImGui::TextDisabled("computed");
      const int decimals = sm.printedDecimals();
      numberGrid(sm.computed, sm.disagreements, false, -1, names, "walk." + sm.name, mask, decimals);
      ImGui::EndGroup();
      ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
      ImGui::BeginGroup();
      ImGui::TextDisabled("printed in the text");
      numberGrid(*sm.printed, {}, true, decimals, names, "walk." + sm.name + ".printed", mask);
      ImGui::EndGroup();
      if (!sm.disagreements.empty()) {
        // The precision as the text's own: "+-0.005" for two decimals, "+-0.5" for whole numbers.
        const std::string said = formatted("%zu value%s beyond the printed precision (+-%s)", sm.disagreements.size(),
                                           sm.disagreements.size() == 1 ? " differs" : "s differ",
                                           computedNumber(sm.printed_tolerance, decimals + 1).c_str());
        ImGui::PushStyleColor(ImGuiCol_Text, kDisagree);
        textWrappedAtSpaces(said);
        ImGui::PopStyleColor();
        probeNote("walk." + sm.name + ".precision", said);
      }
    } else {
      numberGrid(sm.computed, {}, false, -1, names, "walk." + sm.name, mask);
    }
    if (sm.printed_dropped) {
      ImGui::PushStyleColor(ImGuiCol_Text, kEdited);
      textWrappedAtSpaces(formatted("The text's printed values of %s no longer apply: you edited an input of %s, "
                                    "so only the computed values are shown (Undo brings the worked example back).",
                                    sm.name.c_str(), sm.name.c_str()));
      probeNote("walk.dropped." + sm.name,
                formatted("The text's printed values of %s no longer apply", sm.name.c_str()));
      ImGui::PopStyleColor();
      probeItem("walk.dropped." + sm.name);
    }
    if (sm.name == "weights") {
      smallHeatmap(sm.computed, mask);
      probeItem("walk.heatmap");
    }
  }
}

}  // namespace attnscope::app
