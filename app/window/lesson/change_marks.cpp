// The cells an edit changed (lesson.h): the shown weights kept from one scene edit to the next, compared when the
// new result lands. Small scenes only (the kept copy is every head's (n_q, n_k) map).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "window/lesson/lesson.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

constexpr long kMaxMarkedCells = 1L << 16;  // all heads' cells together: a copy each edit is cheap below this
constexpr double kMarkSeconds = 3.0;        // how long the highlight takes to fade
// A change shows in the maps' 3 decimals from 0.0005; smaller ones are float noise of a recompute, not the edit.
constexpr float kChanged = 5e-4f;

struct Marks {
  unsigned seen_edits = 0;
  bool primed = false;
  std::vector<Matrix> last;    // per head (n_q, n_k): the weights shown before the latest edit landed
  std::vector<Matrix> before;  // per head (n_q, n_k): the weight before the edit where it changed, else NaN
  double since = -1e9;         // ImGui time the latest marks were made
} g_marks;

bool sameShapes(const std::vector<Matrix>& a, const Result& r) {
  if (a.size() != r.heads.size()) return false;
  for (std::size_t h = 0; h < a.size(); ++h)
    if (a[h].rows() != r.heads[h].weights.rows() || a[h].cols() != r.heads[h].weights.cols()) return false;
  return true;
}

}  // namespace

void trackChanges(const AppState& state) {
  if (state.resultPending() || state.weightsPending()) return;  // compared once the edit's result has landed
  const Result& result = state.result();
  long cells = 0;
  for (const HeadResult& hr : result.heads) cells += static_cast<long>(hr.weights.size());
  if (cells == 0 || cells > kMaxMarkedCells) {
    g_marks = Marks{state.sceneEdits(), false, {}, {}, -1e9};
    return;
  }
  const bool edited = state.sceneEdits() != g_marks.seen_edits;
  g_marks.seen_edits = state.sceneEdits();
  if (edited && g_marks.primed && sameShapes(g_marks.last, result)) {
    const double now = ImGui::GetTime();
    // A change within the last marks' life (a drag) keeps each cell's first "before".
    const bool chained = now - g_marks.since < kMarkSeconds && g_marks.before.size() == result.heads.size();
    std::vector<Matrix> before;
    bool any = false;
    for (std::size_t h = 0; h < result.heads.size(); ++h) {
      const Matrix& now_w = result.heads[h].weights;
      Matrix b = Matrix::Constant(now_w.rows(), now_w.cols(), std::numeric_limits<float>::quiet_NaN());
      for (Eigen::Index i = 0; i < now_w.rows(); ++i)
        for (Eigen::Index j = 0; j < now_w.cols(); ++j) {
          const float was =
              chained && !std::isnan(g_marks.before[h](i, j)) ? g_marks.before[h](i, j) : g_marks.last[h](i, j);
          if (std::fabs(now_w(i, j) - was) >= kChanged) b(i, j) = was, any = true;
        }
      before.push_back(std::move(b));
    }
    if (any) g_marks.before = std::move(before), g_marks.since = now;
  } else if (edited) {
    g_marks.before.clear();  // a new shape: nothing to compare with
  }
  if (edited || !g_marks.primed) {
    g_marks.last.clear();
    for (const HeadResult& hr : result.heads) g_marks.last.push_back(hr.weights);
    g_marks.primed = true;
  }
}

float changeMarkAlpha() {
  const double age = ImGui::GetTime() - g_marks.since;
  return age < 0 || age >= kMarkSeconds ? 0.0f : static_cast<float>(1.0 - age / kMarkSeconds);
}

float weightBeforeEdit(int head, int row, int col) {
  const auto h = static_cast<std::size_t>(head);
  if (head < 0 || h >= g_marks.before.size() || row < 0 || row >= g_marks.before[h].rows() || col < 0 ||
      col >= g_marks.before[h].cols())
    return std::numeric_limits<float>::quiet_NaN();
  return g_marks.before[h](row, col);
}

void drawChangeMarks(ImDrawList* list, int head, ImVec2 m0, ImVec2 m1, const CellView& cells, float cell) {
  const float alpha = changeMarkAlpha();
  const auto h = static_cast<std::size_t>(head);
  // Cells under 12 px would be all outline (a 16-head grid turned orange): there the hover alone says it.
  if (alpha <= 0 || h >= g_marks.before.size() || cell < 12) return;
  const Matrix& before = g_marks.before[h];
  const int i0 = std::max(0, static_cast<int>(cells.row0)),
            i1 = std::min<int>(before.rows(), static_cast<int>(std::ceil(cells.row1)));
  const int j0 = std::max(0, static_cast<int>(cells.col0)),
            j1 = std::min<int>(before.cols(), static_cast<int>(std::ceil(cells.col1)));
  list->PushClipRect(m0, m1, true);
  const ImU32 amber = IM_COL32(255, 200, 60, static_cast<int>(255 * alpha));
  for (int i = i0; i < i1; ++i)
    for (int j = j0; j < j1; ++j) {
      if (std::isnan(before(i, j))) continue;
      const ImVec2 c0(m0.x + (static_cast<float>(j) - cells.col0) * cell,
                      m0.y + (static_cast<float>(i) - cells.row0) * cell);
      list->AddRect(ImVec2(c0.x + 2, c0.y + 2), ImVec2(c0.x + cell - 2, c0.y + cell - 2), amber, 0, 0, 3.0f);
    }
  list->PopClipRect();
}

void changeTooltipLine(int head, int row, int col) {
  const float was = weightBeforeEdit(head, row, col);
  if (std::isnan(was)) return;
  char text[48];
  std::snprintf(text, sizeof text, "before the last edit: %.4f", static_cast<double>(was));
  ImGui::TextColored(ImVec4(1.0f, 0.78f, 0.25f, 1.0f), "%s", text);
  probeNote("hover.before", text);
}

}  // namespace attnscope::app
