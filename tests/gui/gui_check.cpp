// Pixel checks on the window's screenshots (tests/gui). The expected weights are worked out here in double
// from seed 001's printed W matrices and the worked example's X, independently of the engine; the engine's
// colour map (colorAt, kMaskedColor) says which colour a weight must be drawn in.
// Usage: gui_check TEST ARTIFACT_DIR [BACKEND]   (reads window.png and layout.json there; BACKEND cpu or gpu:
// the one the status bar must name)
#include <stb_image.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/export/colormap.h"
#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/compute/cpu_backend.h"
#include "attnscope/model/model.h"
#include "attnscope/scene/scene_json.h"

#include "gui_check.h"

using namespace gui;

namespace {
// Every layout*.json in `dir` lists under "clipped" what did not fit (ui_probe.h): a tab label shortened, an
// item or a pane's content past its right edge, a text past its room. Each list must be empty.
void expectNothingClipped(Checker& c, const std::string& dir) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("layout", 0) != 0 || entry.path().extension() != ".json") continue;
    ++files;
    const nlohmann::json layout = loadLayout(entry.path().string());
    std::string clipped;
    for (const auto& id : layout.value("clipped", nlohmann::json::array())) clipped += " " + id.get<std::string>();
    c.expect(layout.contains("clipped") && clipped.empty(),
             file + ": nothing clipped" + (clipped.empty() ? "" : " (clipped:" + clipped + ")"));
  }
  c.expect(files > 0, "layouts written: " + std::to_string(files));
}

