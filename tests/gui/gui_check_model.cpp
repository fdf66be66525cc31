// Pixel checks of the model in the centre pane (scripts/model_grid.txt): a generated 12 x 12-head checkpoint whose
// maps NumPy worked out (tests/model/gpt2_reference.py writes them to expected.json), independently of the engine.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "attnscope/model/gpt2.h"
#include "gui_check.h"

namespace gui {

namespace {

using Maps = std::vector<std::vector<std::vector<std::vector<double>>>>;  // (layers, heads, n, n)

// Every cell of a map drawn over `rect_id` of `c` (n x n cells, read at `fy` down each cell) in the colour of
// NumPy's weight, or masked above the diagonal. Returns the number wrong; prints the first few.
int wrongCells(const Checker& c, const std::string& rect_id, const std::vector<std::vector<double>>& w, int n,
               float fy = 0.5f) {
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const Rgb8 got = c.cell(rect_id, i, j, n, n, fy);
      const double want = w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      const bool ok = j > i ? got == attnscope::kMaskedColor : isWeightColor(got, want);
      if (!ok && ++wrong <= 2)
        std::printf("      %s cell (%d,%d): weight %.4f drawn %s\n", rect_id.c_str(), i, j, want,
                    Checker::str(got).c_str());
    }
  return wrong;
}

}  // namespace

void checkModelGrid(Checker& c, const std::string& dir, bool maps_dropped) {
  std::ifstream in(dir + "/ckpt/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const Maps maps = expected["weights"].get<Maps>();
  const std::vector<int> ids = expected["ids"].get<std::vector<int>>();
  // The window's tokenizer must turn the script's text into the ids NumPy ran (else the maps are of other tokens).
  const attnscope::model::Checkpoint ck = attnscope::model::loadCheckpoint(dir + "/ckpt");
  c.expect(ck.tokenizer.encode("hello there cats!") == ids, "the text's tokens are the ones NumPy ran");
  const int layers = static_cast<int>(maps.size()), heads = static_cast<int>(maps[0].size());
  const int n = static_cast<int>(ids.size());
  c.expect(layers == 12 && heads == 12 && n == 11, "NumPy's maps: 12 layers x 12 heads of 11 x 11");
  // The path under test: maps kept, or none (the tiles recomputed from Q and K on the grid's worker); the panel
  // says which.
  c.expect(c.layout.contains("checkpoint.maps_on_demand") == maps_dropped,
           maps_dropped ? "the forward kept no maps (ATTNSCOPE_MODEL_MAPS=drop)" : "the forward kept its maps");
  c.expect(!c.layout.contains("model.grid_pending"), "the grid's tiles all landed before the screenshot");

  // The grid: every cell of all 144 tiles, in the centre pane (between the scene and the analysis panes).
  int wrong = 0, missing = 0;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const std::string tile = "model.tile." + std::to_string(l) + "." + std::to_string(h);
      if (!c.layout.contains(tile)) {
        ++missing;
        continue;
      }
      wrong += wrongCells(c, tile, maps[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)], n);
    }
  c.expect(missing == 0, "all 144 tiles drawn (" + std::to_string(missing) + " missing)");
  c.expect(wrong == 0, "grid: 144 x 121 cells in colorAt(NumPy's weight) or masked, " + std::to_string(wrong) +
                           " wrong");
  const std::vector<float> first = c.rect("model.tile.0.0"), last = c.rect("model.tile.11.11");
  const std::vector<float> tab = c.rect("tab.checkpoint");
  c.expect(first[0] > 0.2f * static_cast<float>(c.img.w) && last[2] < tab[0],
           "the grid lies in the centre pane, left of the analysis tabs");

  // A token hovered in the strip (token 2): in every tile its query row is outlined in red (255, 60, 60) and its
  // key column in white. The lines run along the band's first pixel row / column, read away from the crossing.
  const Checker strip{loadPng(dir + "/strip.png"), loadLayout(dir + "/layout_strip.json")};
  int unmarked = 0;
  for (const std::string tile : {"model.tile.0.0", "model.tile.5.6", "model.tile.11.11"}) {
    const std::vector<float> r = strip.rect(tile);
    const float cell = (r[2] - r[0]) / static_cast<float>(n);
    const int band = static_cast<int>(std::floor(2 * cell));
    const Rgb8 row = strip.img.at(static_cast<int>(r[2]) - 3, static_cast<int>(r[1]) + band);
    const Rgb8 col = strip.img.at(static_cast<int>(r[0]) + band, static_cast<int>(r[3]) - 3);
    if (!(row == Rgb8{255, 60, 60}) || !(col == Rgb8{255, 255, 255})) {
      ++unmarked;
      std::printf("      %s: row line %s, column line %s\n", tile.c_str(), Checker::str(row).c_str(),
                  Checker::str(col).c_str());
    }
  }
  c.expect(unmarked == 0, "token 2's row (red) and column (white) outlined in the tiles checked");

  // A click on layer 5, head 8's tile: that map alone, larger than the grid's whole width allows a tile, every cell
  // in NumPy's colour; its tokens beside it (some text pixel, light on the dark pane, left of the map).
  const Checker focus{loadPng(dir + "/focus.png"), loadLayout(dir + "/layout_focus.json")};
  c.expect(focus.layout.contains("model.map") && !focus.layout.contains("model.tile.0.0"), "one map shown full-size");
  if (focus.layout.contains("model.map")) {
    const std::vector<float> m = focus.rect("model.map");
    c.expect(m[2] - m[0] > 8 * (first[2] - first[0]), "the map is 8 tiles wide or more: " +
                                                         std::to_string(static_cast<int>(m[2] - m[0])) + " px");
    c.expect(wrongCells(focus, "model.map", maps[4][7], n) == 0, "layer 5, head 8 full-size: every cell in colorAt");
    int text = 0;
    for (int y = static_cast<int>(m[1]); y < static_cast<int>(m[3]); ++y)
      for (int x = static_cast<int>(m[0]) - 30; x < static_cast<int>(m[0]) - 2; ++x) {
        const Rgb8 p = focus.img.at(x, y);
        text += p.r > 150 && p.g > 150 && p.b > 150;
      }
    c.expect(text > 50, "query tokens drawn left of the map (" + std::to_string(text) + " light pixels)");
  }

  // Layer 5 opened as the scene: 12 heads in the heads panel, each in NumPy's colours.
  const Checker scene{loadPng(dir + "/scene.png"), loadLayout(dir + "/layout_scene.json")};
  c.expect(scene.layout.contains("head11.map") && !scene.layout.contains("head12.map") &&
               !scene.layout.contains("model.tile.0.0"),
           "layer 5's 12 heads shown instead of the model");
  int scene_wrong = 0;
  for (int h = 0; h < heads; ++h)
    if (scene.layout.contains("head" + std::to_string(h) + ".map"))
      scene_wrong += wrongCells(scene, "head" + std::to_string(h) + ".map", maps[4][static_cast<std::size_t>(h)], n,
                                Checker::kAboveText);
  c.expect(scene_wrong == 0, "layer 5 as a scene: every cell in colorAt(NumPy's weight), " +
                                 std::to_string(scene_wrong) + " wrong");
  c.expect(scene.layout.contains("model.back"), "a button leads back to the model");
  c.expect(loadLayout(dir + "/layout_back_map.json").contains("model.map"), "and back: the map last shown");
  c.expect(loadLayout(dir + "/layout_back.json").contains("model.tile.11.11"), "and its grid");
}

}  // namespace gui
