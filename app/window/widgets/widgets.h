// The widgets every panel and view shares (widgets.cpp, axis_labels.cpp, wrapped_text_input.cpp): typed
// fields that commit on focus loss, editable matrix tables, wrapped and red text, colour bars, axis labels. The
// views of a run (window/model, window/runviews) use these without knowing the panels.
#pragma once

#include <imgui.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "attnscope/export/colormap.h"
#include "window/app_state.h"
#include "window/maps/heatmap_view.h"
#include "window/view_state.h"

namespace attnscope::app {

// A head-type label as the window spells it everywhere ("first-token" for the engine's "first_token"); "" for none.
const char* headTypeText(const std::string& label);
// The same in a table's type column: "mixed" where no score reaches 0.5 (an empty cell read as missing data).
inline const char* headTypeCell(const std::string& label) { return label.empty() ? "mixed" : headTypeText(label); }
// Call right after an editing widget: true when this change continues the gesture of the last one (a drag in
// progress), so AppState::edit pushes no new undo entry for it.
bool continuesGesture(bool changed);
// An editable matrix table; returns true and the edited copy in `out` when the user changed a cell this frame;
// `continuing` as continuesGesture(). `probe` names the cells of the first 8 rows and columns for the scripted
// mode: "<probe>.<row>.<col>", 0-based. Drag a cell, or Ctrl+click / double-click it to type a value.
// `row_names`, `col_names` (one per row, column): shown left of the rows and above the columns instead of the
// row index ("<probe>.row.<i>", "<probe>.col.<j>" probed).
bool matrixTable(const char* id, const Matrix& m, Matrix& out, bool& continuing, const char* probe = nullptr,
                 const std::vector<std::string>* row_names = nullptr,
                 const std::vector<std::string>* col_names = nullptr);
// "- [value] +" with named probes "<probe>.minus", "<probe>.plus"; true when the value changed. The typed value
// is an intField (committed on focus loss, refused visibly outside min..max).
bool stepperInt(const char* label, const std::string& probe, int& value, int min, int max);
// A typed number: the text commits when the field loses focus (Enter, Tab, a click elsewhere), not on every key.
// Text that is not a number, not finite, not whole (intField) or outside [min, max] is refused: the value is kept
// and showFieldError(probe), called by the caller under the field's row, shows one red line naming the field,
// what it takes and what was typed, until the next good value. `name` is the field's name in that line;
// `probe` names the field for the scripted mode. True when `value` changed.
bool intField(const char* name, const std::string& probe, int& value, long min, long max, float width);
bool numberField(const char* name, const std::string& probe, double& value, double min, double max, float width);
// A text field that commits when it loses focus (Enter, Tab, a click elsewhere): true then, with the text in
// `typed`. While it is being typed in, `shown` does not overwrite it.
bool committedText(const std::string& probe, const std::string& shown, float width, std::string& typed);
// Shows `message` under the field `probe` from the next frame on (a value the field took but the scene refused),
// or clears it (empty message).
void setFieldError(const std::string& probe, const std::string& message);
// The refusal of the field `probe`, if any, in red (the fields call it themselves; stepperInt under its row).
void showFieldError(const std::string& probe);
// Red text wrapped at the pane's right edge (every error in the window goes through here).
void errorText(const std::string& message);
// Text wrapped at the pane's right edge between words only: ImGui's own wrapping also breaks after '.', which
// split numbers ("0.<newline>066430"). '\n' starts a new line.
void textWrappedAtSpaces(const std::string& text);
// A multi-line text box over `text` that wraps at spaces (wrapped_text_input.cpp); `size` as ImGui's (x <= 0:
// the available width less -x). True when the text changed this frame.
bool wrappedTextInput(const char* id, std::string& text, ImVec2 size);
// printf into a string (up to 1023 characters), for textWrappedAtSpaces.
std::string formatted(const char* format, ...) __attribute__((format(printf, 1, 2)));
// Cells drawn one rectangle each (the diff and mistakes panels): past this many the panels point to the CLI.
constexpr long kMaxDrawnMatrixCells = 250000;
// A matrix (rows, cols) as cells of `cell` pixels from p0: colorAt(map, (v - vmin) / (vmax - vmin)), or
// kMaskedColor where `masked` (same shape) is 1; framed in grey.
void drawMatrixCells(ImDrawList* list, const Matrix& values, ImVec2 p0, float cell, ColorMap map, float vmin,
                     float vmax, const MaskMatrix* masked);
// Under the mouse, a cell of a matrix drawn by drawMatrixCells: outlined, with a tooltip of `what` and its value
// and the query and key tokens of its row and column.
void hoverMatrixCells(const Scene& scene, const Matrix& values, ImVec2 p0, float cell, const char* what);
// A horizontal colour bar of `map` from vmin (left) to vmax, labelled at both ends and the middle.
void drawScaleBar(ImDrawList* list, ImVec2 p0, float width, float height, ColorMap map, float vmin, float vmax);
// The same with its own labels under the left end, the middle and the right end.
void drawScaleBar(ImDrawList* list, ImVec2 p0, float width, float height, ColorMap map,
                  const std::array<std::string, 3>& labels);
// The diverging map from -m (left) through 0 (white) to +m.
void drawDivergingBar(ImDrawList* list, ImVec2 p0, float width, float height, float m);
// Token labels around a map (axis_labels.cpp). A token as an axis label: at most 24 characters, elided with "…".
std::string axisLabel(const std::string& token);
// Text turned 90 degrees anticlockwise, its top edge at `top`, centred on x = `cx` (the key labels when turned).
void addUprightText(ImDrawList* list, float cx, float top, ImU32 color, const char* text);
// Whether key labels under cells of `cell` pixels are turned upright (they then show more of the tokens), and
// the height they take under the map.
bool keyLabelsTurned(const std::vector<std::string>& keys, float cell);
float keyLabelHeight(const std::vector<std::string>& keys, bool turned);
// Query labels left of the map [m0, m1) within `label_w`, key labels below it, of the cells `cells` in view.
void drawAxisLabels(const std::vector<std::string>& queries, const std::vector<std::string>& keys,
                    const CellView& cells, ImVec2 m0, ImVec2 m1, float cell, float label_w, bool turned);
inline bool keyLabelsTurned(const Scene& scene, float cell) { return keyLabelsTurned(scene.keyTokens(), cell); }
inline float keyLabelHeight(const Scene& scene, bool turned) { return keyLabelHeight(scene.keyTokens(), turned); }
inline void drawAxisLabels(const Scene& scene, const CellView& cells, ImVec2 m0, ImVec2 m1, float cell, float label_w,
                           bool turned) {
  drawAxisLabels(scene.query_tokens, scene.keyTokens(), cells, m0, m1, cell, label_w, turned);
}
// The positions first..last (in order) that get a label on an axis of cells of `cell` pixels, a label taking
// `extent` pixels along it from start(i): every k-th, the first and the last always, none overlapping another.
std::vector<int> labelledPositions(int first, int last, float cell, float extent,
                                   const std::function<float(int)>& start);
// The width the query labels take left of a map (at most 24 characters each, + a gap).
float queryLabelWidth(const std::vector<std::string>& queries);
// A whole map of square cells at m0 (drawMatrixCells'): query labels left of it (at most 8 lines wide), key
// labels under it, mapAxesHeight() tall.
void drawMapAxes(const std::vector<std::string>& queries, const std::vector<std::string>& keys, ImVec2 m0, float cell);
float mapAxesHeight(const std::vector<std::string>& keys, float cell);
// The colour bar beside a map (from 0 or top / 1000 at the bottom to `top`) and the contrast control above the
// maps (color_bar.cpp): one ViewState::contrast for the heads, the model grid and the full-size map. The labels
// stand right of the bar, from p1.x + 4: colorBarLabelWidth pixels wide at most (callers keep that room); each
// is probed against the pane ("cut:colorbar.top" when it is not all shown).
void drawColorBar(ImDrawList* list, ImVec2 p0, ImVec2 p1, float top, const MapContrast& contrast);
float colorBarLabelWidth(float top, const MapContrast& contrast);
void drawContrastControl(MapContrast& contrast);
// The side of a cell of an (n_rows, n_cols) map fitted into (avail_w, avail_h) pixels: square cells, the whole
// map at least a pixel (a long scene's cells are far below one).
float mapCell(float avail_w, float avail_h, float n_cols, float n_rows);
// A section title with a rule under it.
void sectionHeader(const char* title);
// The edit error of the last edit, in red, under the widget that caused it: shown only by the panel whose
// edit it was (`source`, AppState::editSource()), so it appears once.
void showEditError(const AppState& state, const char* source);

// A long scene: the result keeps no maps (MapPolicy::Auto past mapsLimitBytes, compute/tiles.h), so weights are
// read through tiles and whole-map analyses are not run in the window (widgets.cpp).
bool longScene(const AppState& state);
// What a panel shows instead of `what` on a long scene: one plain line saying why and what to use instead.
void longSceneNote(const AppState& state, const char* what);

// The one "value norms" switch (ViewState::run.value_norm, Kobayashi et al. 2020), beside the item before it
// when it fits: above a scene's heads and above a run's grid, the same setting. `probe`: its name for the tests
// ("<probe>.value_norm", the note's "<probe>.value_norm_note"); `over`: what the norms are divided by ("the
// scene's largest"); `disabled` greys it out (the rollout on show). When on (and not disabled), a line says so.
void valueNormSwitch(ViewState& view, const std::string& probe, const std::string& note_probe, const char* over,
                     bool disabled = false);

}  // namespace attnscope::app
