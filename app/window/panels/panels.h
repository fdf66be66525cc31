// The window's panels, one file each (panel_*.cpp), and the view state they share (what is selected, zoom,
// colour scale); the scene itself lives in AppState and changes only through AppState::edit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "window/app_state.h"
#include "attnscope/analysis/analysis.h"
#include "attnscope/export/colormap.h"
#include "attnscope/export/export.h"
#include "attnscope/analysis/walkthrough.h"
#include "window/heatmap_view.h"

namespace attnscope::app {

class ModelSession;  // window/model/model_session.h: the opened checkpoint and its forward
struct OpenArraysForm;  // window/model/open_arrays.h: the Open form for .npy, .npz and .safetensors files

struct ViewState {
  int focus_head = -1;                 // >= 0: the heads panel shows this head enlarged
  int compare_a = -1, compare_b = -1;  // >= 0: the heads panel shows these two side by side (from similarity)
  CellView zoom;                       // the enlarged head's visible cells
  MapContrast contrast;  // every map's colours (heatmap_view.h): the heads, the model grid, the full map, exports
  int metric = 0;  // similarity: 0 cosine, 1 Jensen-Shannon
  // The statistics table's columns when all of them do not fit the pane: 0 the scores by position, 1 the scores
  // by token (and the type), 2 the statistics (and importance).
  int stats_columns = 0;
  // The token view (runviews/token_view.cpp): the token picked (-1 none), its row (0) or column (1), one head or -1 the mean.
  int model_token = -1, token_to_it = 0, token_head = -1;
  int model_rollout = 0;  // the centre's view of a run: 0 its heads (the grid or one map), 1 its rollout
  // The run's grid and full-size map weighted by value norms (model_grid_tiles.h's valueNormScales): 1 on.
  int model_value_norm = 0;
  // The subject pane's "Find heads" map: an index into headTypeScoreNames(), then composition through the query,
  // key and value, then direct logit attribution (runviews/head_scores_map.cpp's list).
  int find_score = 0;
  int comp_layer = -1, comp_head = -1;  // the head whose composition with later heads is shown (-1: the shown one)
  int dla_position = -1;                // the attributed position (from 0; -1: the last)
  int dla_target = -1;                  // the target token's id (-1: the top prediction)
  std::string dla_target_text;          // as typed: an id or a token's text
  int walk_step = 0;
  int walk_head = -1;      // the head the shown walkthrough step is about (-1: none or tab hidden)
  int seed = 1;                 // the presets' seed, as typed (0 .. 2^31 - 1)
  std::uint64_t fill_seed = 1;  // for the random entries a resize or a random fill adds; never shown
  int random_n = 16, random_heads = 4, random_d_model = 16;
  std::string sentence = "The cat sat on the mat because it was tired.";
  int projection_head = 0;  // the projections panel's head
  int copy_from_head = 1;   // 1-based, as shown
  std::string export_path = "attnscope_export.png";
  int export_what = 1, export_format = 0;
  // A model's or tensor's export: -1 = what is on show (the focused map, else the grid); 0 the focused map, 1 the
  // layer's heads, 2 every layer (the grid), 3 the layer's heads' similarity.
  int model_export_what = -1;
  int export_head = 1;  // 1-based, as shown
  bool export_annotate = false;
  int export_dpi = kDefaultDpi;            // a PNG figure's pixels per inch (export.h)
  bool export_cluster_order = false;      // the similarity figure in cluster order: the Export tab's own choice
  std::string export_message;
  bool export_failed = false;  // export_message is an error (shown in red)
  std::string export_message_request;  // the request export_message is about: a changed request clears it
  // Heads muted on their tiles (sorted, 0-based): drawn dimmed, and the output change of zero-ablating them shown.
  std::vector<int> muted_heads;
  bool mute_mean = false;  // muting replaces a head's output by its mean over the queries instead of zeros
  // Heads in UPGMA cluster order (on the similarity metric) in the similarity matrix and the heads grid.
  bool cluster_order = false;
  int pitfall = 0;  // the mistakes panel's pitfall, an index into pitfallList()
  // The cell the breakdown panel explains (a click on a heatmap cell); head -1 = none yet.
  int breakdown_head = -1, breakdown_query = 0, breakdown_key = 0;
  // The diff panel's snapshot A (a copy of the result when pinned).
  bool diff_pinned = false;
  Result diff_a;
  std::shared_ptr<ModelSession> model;  // created by the Checkpoint panel on first draw (or an Open of a tensor)
  std::shared_ptr<OpenArraysForm> open_arrays;  // the file bar's Open form for arrays files (open_arrays.h)
  CellView model_zoom;                   // the model's full-size map: the cells in view
  // A checkpoint's layer opened as the scene: its name ("GPT-2 layer 3") while the scene's description is still
  // the one it was opened with (subject.h).
  std::string layer_scene_name, layer_scene_description;
  unsigned seen_scene_edits = 0;  // AppState::sceneEdits() when last looked: an edit since makes the scene the subject
  // The row profile under an enlarged head (panel_row_profile.cpp): the query hovered, else the one clicked.
  int profile_query = -1;
  bool profile_log = false;
  Matrix profile_row;  // (1, n_k) weights of (profile_head, profile_row_query) at profile_revision
  int profile_head = -1, profile_row_query = -1;
  unsigned profile_revision = ~0u;
};

// A head-type label as the window spells it everywhere ("first-token" for the engine's "first_token"); "" for none.
const char* headTypeText(const std::string& label);
// The same in a table's type column: "mixed" where no score reaches 0.5 (an empty cell read as missing data).
inline const char* headTypeCell(const std::string& label) { return label.empty() ? "mixed" : headTypeText(label); }
// The order the heads are shown in: UPGMA leaf order when view.cluster_order (and the similarity is there),
// else 0..h-1. The clustering itself in `clustering` when not null.
std::vector<int> headOrder(const AppState& state, const ViewState& view, Clustering* clustering = nullptr);

// Each draws its contents into the current ImGui window.
void drawModelPanel(AppState& state, ViewState& view);
void drawInputsPanel(AppState& state, ViewState& view);
void drawProjectionsPanel(AppState& state, ViewState& view);
void drawHeadsPanel(AppState& state, ViewState& view, HeatmapRenderer& renderer);
void drawSimilarityPanel(AppState& state, ViewState& view);
void drawWalkthroughPanel(AppState& state, ViewState& view);
void drawExportPanel(AppState& state, ViewState& view);
void drawDiffPanel(AppState& state, ViewState& view);       // panel_diff.cpp
void drawBreakdownPanel(AppState& state, ViewState& view);  // panel_breakdown.cpp
void drawPitfallsPanel(AppState& state, ViewState& view);   // panel_pitfalls.cpp
void drawCheckpointPanel(AppState& state, ViewState& view);  // panel_checkpoint.cpp
// The row profile of view.profile_query under the enlarged head, rowProfileHeight() tall from p0.
void drawRowProfile(const AppState& state, ViewState& view, int head, ImVec2 p0, float width);
float rowProfileHeight();

// A long scene: the result keeps no maps (MapPolicy::Auto past mapsLimitBytes, compute/tiles.h), so weights are
// read through tiles and whole-map analyses are not run in the window (panel_widgets.cpp).
bool longScene(const AppState& state);
// What a panel shows instead of `what` on a long scene: one plain line saying why and what to use instead.
void longSceneNote(const AppState& state, const char* what);

// Shared widgets (panel_widgets.cpp).
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
// The side of a cell of an (n_rows, n_cols) map fitted into (avail_w, avail_h) pixels: square cells, the whole
// map at least a pixel (a long scene's cells are far below one).
// The colour bar beside a map (from 0 or top / 1000 at the bottom to `top`) and the contrast control above the
// maps (panel_heads.cpp): one ViewState::contrast for the heads, the model grid and the full-size map.
void drawColorBar(ImDrawList* list, ImVec2 p0, ImVec2 p1, float top, const MapContrast& contrast);
void drawContrastControl(ViewState& view);
float mapCell(float avail_w, float avail_h, float n_cols, float n_rows);
// A section title with a rule under it.
void sectionHeader(const char* title);
// The edit error of the last edit, in red, under the widget that caused it: shown only by the panel whose
// edit it was (`source`, AppState::editSource()), so it appears once.
void showEditError(const AppState& state, const char* source);

}  // namespace attnscope::app
