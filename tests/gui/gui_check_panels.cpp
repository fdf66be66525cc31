// Pixel checks of every tab (scripts/panels.txt), at the default scale and at ATTNSCOPE_UI_SCALE=2: the heads'
// maps in the worked example's colours under each tab, and per tab what proves it drew right. Expected values
// are worked out here in double from seed 001's printed matrices (gui_check.h), never read from the window.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gui_check.h"

namespace gui {

namespace {

// Light pixels (text) in the band [x0, x1) x [y0, y1): labels drawn there.
int lightPixels(const Image& img, int x0, int x1, int y0, int y1) {
  int light = 0;
  for (int y = std::max(0, y0); y < std::min(img.h, y1); ++y)
    for (int x = std::max(0, x0); x < std::min(img.w, x1); ++x) {
      const Rgb8 p = img.at(x, y);
      light += p.r > 150 && p.g > 150 && p.b > 150;
    }
  return light;
}

// The query labels left of a map: some text within 30 px (60 at scale 2) of its left edge.
void expectQueryLabels(Checker& c, const Checker& shot, const std::string& map, const std::string& what) {
  const std::vector<float> r = shot.rect(map);
  const int reach = static_cast<int>(r[3] - r[1]) / 2;
  const int light = lightPixels(shot.img, static_cast<int>(r[0]) - reach, static_cast<int>(r[0]) - 2,
                                static_cast<int>(r[1]), static_cast<int>(r[3]));
  c.expect(light > 20, what + ": token labels left of the map (" + std::to_string(light) + " light pixels)");
}

// Cosine of two heads' maps as vectors: sum w_a w_b / (|w_a| |w_b|).
double cosine(const Grid& a, const Grid& b) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      ab += a[i][j] * b[i][j], aa += a[i][j] * a[i][j], bb += b[i][j] * b[i][j];
    }
  return ab / std::sqrt(aa * bb);
}

}  // namespace

void checkPanels(Checker& c, const std::string& dir) {
  // Under every tab the heads panel is drawn and right, and the tab's own widget is there with something drawn in
  // it (a frame or text: a pixel lighter than the dark panes).
  const std::pair<const char*, const char*> tabs[] = {
      {"model", "model.preset.random"}, {"inputs", "inputs.query.0.0"}, {"projections", "proj.head"},
      {"steps", "walk.next"},           {"similarity", "similarity.map"}, {"diff", "diff0.map"},
      {"cell", "breakdown.weight"},     {"mistakes", "pitfall.weights0"}, {"export", "export.button"},
      {"", "checkpoint.run"}};
  for (const auto& [name, probe] : tabs) {
    const std::string file = *name ? name : "window";
    Checker shot{loadPng(dir + "/" + file + ".png"), loadLayout(dir + "/layout" + (*name ? "_" + file : "") + ".json")};
    shot.expectWorkedExample(2, false);
    c.failures += shot.failures;
    const bool present = shot.layout.contains(probe);
    c.expect(present, file + ": " + probe + " shown");
    if (!present) continue;
    const std::vector<float> r = shot.rect(probe);
    int drawn = 0;
    for (int y = static_cast<int>(r[1]); y < static_cast<int>(r[3]); ++y)
      for (int x = static_cast<int>(r[0]); x < static_cast<int>(r[2]); ++x) {
        const Rgb8 p = shot.img.at(x, y);
        drawn += std::max({p.r, p.g, p.b}) > 90;
      }
    c.expect(drawn > 0, file + ": " + probe + " drawn (" + std::to_string(drawn) + " lit pixels)");
  }

  // Similarity: cosine of the two heads' maps on viridis over 0..1, read near each cell's top-left corner (its
  // value is written across the middle). The diagonal is 1 by definition.
  const Checker sim{loadPng(dir + "/similarity.png"), loadLayout(dir + "/layout_similarity.json")};
  const Grid w[2] = {expectedWeights(0, false), expectedWeights(1, false)};
  const std::vector<float> s = sim.rect("similarity.map");
  const float side = (s[2] - s[0]) / 2;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      const double cos = a == b ? 1.0 : cosine(w[a], w[b]);
      const Rgb8 got = sim.img.at(static_cast<int>(s[0] + (b + 0.15f) * side), static_cast<int>(s[1] + (a + 0.15f) * side));
      const auto at = [](double v) {
        return attnscope::colorAt(ColorMap::Viridis, static_cast<float>(v));
      };
      c.expect(got == at(cos - 2e-5) || got == at(cos + 2e-5),
               "similarity of heads " + std::to_string(a + 1) + " and " + std::to_string(b + 1) + ": cosine " +
                   std::to_string(cos) + " drawn " + Checker::str(got));
    }

  // Diff pinned with no edit since: B - A is 0 everywhere, white on the diverging map; tokens beside the map.
  const Checker diff{loadPng(dir + "/diff.png"), loadLayout(dir + "/layout_diff.json")};
  int coloured = 0;
  for (const char* map : {"diff0.map", "diff1.map"})
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) coloured += !(diff.cell(map, i, j, 3, 3) == Rgb8{255, 255, 255});
  c.expect(coloured == 0, "unchanged since the pin: all 18 diff cells white (" + std::to_string(coloured) + " not)");
  expectQueryLabels(c, diff, "diff0.map", "diff");

  // The Cell tab explains head 1's cell (1, 0) (clicked on the map): that cell is outlined in orange.
  const Checker cell{loadPng(dir + "/cell.png"), loadLayout(dir + "/layout_cell.json")};
  c.expect(cell.layout.contains("breakdown.cell.0.1.0"), "the Cell tab explains head 1, query 1, key 0");
  const std::vector<float> m = cell.rect("head0.map");
  const float ch = (m[3] - m[1]) / 3;
  bool orange = false;
  for (int dy = -2; dy <= 2; ++dy)
    orange = orange || cell.img.at(static_cast<int>(m[0] + (m[2] - m[0]) / 6), static_cast<int>(m[1] + ch) + dy) ==
                           Rgb8{255, 160, 40};
  c.expect(orange, "the explained cell's top edge is outlined in orange");
  c.expect(cell.layout.contains("head1.map") && !cell.layout.contains("heads.back"),
           "the click picked the cell and kept the grid (head 2 still shown, nothing enlarged)");

  // Mistakes, first pitfall (scale_full_width): scores scaled by 1/sqrt(sum of d_k) = 1/sqrt(4) = 0.5 instead of
  // 1/sqrt(2); the mistaken weights of both heads in their colours, tokens beside them.
  Checker mistakes{loadPng(dir + "/mistakes.png"), loadLayout(dir + "/layout_mistakes.json")};
  for (int h = 0; h < 2; ++h) {
    const Grid wrong = expectedWeights(h, false, kX, -1, 0.5);
    const std::string map = "pitfall.weights" + std::to_string(h);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        const Rgb8 got = mistakes.cell(map, i, j, 3, 3);
        c.expect(isWeightColor(got, wrong[i][j]), "mistaken weight of head " + std::to_string(h + 1) + " cell (" +
                                                      std::to_string(i) + "," + std::to_string(j) + ") " +
                                                      std::to_string(wrong[i][j]) + " drawn " + Checker::str(got));
      }
  }
  expectQueryLabels(c, mistakes, "pitfall.weights0", "mistakes");
  expectQueryLabels(c, mistakes, "pitfall.diff0", "mistakes' difference");
}

