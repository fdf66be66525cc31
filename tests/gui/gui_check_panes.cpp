// The side panes (scripts/panes.txt, panes_again.txt; four runs of the window by run_gui_test.sh): dragged and
// collapsed, remembered in $XDG_CONFIG_HOME/attnscope/panes.json across runs; a corrupt or unwritable file said
// once and otherwise ignored.
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
