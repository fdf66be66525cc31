// One value per layer and head drawn as a layers x heads map in the subject pane (Find heads' scores, a head's
// composition with later heads, direct logit attribution): heads across, layers down, "H1".. and "L1".. labels
// thinned to fit, undefined cells in the masked grey, one cell outlined. Probed as "<id>.map",
// "<id>.headlabel.H", "<id>.layerlabel.L".
#pragma once

#include <imgui.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/export/colormap.h"

namespace attnscope::app {

struct LayerHeadMap {
  std::string id;  // the probe's prefix
  int layers = 0, heads = 0;
  std::function<std::optional<double>(int layer, int head)> value;  // nullopt: undefined (grey)
  ColorMap colors = ColorMap::Viridis;
  float vmin = 0, vmax = 1;
  int marked_layer = -1, marked_head = -1;  // the cell outlined in white (-1: none)
  // A column's label (null: "H1", "H2", ...): another strip over the layers (attention and MLP, the positions' tokens).
  std::function<std::string(int column)> column_label;
  float max_cell_fonts = 2;  // the widest a cell is drawn, in font sizes (a strip of 2 columns wants its labels' room)
  // The hovered cell's tooltip (layer, head from 0).
  std::function<std::string(int layer, int head)> tooltip;
  // Where a value lies on the colours' vmin..vmax (null: the value itself): the composition centred on its
  // random baseline draws each score at its place on a diverging bar.
  std::function<double(double)> place;
  // For Export (rememberShown): what the map is ("GPT-2 previous-token score"), its bar's label, the CSV's value
  // column and the bar's three labels (empty: the numbers).
  std::string title, scale_label, number_name;
  std::vector<std::string> bar_labels;
};

struct FindHeadsState;
// `map` as the Export tab writes it (its values and numbers read once), kept in FindHeadsState::shown for this frame.
void rememberShown(FindHeadsState& find, const LayerHeadMap& map);

// Draws `map` at the cursor, as wide as the pane allows; the clicked cell (layer, head), if any.
std::optional<std::pair<int, int>> drawLayerHeadMap(const LayerHeadMap& map);

// The strongest entries as small buttons on as few lines as fit: `texts[k]` for each; the index clicked, if any.
// Probed as "<id>.top.K".
std::optional<int> drawRankedButtons(const std::string& id, const std::vector<std::string>& texts);

}  // namespace attnscope::app

namespace attnscope::model {
struct Model;
}

namespace attnscope::app {

struct FindHeadsState;
struct ModelViewState;
class ModelSession;
// Opens head `head` of `layer` full-size in the centre (the heads, not the rollout: `run`, the centre's view of it).
void openHeadMap(ModelViewState& run, ModelSession& s, int layer, int head);
// "strongest:" and the five heads of `map` with the largest values (`by_magnitude`: the largest |value|), each a
// button ("layer 3, head 2: " and the value in `value_format`) that opens its map. False when no head has a value.
bool drawStrongestHeads(ModelViewState& run, ModelSession& s, const LayerHeadMap& map, const char* value_format,
                        bool by_magnitude);
// Find heads' other maps (composition_map.cpp, logit_map.cpp): what later heads read from a picked head through
// their query, key or value (`mode` 0, 1, 2), and each head's direct share of a predicted token's logit.
void drawCompositionMap(FindHeadsState& find, ModelViewState& run, ModelSession& s, int mode);
void drawLogitAttributionMap(FindHeadsState& find, ModelViewState& run, ModelSession& s);
// Which heads matter: each head ablated or patched on a metric (patch_map.cpp).
void drawPatchingMap(FindHeadsState& find, ModelViewState& run, ModelSession& s);
// Whether a map of a checkpoint's own (`what`: "Logit attribution") is offered for `s`: false, after saying why in
// the pane, for a saved tensor (maps only, no weights) or when `refusal` of its checkpoint is not empty (an encoder).
bool checkpointMapOffered(const ModelSession& s, const std::string& what, std::string (*refusal)(const model::Model&));
// The diverging colour bar over -m .. m for a map whose largest |value| is `largest` (m = 1 when 0), and the room
// under it; returns m. Probed as the note "findheads.vmax".
float drawDivergingScale(double largest);

}  // namespace attnscope::app
