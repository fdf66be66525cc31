// What the worked example's lesson needs in more than one panel: one wording and one rounding for a head's
// entropy, a head's title with its type set apart, a matrix's numbers labelled by token and dimension, and the
// cells an edit changed (marked for a moment after it, before/after on hover).
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

#include "attnscope/analysis/walkthrough.h"
#include "window/app_state.h"
#include "window/maps/heatmap_view.h"

namespace attnscope::app {

struct ViewState;  // panels.h

// A head's entropy (HeadStats::entropy, PitfallResult's): the mean over query rows (rows with one allowed key
// left out) of -sum_j w ln w, in nats. Every place shows it through these: 3 decimals, the same words.
inline constexpr const char* kEntropyName = "mean row entropy";
inline constexpr const char* kEntropyUnit = "nats";
inline constexpr const char* kEntropyMeaning =
    "mean row entropy: -sum of w ln w over a query row's weights, averaged over the query rows (a row with one "
    "allowed key has weight 1 there by construction and is left out), in nats";
std::string entropyValue(double entropy);  // "0.836"

// A head's title line in [p0.x, max_x): "Head 2", its type as a chip (own colour, a gap each side) and its mean
// row entropy (shortened down to "H 0.634"), each dropped in turn (entropy, then the chip) where they do not fit;
// "H2" on narrow tiles. Each piece is probed (probeText "head<h>.title", ".type", ".entropy": overlap is recorded
// as clipped) and the entropy's text noted. Returns the x where the title ends (the mute button goes there).
// `name` false: the chip and the entropy alone, from p0.x (a narrow tile's second title line, oneLineTitleWidth).
float drawHeadTitle(ImDrawList* list, int head, const char* type, const float* entropy, ImVec2 p0, float max_x,
                    bool name = true);
// The width a title line needs for "Head 12" and the widest type chip beside the mute and enlarge buttons: a tile
// narrower than this puts the chip and the entropy on a line of their own (a wider one drops the entropy first).
float oneLineTitleWidth();

// A small button with an "expand" icon (four corner marks) that enlarges head `head`: a tooltip says so; probed
// "head<h>.enlarge". A line wide, so that the title keeps its room.
bool enlargeButton(int head);
float enlargeButtonWidth();
// The enlarge button fits a title row `width` wide beside the shortest title ("H12") and `others_w` of other
// buttons and tags (which keep their place: on tiles too narrow for all, a double-click on the map enlarges).
bool enlargeFits(int head, float others_w, float width);

// The cells the last edit changed (change_marks.cpp): trackChanges, once a frame before the maps are drawn,
// compares the weights shown before the edit with its result once that lands (small scenes). Each changed cell
// is outlined for a moment (changeMarkAlpha fades 1 -> 0 over 3 s) and its weight before the edit stays
// available for the hover (weightBeforeEdit: NaN where the cell did not change) until the next edit.
void trackChanges(const AppState& state);
float changeMarkAlpha();
float weightBeforeEdit(int head, int row, int col);
// Outlines head `head`'s changed cells among `cells` on its map [m0, m1) (cells `cell` px wide), fading.
void drawChangeMarks(ImDrawList* list, int head, ImVec2 m0, ImVec2 m1, const CellView& cells, float cell);
// In a cell's tooltip: "before the last edit: 0.3333" where the last edit changed that cell.
void changeTooltipLine(int head, int row, int col);

// Each visible cell's number across a large cell of head `head`'s map drawn in [m0, m1) (`cell` pixels a side,
// `cells` the view): its weight to 3 decimals, or, while value norms are shown, weight x norm / the largest (what
// it is coloured by), in white or black against its colour (`scale_top`: the map's colour-scale top); probed as
// notes "head<h>.cell.<i>.<j>".
void drawCellNumbers(const AppState& state, const ViewState& view, const HeatmapRenderer& renderer, int head,
                     const CellView& cells, ImVec2 m0, ImVec2 m1, float cell, float scale_top);

// Value-norm weighting of a scene's heads (value_norms.cpp), the model view's switch (ViewState::run.value_norm)
// for the scene's maps: each weight alpha_ij drawn times key j's value norm through head h over the scene's
// largest (HeatmapRenderer uploads them so, or hands them to a long scene's tiles as key scales), so the maps
// stay in 0..1.
bool valueNormsShown(const ViewState& view);  // the switch is on
// The "value norms" checkbox (probed "heads.value_norm"); when on, a line "weights x value norms / the scene's
// largest norm" (probed "heads.value_norm_note").
void drawValueNormSwitch(ViewState& view);
// In a cell's tooltip while shown: what the colour is, the weight times key `key`'s value norm over the largest
// (the norms `renderer` uploaded the maps with).
void valueNormTooltipLine(const AppState& state, const ViewState& view, const HeatmapRenderer& renderer, int head,
                          int row, int key);

// What a walkthrough matrix's rows and columns are: the tokens where the engine names them (StepMatrix's
// row_labels, col_labels), else the dimensions by the matrix's name: "dim 1".. of d_model (X, W_* rows, the
// output), "q1".. / "k1".. / "v1".. of a head's query, key and value spaces, "c1".. of the concatenation, "b" a
// bias's one row. Long tokens are shortened. `head_step`: the step is about one head (its "output" is weights V,
// d_v wide; the layer's is d_model wide).
struct AxisNames {
  std::vector<std::string> rows, cols;
};
AxisNames walkAxisNames(const StepMatrix& m, bool head_step);
// The dimensions alone, for a scene input by its walkthrough name ("W_Q", "b_V", "W_O"): what the Projections
// tab calls its rows and columns, so that both tabs number alike.
AxisNames dimensionNames(const std::string& name, Eigen::Index rows, Eigen::Index cols, bool head_step = true);
// Each number of `step` that the text prints and the computation does not reproduce, in a sentence: "Head 2's
// weight for x1 -> x3 does not match the text: 0.41 printed, 0.380 computed." (in the step's order).
std::vector<std::string> disagreementSentences(const Step& step);
// The steps that hold such numbers (0-based) and what is misprinted there: "Head 1's scaled scores".
struct MisprintedStep {
  int step = 0;
  std::string what;
};
std::vector<MisprintedStep> misprintedSteps(const Walkthrough& walk);

}  // namespace attnscope::app