// gui_row_profile: head 1 of the worked example, query x2 (position 1) clicked, then enlarged. Its row is
// expectedWeights(0)[1] = (0.401, 0.198, 0.401): each key's bar is drawn (plot height - 2) * w / max(w) tall in
// colorAt(w / max(w)) (a bar per pixel column, three keys over the plot's width). Heights within 2 px (the bar's
// top is the float32 weight rounded to a pixel; seen 0 to 1 px off).
void checkRowProfile(Checker& c, const std::string& dir) {
  if (!c.layout.contains("profile.plot") || !c.layout.contains("profile.top")) {
    c.expect(false, "the row profile and its top keys are drawn (profile.plot, profile.top probed)");
    return;
  }
  const std::vector<float> plot = c.rect("profile.plot"), top = c.rect("profile.top");
  const std::vector<double> w = expectedWeights(0, false)[1];
  const double peak = std::max({w[0], w[1], w[2]});
  const int pixels = static_cast<int>(plot[2] - plot[0]) - 2;
  const int bottom = static_cast<int>(plot[3]) - 2;  // the bars' lowest pixel row
  for (int j = 0; j < 3; ++j) {
    const int x = static_cast<int>(plot[0]) + 1 + (2 * j + 1) * pixels / 6;  // the middle of key j's columns
    const Rgb8 want = attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w[static_cast<std::size_t>(j)] / peak));
    int height = 0;
    while (bottom - height > plot[1] && c.img.at(x, bottom - height) == want) ++height;
    const double expected = (plot[3] - plot[1] - 2) * w[static_cast<std::size_t>(j)] / peak;
    c.expect(std::abs(height - expected) <= 2, "key " + std::to_string(j) + ": a bar " + std::to_string(height) +
                                                   " px tall in " + Checker::str(want) + ", expected " +
                                                   std::to_string(expected));
  }
  // Inside the heads pane: the key labels under the plot (one text line) and the top keys above the status bar.
  const std::vector<float> status = c.rect("status.backend.cpu");
  const float line = 17;  // the 15 px font's line at scale 1
  c.expect(plot[3] + line <= status[1] - 4 && top[3] <= status[1] - 4,
           "the plot's key labels (to " + std::to_string(plot[3] + line) + ") and top keys (to " +
               std::to_string(top[3]) + ") end above the status bar (" + std::to_string(status[1]) + ")");
  c.expect(c.layout["clipped"].empty(), "nothing clipped: " + c.layout["clipped"].dump());
  // Between neighbouring bars, a gap of the plot's background (30, 30, 34) on the bars' lowest row.
  for (int j = 1; j < 3; ++j) {
    const int edge = static_cast<int>(plot[0]) + 1 + j * pixels / 3;
    bool gap = false;
    for (int x = edge - 2; x <= edge + 1; ++x) gap = gap || c.img.at(x, bottom) == Rgb8{30, 30, 34};
    c.expect(gap, "a gap between the bars of keys " + std::to_string(j - 1) + " and " + std::to_string(j));
  }
  // Every key labelled under its bar, by its token, the label's middle within its bar's third of the plot
  // (the overlap of any two is "clipped", asserted empty above).
  const char* tokens[] = {"x1", "x2", "x3"};
  for (int j = 0; j < 3; ++j) {
    const std::string id = "profile.key." + std::to_string(j);
    const bool drawn = c.layout.contains(id);
    const std::vector<float> r = drawn ? c.rect(id) : std::vector<float>{0, 0, 0, 0};
    const float middle = (r[0] + r[2]) / 2, third = (plot[2] - plot[0]) / 3;
    c.expect(drawn && middle > plot[0] + j * third && middle < plot[0] + (j + 1) * third && r[1] >= plot[3] - 1,
             std::string("key ") + std::to_string(j) + " labelled under its bar (" + tokens[j] + ")");
  }
  const nlohmann::json clicked = loadLayout(dir + "/layout_clicked.json");
  c.expect(clicked.contains("head0.map") && clicked.contains("head1.map") && !clicked.contains("profile.plot"),
           "a click on a cell kept the grid: both heads shown until the enlarge button");
}

}  // namespace gui
