// The side panes (scripts/panes.txt, panes_again.txt; four runs of the window by run_gui_test.sh): dragged and
// collapsed, remembered in $XDG_CONFIG_HOME/attnscope/panes.json across runs; a corrupt or unwritable file said
// once and otherwise ignored.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "gui_check.h"

namespace gui {

namespace {

bool near(float a, float b) { return std::abs(a - b) <= 1.0f; }  // a pixel: positions are rounded to pixels

}  // namespace

void checkPanes(Checker& c, const std::string& dir) {
  // The default left pane at 1280 x 800, scale 1: 28% of the window (358.4 px; 22 font heights of 13 px are
  // less), its strip starting there.
  const nlohmann::json before = loadLayout(dir + "/layout_first_before.json");
  const std::vector<float> grip0 = Checker{Image{}, before}.rect("pane.left.splitter");
  c.expect(near(grip0[0], 358.4f), "the left pane's edge at 28% of 1280 px: " + std::to_string(grip0[0]));
  c.expect(before.contains("tab.export") && before.contains("pane.right.collapse"), "the analysis pane open at first");

  // Dragged 100 px right, the analysis pane collapsed: its tabs gone, its strip at the window's right edge.
  const nlohmann::json first = loadLayout(dir + "/layout_first.json");
  const Checker moved{Image{}, first};
  c.expect(near(moved.rect("pane.left.splitter")[0], grip0[0] + 100), "the drag moved the left pane's edge 100 px: " +
                                                                          std::to_string(moved.rect("pane.left.splitter")[0]));
  c.expect(!first.contains("tab.export") && first.contains("pane.right.expand") &&
               near(moved.rect("pane.right.expand")[2], 1280),
           "the analysis pane collapsed to its strip at the right edge");
  std::ifstream saved_in(dir + "/panes_saved.json");
  const nlohmann::json saved = nlohmann::json::parse(saved_in, nullptr, false);
  c.expect(saved.is_object() && saved.value("right_collapsed", false) && !saved.value("left_collapsed", true),
           "panes.json says the analysis pane is collapsed, the left one open");

  // The next run: the same edge, the analysis pane still collapsed.
  const nlohmann::json again = loadLayout(dir + "/layout_again.json");
  const Checker read_back{Image{}, again};
  c.expect(again.contains("pane.left.splitter") &&
               near(read_back.rect("pane.left.splitter")[0], moved.rect("pane.left.splitter")[0]),
           "the next run opens with the dragged width");
  c.expect(!again.contains("tab.export") && again.contains("pane.right.expand"), "and the analysis pane collapsed");
  c.expect(!again.contains("file.message"), "nothing to say when the file is good");

  // A corrupt file: said once in the file bar (naming the field), the defaults used.
  const nlohmann::json corrupt = loadLayout(dir + "/layout_corrupt.json");
  const std::string said = note(corrupt, "file.message");
  c.expect(said.find("pane settings ignored") != std::string::npos && said.find("panes.json") != std::string::npos,
           "a corrupt panes.json is said: '" + said + "'");
  c.expect(corrupt.contains("tab.export") &&
               near(Checker{Image{}, corrupt}.rect("pane.left.splitter")[0], grip0[0]),
           "and the default panes used");

  // XDG_CONFIG_HOME a file: nothing can be written; said, and the panes still move.
  const nlohmann::json unwritable = loadLayout(dir + "/layout_unwritable.json");
  const std::string why = note(unwritable, "file.message");
  c.expect(why.find("pane settings not saved") != std::string::npos, "an unwritable config is said: '" + why + "'");
  c.expect(near(Checker{Image{}, unwritable}.rect("pane.left.splitter")[0], grip0[0] + 100) &&
               unwritable.contains("pane.right.expand"),
           "the panes still move and collapse for this run");
}

}  // namespace gui

namespace gui {

// Paths and the in-window file browser (scripts/browse.txt): Save as into a folder typed in the browser, Open
// through Up and a click, the Checkpoint tab's "no such folder" and config.json path, Export to a browsed name
// (its maps decoded against NumPy's, tests/model/gpt2_reference.py's expected.json).
void checkBrowse(Checker& c, const std::string& dir) {
  const nlohmann::json save_browser = loadLayout(dir + "/layout_save_browser.json");
  c.expect(note(save_browser, "chooser.folder") == dir + "/pick" && save_browser.contains("chooser.entry.sub"),
           "the browser went to the typed folder and lists its folder 'sub': '" + note(save_browser, "chooser.folder") +
               "'");
  const nlohmann::json saved = loadLayout(dir + "/layout_saved.json");
  std::ifstream scene_in(dir + "/pick/scene.json");
  c.expect(nlohmann::json::parse(scene_in, nullptr, false).is_object() &&
               note(saved, "file.message") == "Saved " + dir + "/pick/scene.json",
           "Save as wrote pick/scene.json: '" + note(saved, "file.message") + "'");
  const nlohmann::json browser = loadLayout(dir + "/layout_browser.json");
  c.expect(note(browser, "chooser.folder") == dir + "/pick/sub" && !browser.contains("chooser.entry.scene.json"),
           "Open's browser starts in the path's folder, pick/sub (empty)");
  c.expect(loadLayout(dir + "/layout_picked.json").contains("chooser.entry.scene.json"), "Up lists pick's scene.json");
  const nlohmann::json opened = loadLayout(dir + "/layout_opened.json");
  c.expect(note(opened, "file.message") == "Opened " + dir + "/pick/scene.json" && !opened.contains("chooser.path"),
           "the picked file opened, the browser closed: '" + note(opened, "file.message") + "'");

  const nlohmann::json missing = loadLayout(dir + "/layout_missing.json");
  c.expect(note(missing, "checkpoint.error") == "checkpoint folder: no such folder: " + dir + "/missing",
           "a missing checkpoint folder is said by name: '" + note(missing, "checkpoint.error") + "'");

  // The config.json path opened its folder: the fixture's 2 x 3 grid, named GPT-2.
  c.expect(c.layout.contains("model.tile.1.2") && !c.layout.contains("model.tile.2.0") &&
               note(c.layout, "status.subject").rfind("GPT-2: 2 layers x 3 heads, 11 tokens", 0) == 0,
           "a config.json path opened its folder's 2 x 3 GPT-2: '" + note(c.layout, "status.subject") + "'");

  // Export to the browsed name, with the grid on show: every layer's maps, against NumPy's float64 forward of
  // the F16 weights. The float32 forward's error on this 2-layer fixture is of the order of model_grid's layer 1
  // (1.9e-6); 5e-5 is the engine's own model tests' bound.
  std::ifstream in(dir + "/ckpt/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const auto maps = expected["weights"].get<std::vector<std::vector<std::vector<std::vector<double>>>>>();
  const long layers = static_cast<long>(maps.size()), heads = static_cast<long>(maps[0].size());
  const long n = static_cast<long>(maps[0][0].size());
  const Npy npy = loadNpy(dir + "/pick/browsed.npy");
  c.expect(npy.shape == std::vector<long>{layers, heads, n, n}, "Export wrote pick/browsed.npy as (2, 3, 11, 11)");
  if (npy.shape == std::vector<long>{layers, heads, n, n}) {
    double worst = 0;
    std::size_t k = 0;
    for (const auto& layer : maps)
      for (const auto& head : layer)
        for (const auto& row : head)
          for (double w : row) worst = std::max(worst, std::abs(npy.values[k++] - w));
    c.expect(worst <= 5e-5, "browsed.npy: every weight within 5e-5 of NumPy's (worst " + std::to_string(worst) + ")");
  }
}

}  // namespace gui