// After every hostile value (hostile_fields.txt): each refusal was shown under its field, the sizes are the
// worked example's, and every number in the saved scene is finite and within the cells' +-1e6.
void expectHostileValuesRefused(Checker& c, const std::string& dir) {
  const std::pair<const char*, const char*> refusals[] = {
      {"layout_sizes.json", "model.d_v.error"},      {"layout_random_n.json", "model.random.n.error"},
      {"layout_random.json", "model.random.seed.error"}, {"layout_scale.json", "model.scale.error"},
      {"layout_copy.json", "proj.copy_from.error"}};
  for (const auto& [file, probe] : refusals)
    c.expect(loadLayout(dir + "/" + file).contains(probe), std::string(file) + ": the refusal " + probe + " shown");
  const attnscope::Scene sizes = attnscope::loadSceneFile(dir + "/saved_sizes.json");
  c.expect(sizes.d_model == 4 && sizes.numHeads() == 2 && sizes.heads[0].dK() == 2 && sizes.dV(0) == 2,
           "after the sizes' hostile values: still d_model 4, 2 heads, d_k = d_v = 2");
  const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/saved_scene.json");
  c.expect(saved.d_model == 4 && saved.numHeads() == 2 && saved.nQ() == 3 && saved.heads[0].dK() == 2 &&
               saved.dV(0) == 2,
           "the sizes are still the worked example's (d_model 4, 2 heads, 3 tokens, d_k = d_v = 2)");
  c.expect(saved.scale.has_value() && *saved.scale >= 1e-6f && *saved.scale <= 1e6f,
           "the scale is within 1e-6 .. 1e6: " + std::to_string(saved.scale.value_or(-1)));
  const auto bounded = [](const attnscope::Matrix& m) { return m.allFinite() && m.cwiseAbs().maxCoeff() <= 1e6f; };
  c.expect(bounded(saved.query) && bounded(saved.heads[0].w_q), "X and W_Q are finite and within +-1e6");
  c.expect(c.layout.contains("head2.map"), "the window still draws the heads");
  const attnscope::Scene focus = attnscope::loadSceneFile(dir + "/saved_focus.json");
  c.expect(focus.numHeads() == 3, "3 typed into heads and committed by a click elsewhere (no Enter): " +
                                      std::to_string(focus.numHeads()) + " heads");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: gui_check TEST ARTIFACT_DIR [BACKEND]\n");
    return 2;
  }
  const std::string test = argv[1], dir = argv[2];
  try {
    Checker c{loadPng(dir + "/window.png"), loadLayout(dir + "/layout.json")};
    // The window's size: 1280 x 800, or GUI_WINDOW_SIZE (run_gui_test.sh: the HiDPI screen at scale 2).
    int want_w = 1280, want_h = 800;
    if (const char* size = std::getenv("GUI_WINDOW_SIZE")) std::sscanf(size, "%dx%d", &want_w, &want_h);
    c.expect(c.img.w == want_w && c.img.h == want_h, "screenshot is " + std::to_string(want_w) + " x " +
                                                         std::to_string(want_h) + ": " + std::to_string(c.img.w) +
                                                         " x " + std::to_string(c.img.h));
    // gpu_fault starts on the GPU and must end on the CPU (asserted below)
    if (argc == 4 && std::string(argv[3]) != "auto" && test != "gpu_fault")
      c.expect(c.layout.contains("status.backend." + std::string(argv[3])),
               std::string("computed on the ") + argv[3] + " backend");
    if (test == "worked_example") {
      c.expect(c.layout.contains("head1.map") && !c.layout.contains("head2.map"), "two heatmaps");
      c.expectWorkedExample(2, false);
    } else if (test == "gpu_fault") {
      // The fault moved weight in every row of head 1 (the last): the check names head 1 and one of its rows,
      // the CPU computed what is shown, and the maps are the hand-worked ones.
      bool named = false;
      for (int row = 0; row < 3; ++row) named = named || c.layout.contains("banner.gpu_check.head1.row" + std::to_string(row));
      c.expect(c.layout.contains("banner") && named, "a banner naming head 1 and a row of it");
      c.expect(c.layout.contains("status.backend.cpu"), "switched to the CPU backend");
      c.expectWorkedExample(2, false);
    } else if (test == "causal_mask") {
      c.expectWorkedExample(2, true);
    } else if (test == "four_heads") {
      for (int h = 0; h < 4; ++h)
        c.expect(c.layout.contains("head" + std::to_string(h) + ".map"), "heatmap " + std::to_string(h + 1) + " shown");
      c.expect(!c.layout.contains("head4.map"), "no fifth heatmap");
      c.expectWorkedExample(2, false);  // the first two heads keep their projections
      // The new heads are random: their weights come from the saved scene through the CPU reference backend
      // (the window under test draws them; the engine's CPU backend is tested against hand numbers elsewhere).
      const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/scene.json");
      c.expect(saved.numHeads() == 4, "saved scene has 4 heads");
      const attnscope::Result result = attnscope::CpuBackend(1).compute(saved);
      for (int h = 2; h < 4; ++h)
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j)
            c.expectWeightColor("head" + std::to_string(h) + ".map", h, i, j,
                                result.heads[static_cast<std::size_t>(h)].weights(i, j));
    } else if (test == "hover") {
      const Image before = loadPng(dir + "/before.png");
      const std::vector<float> r = c.rect("head0.map");
      const float cw = (r[2] - r[0]) / 3, ch = (r[3] - r[1]) / 3;
      // cell (1, 0): the 2-pixel white outline sits on the cell's edge; inside, the colour is unchanged
      const int left = static_cast<int>(r[0]), top = static_cast<int>(r[1] + ch);
      bool white = false;  // the anti-aliased line is fully white on one of the pixels around the edge
      for (int x = left - 1; x <= left + 1; ++x)
        white = white || c.img.at(x, top + static_cast<int>(ch / 2)) == Rgb8{255, 255, 255};
      c.expect(white, "hovered cell's left edge outlined in white");
      c.expectWeightColor("head0.map", 0, 1, 0, expectedWeights(0, false)[1][0]);
      // The tooltip opens right of the mouse, its top near the mouse's height: an opaque box of five lines
      // (~100 px tall, ~150 px wide) whose left edge ImGui puts 16 to 24 px right of the mouse. The region
      // [mx + 20, mx + 120) x [my + 20, my + 60) lies inside it but for at most its first 4 columns (160 of its
      // 4000 px), and every pixel under the box changes (its dark background and white text differ from every
      // viridis colour), so more than 3800 must change; seen 3852.
      int changed = 0;
      const int mx = static_cast<int>(r[0] + cw / 2), my = static_cast<int>(r[1] + 1.5f * ch);
      for (int y = my + 20; y < my + 60; ++y)
        for (int x = mx + 20; x < mx + 120; ++x) changed += !(c.img.at(x, y) == before.at(x, y));
      c.expect(changed > 3800,
               "tooltip drawn next to the mouse (" + std::to_string(changed) + " of 4000 pixels changed)");
    } else if (test == "mute") {
      // Head 1 muted: each cell is viridis(w) under black at alpha 160/255, so each channel is c * 95/255
      // (the blend rounds: within 2 of it). Head 2 is drawn as before.
      c.expect(c.layout.contains("heads.muted_effect"), "the output change of the muted head is shown");
      const Grid w0 = expectedWeights(0, false);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          const Rgb8 full = attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w0[i][j]));
          const Rgb8 got = c.cell("head0.map", i, j, 3, 3, Checker::kAboveText);
          auto near = [](int drawn, int channel) { return std::abs(drawn - channel * 95.0 / 255.0) <= 2.0; };
          c.expect(near(got.r, full.r) && near(got.g, full.g) && near(got.b, full.b),
                   "muted head 1 cell (" + std::to_string(i) + "," + std::to_string(j) +
                       ") dimmed: " + Checker::str(full) + " -> drawn " + Checker::str(got));
        }
      const Grid w1 = expectedWeights(1, false);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) c.expectWeightColor("head1.map", 1, i, j, w1[i][j]);
    } else if (test == "diff") {
      // Head 1's W_Q[1][1] from 1 to 2: q_i[0] doubles where x_i[0] = 1 (x1 and x3); x2's row is unchanged.
      // B - A on the diverging map over -m..m, m the largest |B - A|; white wherever nothing changed.
      const Grid a = expectedWeights(0, false), b = expectedWeights(0, false, kX, 2.0);
      double m = 0;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) m = std::max(m, std::fabs(b[i][j] - a[i][j]));
      c.expect(m > 0.05, "the edit changes head 1 (largest change " + std::to_string(m) + ")");
      const Rgb8 white{255, 255, 255};
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          const double d = b[i][j] - a[i][j];
          const Rgb8 got = c.cell("diff0.map", i, j, 3, 3);
          const Rgb8 lo = attnscope::colorAt(ColorMap::Diverging, static_cast<float>((d + m) / (2 * m) - 1e-5));
          const Rgb8 hi = attnscope::colorAt(ColorMap::Diverging, static_cast<float>((d + m) / (2 * m) + 1e-5));
          c.expect(got == lo || got == hi, "head 1 diff cell (" + std::to_string(i) + "," + std::to_string(j) +
                                               "): " + std::to_string(d) + " drawn " + Checker::str(got));
          if (i == 1) c.expect(got == white, "x2's row is unchanged: white");
          const Rgb8 other = c.cell("diff1.map", i, j, 3, 3);
          c.expect(other == white, "head 2 unchanged: white, drawn " + Checker::str(other));
        }
    } else if (test == "cluster_order") {
      // The grid's slots run left to right, then top to bottom; slot k must hold the k-th leaf of the UPGMA
      // clustering (1 - cosine) of the saved scene's heads.
      const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/scene.json");
      const attnscope::Result result = attnscope::CpuBackend(1).compute(saved);
      const attnscope::Clustering cl = attnscope::clusterHeads(result.similarity, attnscope::ClusterMetric::Cosine);
      std::vector<std::pair<std::pair<float, float>, int>> slots;  // ((top, left), head)
      for (int h = 0; h < 4; ++h) {
        const std::vector<float> r = c.rect("head" + std::to_string(h) + ".map");
        slots.push_back({{r[1], r[0]}, h});
      }
      std::sort(slots.begin(), slots.end());
      std::string shown, want;
      for (int k = 0; k < 4; ++k) {
        shown += std::to_string(slots[static_cast<std::size_t>(k)].second + 1);
        want += std::to_string(cl.order[static_cast<std::size_t>(k)] + 1);
      }
      c.expect(shown == want, "heads grid in cluster order " + want + ": shown " + shown);
      c.expect(c.layout.contains("similarity.column.5"), "the statistics table has the head-type columns");
    } else if (test == "breakdown") {
      // Head 1, query x1 (row 0), key x2 (column 1): q = (1, 0), k = (1, 0); products 1 (t = 0) and 0 (t = 1).
      c.expect(c.layout.contains("breakdown.cell.0.0.1"), "the breakdown shows head 1, row 0, column 1");
      const std::vector<float> b0 = c.rect("breakdown.bar0"), b1 = c.rect("breakdown.bar1");
      // A bar is |product| / largest of the half-width each side of the centre line: the largest product (1 of
      // 1) fills the whole right half, from the centre to the extent's right edge.
      const std::vector<float> extent = c.rect("breakdown.bar0.extent");
      const float centre = (extent[0] + extent[2]) / 2, half = (extent[2] - extent[0]) / 2;
      c.expect(std::abs(b0[0] - centre) < 0.5f && std::abs((b0[2] - b0[0]) - half) < 0.5f,
               "the largest product's bar spans the right half: " + std::to_string(b0[2] - b0[0]) + " of " +
                   std::to_string(half) + " px");
      const Rgb8 end = c.img.at(static_cast<int>(b0[2]) - 1, static_cast<int>((b0[1] + b0[3]) / 2));
      c.expect(end.g > end.r && end.g > end.b, "the bar is drawn to its end: " + Checker::str(end));
      c.expect(b1[2] - b1[0] < 0.5f, "the zero product's bar is empty: " + std::to_string(b1[2] - b1[0]) + " px");
      // The bar is green (positive): green the strongest channel by a clear margin, whatever the exact shade.
      const Rgb8 bar = c.img.at(static_cast<int>((b0[0] + b0[2]) / 2), static_cast<int>((b0[1] + b0[3]) / 2));
      c.expect(bar.g > bar.r + 40 && bar.g > bar.b + 40, "a positive product is drawn green: " + Checker::str(bar));
      c.expect(c.layout.contains("breakdown.weight"), "the softmax of the row is shown");
    } else if (test == "pitfalls") {
      // mask_ignored on the causal worked example: mistaken = the unmasked weights (viridis), beside
      // unmasked - causal on the diverging map over -m..m, m the largest |difference| over both heads.
      double m = 0;
      for (int h = 0; h < 2; ++h) {
        const Grid u = expectedWeights(h, false), k = expectedWeights(h, true);
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) m = std::max(m, std::fabs(u[i][j] - k[i][j]));
      }
      for (int h = 0; h < 2; ++h) {
        const Grid u = expectedWeights(h, false), k = expectedWeights(h, true);
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) {
            c.expectWeightColor("pitfall.weights" + std::to_string(h), h, i, j, u[i][j]);
            const double d = u[i][j] - k[i][j];
            const Rgb8 got = c.cell("pitfall.diff" + std::to_string(h), i, j, 3, 3);
            const Rgb8 lo = attnscope::colorAt(ColorMap::Diverging, static_cast<float>((d + m) / (2 * m) - 1e-5));
            const Rgb8 hi = attnscope::colorAt(ColorMap::Diverging, static_cast<float>((d + m) / (2 * m) + 1e-5));
            c.expect(got == lo || got == hi, "head " + std::to_string(h + 1) + " difference (" + std::to_string(i) +
                                                 "," + std::to_string(j) + ") " + std::to_string(d) + ": drawn " +
                                                 Checker::str(got));
          }
      }
    } else if (test == "undo_and_save") {
      c.expectWorkedExample(2, false);  // the causal mask was undone
      const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/saved_scene.json");
      const attnscope::Scene worked = attnscope::workedExampleScene();
      c.expect(saved.mask == attnscope::MaskKind::None && saved.query == worked.query &&
                   saved.heads[1].w_k == worked.heads[1].w_k,
               "the saved scene is the worked example, unmasked");
    } else if (test == "enlarge_zoom") {
      const Checker full{loadPng(dir + "/full.png"), loadLayout(dir + "/layout_full.json")};
      c.expect(full.layout.contains("head1.map") && !full.layout.contains("head0.map"), "only head 2 shown");
      const std::vector<float> r = full.rect("head1.map");
      // In a grid of 4 heads a map takes at most half of the panel's width; enlarged, the one map takes most of
      // it: more than 3/4 of the width from the map's left edge to the Back button's right edge (the colour bar
      // has the rest). Seen 454 of 519 px.
      const std::vector<float> back = full.rect("heads.back");
      c.expect(r[2] - r[0] > 0.75f * (back[2] - r[0]), "head 2 enlarged to " +
                                                            std::to_string(static_cast<int>(r[2] - r[0])) + " of " +
                                                            std::to_string(static_cast<int>(back[2] - r[0])) + " px");
      const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/scene.json");
      const attnscope::Result result = attnscope::CpuBackend(1).compute(saved);
      const attnscope::Matrix& w = result.heads[1].weights;  // (64, 64)
      int wrong = 0;
      for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j) {
          const Rgb8 got = full.cell("head1.map", i, j, 64, 64);
          wrong += !(got == attnscope::colorAt(ColorMap::Viridis, w(i, j) - 1e-5f) ||
                     got == attnscope::colorAt(ColorMap::Viridis, w(i, j) + 1e-5f));
        }
      c.expect(wrong == 0,
               "all 64 x 64 cells of the enlarged head in colorAt(weight): " + std::to_string(wrong) + " wrong");
      // Zoomed in: cells are wider, so runs of one colour along a row get longer.
      const auto meanRun = [](const Image& img, const std::vector<float>& rect) {
        const int y = static_cast<int>((rect[1] + rect[3]) / 2);
        int runs = 1;
        for (int x = static_cast<int>(rect[0]) + 1; x < static_cast<int>(rect[2]); ++x)
          runs += !(img.at(x, y) == img.at(x - 1, y));
        return (rect[2] - rect[0]) / static_cast<float>(runs);
      };
      const float before = meanRun(full.img, r), after = meanRun(c.img, c.rect("head1.map"));
      c.expect(after > 1.5f * before,
               "wheel zoomed in: mean run " + std::to_string(before) + " -> " + std::to_string(after) + " px");
    } else if (test == "gpt2") {
      // The window's grid against the engine's forward on the same checkpoint and text (the forward itself is
      // tested against an independent NumPy GPT-2 in test_model_forward.cpp). The default text is the panel's.
      const attnscope::model::Model ck = attnscope::model::loadModel(dir + "/ckpt");
      const std::vector<int> ids = ck.tokenizer.encode("The cat sat on the mat.");
      const attnscope::model::ForwardResult f = attnscope::model::modelForward(ck, ids);
      const int n = f.n, heads = ck.architecture().n_head;
      int wrong = 0, checked = 0;
      for (int l = 0; l < ck.architecture().n_layer; ++l)
        for (int h = 0; h < heads; ++h) {
          const std::string tile = "model.tile." + std::to_string(l) + "." + std::to_string(h);
          if (!c.layout.contains(tile)) {
            c.expect(false, tile + " drawn");
            continue;
          }
          const auto w = f.map(l, h);
          const int wrong_before = wrong;
          for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
              const Rgb8 got = c.cell(tile, i, j, n, n);
              const bool ok = j > i ? got == attnscope::kMaskedColor
                                    : (got == attnscope::colorAt(ColorMap::Viridis, w(i, j) - 1e-5f) ||
                                       got == attnscope::colorAt(ColorMap::Viridis, w(i, j) + 1e-5f));
              wrong += !ok;
              if (!ok && wrong - wrong_before <= 2)
                std::printf("      %s cell (%d,%d): weight %.4f drawn %s\n", tile.c_str(), i, j, w(i, j),
                            Checker::str(got).c_str());
              ++checked;
            }
        }
      c.expect(wrong == 0, "GPT-2 grid: " + std::to_string(checked) + " cells in colorAt(weight) or masked, " +
                               std::to_string(wrong) + " wrong");
      // Hovered (hover.png): the tile is outlined in white and a tooltip opens over the grid.
      const Image hover = loadPng(dir + "/hover.png");
      const std::vector<float> hovered = c.rect("model.tile.2.3");
      c.expect(hover.at(static_cast<int>(hovered[0]) - 1, static_cast<int>(hovered[1]) + 5) == Rgb8{255, 255, 255},
               "hovered tile outlined in white");
      // The tooltip opens right of and below the mouse (the tile's centre), ImGui putting its corner 16 to 28 px
      // off: the region [mx + 30, mx + 130) x [my + 20, my + 60) lies inside its four lines (seen: the box spans
      // mx + 25 .. mx + 172, my + 2 .. my + 87), and every pixel under it changes; more than 95 % allows for an edge.
      int changed = 0, region = 0;
      const int mx = static_cast<int>((hovered[0] + hovered[2]) / 2), my = static_cast<int>((hovered[1] + hovered[3]) / 2);
      for (int y = my + 20; y < my + 60; ++y)
        for (int x = mx + 30; x < mx + 130; ++x, ++region) changed += !(hover.at(x, y) == c.img.at(x, y));
      c.expect(changed > 0.95 * region, "tooltip drawn beside the mouse (" + std::to_string(changed) + " of " +
                                            std::to_string(region) + " pixels changed)");
      // Layer 1 opened as the scene: the heads panel shows its 4 maps, computed by the window's backend.
      const Checker scene{loadPng(dir + "/scene.png"), loadLayout(dir + "/layout_scene.json")};
      c.expect(scene.layout.contains("head3.map") && !scene.layout.contains("head4.map"), "layer 1's 4 heads shown");
      int scene_wrong = 0;
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < n; ++i)
          for (int j = 0; j <= i; ++j) {
            const float w = f.keptMap(heads + h)(i, j);
            const Rgb8 got = scene.cell("head" + std::to_string(h) + ".map", i, j, n, n, Checker::kAboveText);
            scene_wrong += !(got == attnscope::colorAt(ColorMap::Viridis, w - 1e-5f) ||
                             got == attnscope::colorAt(ColorMap::Viridis, w + 1e-5f));
          }
      c.expect(scene_wrong == 0, "layer 1 as a scene: every unmasked cell in colorAt(the forward's weight), " +
                                     std::to_string(scene_wrong) + " wrong");
    } else if (test == "export") {
      // The exported PNG decoded: where each cell lies is the exporter's layout (tested in test_export.cpp),
      // its colour must be the hand weight's (seed 001's matrices, computed here in double).
      const Image exported = loadPng(dir + "/exported_heads.png");  // throws when missing or not a PNG
      const attnscope::Scene scene = attnscope::workedExampleScene();
      attnscope::ExportRequest request;  // what the panel exports by default: all heads, PNG, no annotations
      request.what = attnscope::ExportWhat::Heads;
      request.format = attnscope::ExportFormat::Png;
      request.dpi = attnscope::kDefaultDpi;  // the Export tab's default
      const attnscope::Figure figure = attnscope::makeFigure(scene, attnscope::CpuBackend(1).compute(scene), request);
      const attnscope::FigureLayout layout = attnscope::pngLayout(figure);
      // It records its dpi: a pHYs chunk right after IHDR (byte 33) of 7559 pixels a metre each way (192 / 0.0254,
      // rounded), unit 1 (the metre): bytes worked out by Python's struct and zlib.crc32, CRC included.
      {
        std::ifstream in(dir + "/exported_heads.png", std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::string hex;
        for (std::size_t i = 33; i < std::min<std::size_t>(bytes.size(), 33 + 21); ++i) {
          char byte[3];
          std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(bytes[i]));
          hex += byte;
        }
        c.expect(hex == "000000097048597300001d8700001d87018fe5f165",
                 "the exported PNG records 192 dpi (pHYs after IHDR): bytes 33-53 " + hex);
      }
      c.expect(exported.w == layout.width && exported.h == layout.height,
               "export wrote a " + std::to_string(exported.w) + " x " + std::to_string(exported.h) + " PNG, laid out " +
                   std::to_string(layout.width) + " x " + std::to_string(layout.height));
      if (exported.w == layout.width && exported.h == layout.height)
        for (int h = 0; h < 2; ++h) {
          const Grid w = expectedWeights(h, false);
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              const attnscope::PixelRect r = attnscope::cellRect(figure, layout, h, i, j);
              const Rgb8 got = exported.at(r.x + r.w / 2, r.y + r.h / 2);
              const Rgb8 lo = attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w[i][j] - 1e-5));
              const Rgb8 hi = attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w[i][j] + 1e-5));
              c.expect(got == lo || got == hi, "exported head " + std::to_string(h + 1) + " cell (" +
                                                   std::to_string(i) + "," + std::to_string(j) + "): weight " +
                                                   std::to_string(w[i][j]) + " drawn " + Checker::str(got));
            }
        }
      // The page typed into the tab: 6 x 4 inches (576 x 384 layout pixels, 96 an inch) and 12-point labels, 16 px
      // (12 x 96 / 72): the colour bar's top tick "1.0" at that size.
      {
        std::ifstream in(dir + "/sized_heads.svg");
        const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        c.expect(svg.find("width=\"6in\" height=\"4in\" viewBox=\"0 0 576 384\"") != std::string::npos,
                 "the Export tab's width 6 and height 4 wrote a 6in x 4in SVG");
        c.expect(svg.find("font-size=\"16\" text-anchor=\"start\" fill=\"#262626\" stroke=\"none\" "
                          "xml:space=\"preserve\">1.0</text>") != std::string::npos,
                 "its font 12 pt drew the ticks at 16 px");
      }
    } else if (test == "export_after_screenshot") {
      // The engine's figure layout says where each cell lands; its colour must be the one of the weight worked
      // out here for that row and column (a flipped image puts row 2's colours on row 0).
      const Image png = loadPng(dir + "/head1.png");
      const attnscope::Scene worked = attnscope::workedExampleScene();
      attnscope::ExportRequest request;
      request.what = attnscope::ExportWhat::Head;
      request.head = 0;
      request.dpi = attnscope::kDefaultDpi;  // the Export tab's default
      const attnscope::Figure fig =
          attnscope::makeFigure(worked, attnscope::CpuBackend(1).compute(worked), request);
      const attnscope::FigureLayout layout = attnscope::pngLayout(fig);
      c.expect(png.w == layout.width && png.h == layout.height, "exported PNG has the figure's size");
      const Grid w = expectedWeights(0, false);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          const attnscope::PixelRect r = attnscope::cellRect(fig, layout, 0, i, j);
          const Rgb8 got = png.at(r.x + r.w / 2, r.y + r.h / 4);  // above the cell's written value
          const Rgb8 lo = attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w[i][j] - 1e-5));
          const Rgb8 hi = attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w[i][j] + 1e-5));
          c.expect(got == lo || got == hi, "exported cell (" + std::to_string(i) + "," + std::to_string(j) +
                                               ") in the colour of " + std::to_string(w[i][j]) + ": " +
                                               Checker::str(got));
        }
      // The path's extension wins: a .svg path typed with PNG picked switches the format and writes SVG.
      c.expect(!c.layout.contains("export.mismatch"), "a .svg path with PNG picked is no mismatch");
      std::ifstream svg(dir + "/head1.svg");
      std::string head;
      std::getline(svg, head);
      c.expect(head.rfind("<?xml", 0) == 0, "head1.svg written as SVG: its first line " + head);
    } else if (test == "open_over_edits") {
      // Opened: the unmasked worked example, with the message that Undo brings the edits back; then undone.
      Checker opened{loadPng(dir + "/opened.png"), loadLayout(dir + "/layout_opened.json")};
      opened.expect(opened.layout.contains("file.message"), "a message beside the path");
      opened.expectWorkedExample(2, false);
      c.failures += opened.failures;
      c.expectWorkedExample(2, true);  // Ctrl+Z: the causal mask made before the open is back
    } else if (test == "big_scene") {
      // The frame of the click: the worked example still shown (its colours), marked stale, the new shape said.
      Checker pending{loadPng(dir + "/pending.png"), loadLayout(dir + "/layout_pending.json")};
      pending.expect(pending.layout.contains("status.computing") && pending.layout.contains("heads.stale"),
                     "while the new scene computes: the status bar says so and the maps are marked stale");
      pending.expect(pending.layout.contains("head1.map") && !pending.layout.contains("head2.map"),
                     "the previous scene's 2 heads stay on show");
      pending.expectWorkedExample(2, false);
      c.failures += pending.failures;
      // Then the new scene: 8 heads, nothing pending.
      c.expect(c.layout.contains("head7.map") && !c.layout.contains("head8.map") &&
                   !c.layout.contains("status.computing") && !c.layout.contains("heads.stale"),
               "the new scene's 8 heads, its result landed");
      // The Cell tab's heading at positions 491 and 399 ran off the pane before it wrapped.
      const nlohmann::json cell = loadLayout(dir + "/layout_cell.json");
      std::string clipped;
      for (const auto& id : cell.value("clipped", nlohmann::json::array())) clipped += " " + id.get<std::string>();
      c.expect(cell.contains("clipped") && clipped.empty() && cell.contains("breakdown.weight"),
               "the Cell tab at 3-digit positions: drawn, nothing clipped" + (clipped.empty() ? "" : " (clipped:" + clipped + ")"));
    } else if (test == "model_grid" || test == "model_grid_ondemand") {
      checkModelGrid(c, dir, test == "model_grid_ondemand", argc == 4 && std::string(argv[3]) == "gpu");
      // Maps not kept, on the GPU backend: every tile recomputed by the grid worker's GPU (RunTiles), 12 x 12.
      if (test == "model_grid_ondemand" && argc == 4 && std::string(argv[3]) == "gpu")
        c.expect(note(c.layout, "model.grid_gpu_tiles") == "144" && !c.layout.contains("model.grid_problem"),
                 "the grid's 144 maps drawn on the GPU (" + note(c.layout, "model.grid_gpu_tiles") + ")");
    } else if (test == "tiny_model") {
      checkTinyModel(c, dir);
    } else if (test == "model_wide") {
      checkModelWide(c, dir);
      checkModelGridFills(c);
      checkTokenStrip(c, 64);  // the typed text's 63 characters and <s> (the fixture has 64 positions)
    } else if (test == "row_contrast") {
      checkRowContrast(c);
    } else if (test == "value_norms") {
      checkSceneValueNorms(c);
    } else if (test == "export_row_contrast") {
      checkExportRowContrast(c, dir);
    } else if (test == "export_figure") {
      checkExportFigure(c, dir);
    } else if (test == "export_value_norms") {
      checkExportValueNorms(c, dir);
    } else if (test == "heads_wide") {
      checkHeadsWide(c);
    } else if (test == "model_llama") {
      checkModelLlama(c, dir);
    } else if (test == "model_llama_scene") {
      checkModelLlamaScene(c, dir);
    } else if (test == "model_bert") {
      checkModelBert(c, dir);
    } else if (test == "groups_rope") {
      checkGroupsRope(c, dir);
    } else if (test == "panels") {
      checkPanels(c, dir);
    } else if (test == "lesson") {
      checkLesson(c, dir);
    } else if (test == "lesson_walk") {
      checkLessonWalk(c, dir);
    } else if (test == "teacher_figure") {
      checkTeacherFigure(c, dir);
    } else if (test == "row_profile") {
      checkRowProfile(c, dir);
    } else if (test == "long_gpu") {
      checkLongGpu(c, dir);
    } else if (test == "long_value_norms") {
      checkLongValueNorms(c, dir);
    } else if (test == "long_grid") {
      checkLongGrid(c);
    } else if (test == "long_zoom" || test == "big_zoom") {
      checkLongZoom(c, dir, test == "long_zoom");
    } else if (test == "open_arrays") {
      checkOpenArrays(c, dir);
    } else if (test == "capture") {
      checkCapture(c, dir, argc == 4 ? argv[3] : "auto");
    } else if (test == "panes") {
      checkPanes(c, dir);
    } else if (test == "browse") {
      checkBrowse(c, dir);
    } else if (test == "script_commands") {
      checkScriptCommands(c, dir);
    } else if (test == "open_command_line") {
      checkOpenCommandLine(c, dir);
    } else if (test == "export_background") {
      checkExportBackground(c, dir);
    } else if (test == "model_gemma2") {
      checkModelGemma2(c);
    } else if (test == "hostile_fields") {
      expectHostileValuesRefused(c, dir);
    } else if (test == "clipping") {
      expectNothingClipped(c, dir);
    } else if (test == "workarea") {
      // The size check above is the test (the screen is 1280 x 800); the heads are still drawn.
      c.expect(c.layout.contains("head0.map") && c.layout.contains("head1.map"), "both heads drawn");
    } else if (test == "walkthrough") {
      // Next, Right, Right, Left: the third step, "Head 1: K = X W_K", is shown. What is drawn for it: its
      // input W_K as an editable table (step 2 shows W_Q, step 4 W_V), and head 1's heatmap outlined, head 2's
      // not. The outline lies within 4 px outside the map: some pixel there differs from the panel's background
      // 8 px out (the row labels start further left).
      c.expect(c.layout.contains("walk.W_K.3.1") && !c.layout.contains("walk.W_K.4.0") &&
                   !c.layout.contains("walk.W_K.0.2") && !c.layout.contains("walk.W_Q.0.0") &&
                   !c.layout.contains("walk.W_V.0.0"),
               "the step shows W_K (4 x 2 cells), the input of K = X W_K");
      const auto outlined = [&](const std::string& map) {
        const std::vector<float> r = c.rect(map);
        const int y = static_cast<int>(r[1]) + 5, x0 = static_cast<int>(r[0]);
        for (int dx = 1; dx <= 4; ++dx)
          if (!(c.img.at(x0 - dx, y) == c.img.at(x0 - 8, y))) return true;
        return false;
      };
      c.expect(outlined("head0.map") && !outlined("head1.map"), "the step is about head 1: its map is outlined");
    } else if (test == "walkthrough_edit") {
      // X[3][3] typed from 0 to 1 in the walkthrough: X row 3 becomes [1, 1, 1, 0]. Head 2 reads columns 3-4:
      // Q2 = X W2_Q = X[:, 3:4] gives rows [1, 0], [0, 1], [1, 0] (row 3 was [0, 0]); K2 = [X[:, 4], X[:, 3]]
      // gives rows [0, 1], [1, 0], [0, 1]. Row 3 of Q2 K2^T is [0, 1, 0] (was [0, 0, 0]), scaled by 1/sqrt(2)
      // [0, 0.7071, 0], softmax [1, e^0.7071, 1] / (2 + e^0.7071) = [0.2483, 0.5035, 0.2483] (was 1/3 each).
      Grid x = kX;
      x[2][2] = 1;
      const Grid w = expectedWeights(1, false, x);
      c.expect(std::fabs(w[2][1] - 0.5035) < 5e-5 && std::fabs(w[2][0] - 0.2483) < 5e-5,
               "independent weights agree with the hand value row 3 = [0.2483, 0.5035, 0.2483]");
      const nlohmann::json q_step = loadLayout(dir + "/layout_q.json");
      c.expect(q_step.contains("walk.step8") && q_step.contains("walk.dropped.Q"),
               "on head 2's Q step the text's printed Q2 is marked as no longer applying");
      c.expect(c.layout.contains("walk.step13"), "then on head 2's weights step");
      // The step's own heatmap and the heads panel's head 2 both follow the edit.
      for (const char* map : {"walk.heatmap", "head1.map"})
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) c.expectWeightColor(map, 1, i, j, w[i][j]);
      c.expect(!(c.cell("walk.heatmap", 2, 1, 3, 3) == attnscope::colorAt(ColorMap::Viridis, 1.0f / 3.0f)),
               "row 3's middle weight is no longer drawn as 1/3");
      // Exactly that one cell changed, through the edit path (the saved scene is the window's scene).
      const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/saved_scene.json");
      attnscope::Scene want = attnscope::workedExampleScene();
      want.query(2, 2) = 1;
      c.expect(saved.query == want.query && saved.heads[0].w_q == want.heads[0].w_q &&
                   saved.heads[1].w_v == want.heads[1].w_v,
               "the saved scene is the worked example with X[3][3] = 1");
    } else {
      std::fprintf(stderr, "gui_check: unknown test %s\n", test.c_str());
      return 2;
    }
    std::printf("%s: %d failure(s)\n", test.c_str(), c.failures);
    return c.failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gui_check: %s\n", e.what());
    return 1;
  }
}
