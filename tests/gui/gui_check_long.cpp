// gui_long_zoom: a long scene (16384 tokens, maps not kept) zoomed deep into head 1; gui_big_zoom_{cpu,gpu}: a
// big one (512 tokens, 8 heads, maps kept) computed off the UI thread; gui_long_gpu: a long scene (2048 tokens
// under ATTNSCOPE_MAPS_LIMIT=8M) on the hardware-GPU path, its overviews and the deep zoom written by the GPU's
// tile shader. Every cell in view must be drawn in the colour of the engine's weight tile for that region
// (computed here from the saved scene by the CPU backend). gui_long_grid: eight maps of a 32768-token scene,
// each within its place in the grid.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/scene/key_mask.h"
#include "attnscope/scene/scene_json.h"
#include "gui_check.h"

namespace gui {

namespace {

bool weightColor(Rgb8 got, float w) {
  return got == attnscope::colorAt(attnscope::ColorMap::Viridis, w - 1e-5f) ||
         got == attnscope::colorAt(attnscope::ColorMap::Viridis, w + 1e-5f);
}

// Head `head`'s map in the grid (screenshot `img`, its rectangle `m`) against the CPU's max-pooled overview
// (min(n, 1024) blocks a side): the heatmap shader draws each pixel as the largest of the texels it covers, so
// every pixel must be the colour of some overview texel within its footprint (plus one texel of slack at each
// side), the masked colour only where some texel there is masked. Pixels are sampled on a 24 x 24 grid.
// `extent` < 1: the samples cover only the map's top-left extent x extent part (a causal map's large weights).
void checkOverviewPixels(Checker& c, const Image& img, const std::vector<float>& m, const attnscope::Tile& overview,
                         int head, float extent = 1.0f) {
  const int rows = static_cast<int>(overview.values.rows()), cols = static_cast<int>(overview.values.cols());
  const float texels_x = static_cast<float>(cols) / (m[2] - m[0]), texels_y = static_cast<float>(rows) / (m[3] - m[1]);
  int checked = 0, wrong = 0;
  for (int sy = 1; sy < 24; ++sy)
    for (int sx = 1; sx < 24; ++sx) {
      const float x = m[0] + (m[2] - m[0]) * extent * static_cast<float>(sx) / 24.0f;
      const float y = m[1] + (m[3] - m[1]) * extent * static_cast<float>(sy) / 24.0f;
      const float u = (std::floor(x) + 0.5f - m[0]) * texels_x, v = (std::floor(y) + 0.5f - m[1]) * texels_y;
      const int x0 = std::max(0, static_cast<int>(std::floor(u - texels_x / 2)) - 1);
      const int x1 = std::min(cols - 1, static_cast<int>(std::floor(u + texels_x / 2)) + 1);
      const int y0 = std::max(0, static_cast<int>(std::floor(v - texels_y / 2)) - 1);
      const int y1 = std::min(rows - 1, static_cast<int>(std::floor(v + texels_y / 2)) + 1);
      const Rgb8 got = img.at(static_cast<int>(x), static_cast<int>(y));
      bool ok = false;
      for (int i = y0; i <= y1 && !ok; ++i)
        for (int j = x0; j <= x1 && !ok; ++j)
          ok = overview.masked(i, j) ? got == attnscope::kMaskedColor : weightColor(got, overview.values(i, j));
      ++checked;
      if (!ok && ++wrong <= 3)
        std::printf("      head %d pixel (%.0f,%.0f), texels %d:%d x %d:%d: drawn %s\n", head + 1, x, y, y0, y1 + 1,
                    x0, x1 + 1, Checker::str(got).c_str());
    }
  c.expect(wrong == 0, "head " + std::to_string(head + 1) + "'s overview pixels in the colours of the CPU's " +
                           std::to_string(rows) + " x " + std::to_string(cols) + " max-pooled tile: " +
                           std::to_string(wrong) + " wrong of " + std::to_string(checked));
}

}  // namespace

void checkLongGpu(Checker& c, const std::string& dir) {
  const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/scene.json");
  c.expect(saved.nQ() == 2048 && saved.numHeads() == 2, "the 2048-token, 2-head scene was saved");
  c.expect(!c.layout.contains("banner"), "no banner (the GPU backend did not fail over to the CPU)");
  attnscope::ComputeOptions options;
  options.maps = attnscope::MapPolicy::Auto;  // ATTNSCOPE_MAPS_LIMIT=8M, as the window ran
  options.analysis = false;
  const attnscope::Result result = attnscope::CpuBackend(1).compute(saved, options);
  c.expect(!result.heads[0].hasMap(), "the maps are not kept (the flash path)");
  const nlohmann::json edit = loadLayout(dir + "/layout_edit.json");
  c.expect(edit.contains("heads.overviews") && edit.contains("heads.stale_map"),
           "the frame after the causal edit: the overviews restarted (progress shown), an older one drawn stale");
  const nlohmann::json grid = loadLayout(dir + "/layout_grid.json");
  const Image grid_img = loadPng(dir + "/grid.png");
  c.expect(!grid.contains("heads.overviews") && !grid.contains("heads.stale_map"),
           "every overview in, none stale, before the grid's screenshot");
  for (int h = 0; h < 2; ++h) {
    const std::string map = "head" + std::to_string(h) + ".map";
    if (!grid.contains(map)) {
      c.expect(false, map + " in the grid");
      continue;
    }
    const attnscope::Tile overview = attnscope::weightTile(
        saved, result, attnscope::TileRequest{h, 0, -1, 0, -1, attnscope::Pooling::Max, 1024, 1024});
    checkOverviewPixels(c, grid_img, grid[map].get<std::vector<float>>(), overview, h);
  }
  checkLongZoom(c, dir, true);
}

// gui_long_value_norms: the grid's two causal overviews with the switch on, against the max over each block (2 x 2
// cells: 2048 tokens in 1024 texels) of alpha_ij norm_j / largest, worked here: alpha from the CPU's kept map,
// norm_j = ||(x_j W_V^h + b_V^h) W_O^h|| in double from the saved scene's matrices, largest over both heads.
void checkLongValueNorms(Checker& c, const std::string& dir) {
  const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/scene.json");
  c.expect(saved.nQ() == 2048 && saved.numHeads() == 2 && !saved.grouped(), "the 2048-token, 2-head scene was saved");
  c.expect(c.layout.contains("heads.value_norm_note") && !c.layout.contains("heads.overviews") &&
               !c.layout.contains("heads.stale_map"),
           "the switch on (its note shown), every weighted overview in, none stale");
  attnscope::ComputeOptions keep;
  keep.maps = attnscope::MapPolicy::Keep;
  keep.analysis = false;
  const attnscope::Result result = attnscope::CpuBackend(1).compute(saved, keep);
  using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int n = saved.nK(), heads = saved.numHeads();
  MatrixD norms(heads, n);
  for (int h = 0, row = 0; h < heads; ++h) {
    const attnscope::HeadParams& p = saved.heads[static_cast<std::size_t>(h)];
    MatrixD v = saved.valueRows().cast<double>() * p.w_v.cast<double>();  // (n, d_v)
    if (p.b_v) v.rowwise() += p.b_v->cast<double>();
    if (saved.w_o) v = v * saved.w_o->middleRows(row, p.w_v.cols()).cast<double>();  // head h's d_v rows of W_O
    row += static_cast<int>(p.w_v.cols());
    norms.row(h) = v.rowwise().norm().transpose();
  }
  const double largest = norms.maxCoeff();
  const attnscope::KeyMask mask(saved);
  const Image img = loadPng(dir + "/window.png");
  for (int h = 0; h < heads; ++h) {
    const std::string map = "head" + std::to_string(h) + ".map";
    if (!c.layout.contains(map)) {
      c.expect(false, map + " in the grid");
      continue;
    }
    const attnscope::Matrix& alpha = result.heads[static_cast<std::size_t>(h)].weights;
    attnscope::Tile want;
    want.values = attnscope::Matrix::Zero(1024, 1024);
    want.masked = attnscope::MaskMatrix::Ones(1024, 1024);
    double plain_gap = 0;  // in the top-left 64 blocks: how far the plain max lies from the weighted one
    for (int y = 0; y < 1024; ++y)
      for (int x = 0; x < 1024; ++x) {
        double top = 0, plain = 0;
        for (int i = 2 * y; i < 2 * y + 2; ++i)
          for (int j = 2 * x; j < 2 * x + 2; ++j) {
            if (!mask.allowed(i, j)) continue;
            want.masked(y, x) = 0;
            top = std::max(top, alpha(i, j) * norms(h, j) / largest);
            plain = std::max(plain, static_cast<double>(alpha(i, j)));
          }
        want.values(y, x) = static_cast<float>(top);
        if (y < 64 && x < 64) plain_gap = std::max(plain_gap, plain - top);
      }
    c.expect(plain_gap > 0.1, "causal: the top-left weighted blocks differ from the plain ones (by up to " +
                                  std::to_string(plain_gap) + "), so their colours tell the two apart");
    checkOverviewPixels(c, img, c.layout[map].get<std::vector<float>>(), want, h);
    checkOverviewPixels(c, img, c.layout[map].get<std::vector<float>>(), want, h, 64.0f / 1024.0f);
  }
}

void checkLongZoom(Checker& c, const std::string& dir, bool long_scene) {
  const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/scene.json");
  if (long_scene) {
    c.expect(saved.nQ() >= 2048, "a long scene: n = " + std::to_string(saved.nQ()));
  } else {
    c.expect(saved.nQ() == 512 && saved.numHeads() == 8, "the 512-token, 8-head scene was saved");
    // The click's frame: the worked example still on show, the compute under way (not on the UI thread).
    const nlohmann::json pending = loadLayout(dir + "/layout_pending.json");
    c.expect(pending.contains("status.computing") && pending.contains("head1.map") && !pending.contains("head2.map"),
             "the frame of the click: the previous 2 heads on show, the status bar saying a compute is under way");
    c.expect(!c.layout.contains("banner"), "no banner (the backend did not fall back)");
  }
  attnscope::ComputeOptions options;
  options.maps = attnscope::MapPolicy::Auto;
  options.analysis = false;
  const attnscope::Result result = attnscope::CpuBackend(1).compute(saved, options);
  c.expect(result.heads[0].hasMap() != long_scene,
           long_scene ? "the maps are not kept (tiles on demand)" : "the maps are kept");
  if (!c.layout.contains("head0.map") || !c.layout.contains("heads.zoom_cells")) {
    c.expect(false, "head 1 enlarged and zoomed (head0.map, heads.zoom_cells probed)");
    return;
  }
  const std::vector<float> m = c.rect("head0.map");          // pixels
  const std::vector<float> v = c.rect("heads.zoom_cells");   // cells: col0, row0, col1, row1
  const float px_per_col = (m[2] - m[0]) / (v[2] - v[0]), px_per_row = (m[3] - m[1]) / (v[3] - v[1]);
  c.expect(px_per_col > 8 && px_per_row > 8, "deep zoom: " + std::to_string(px_per_col) + " px a cell");
  const int r0 = static_cast<int>(std::floor(v[1])), r1 = static_cast<int>(std::ceil(v[3]));
  const int c0 = static_cast<int>(std::floor(v[0])), c1 = static_cast<int>(std::ceil(v[2]));
  const attnscope::Tile tile = attnscope::weightTile(saved, result, attnscope::TileRequest{0, r0, r1, c0, c1});
  int checked = 0, wrong = 0;
  for (int i = r0; i < r1; ++i)
    for (int j = c0; j < c1; ++j) {
      // The cell's centre across, a fifth of the way down (the clicked and hovered cells' 2 px outlines stay at
      // its edges; a cell big enough to carry its weight as text writes it across its middle); cells cut by the
      // map's edge (within 2 px) are left out. The pooled overview would show the largest weight of 16 x 16 cells.
      const float x = m[0] + (static_cast<float>(j) + 0.5f - v[0]) * px_per_col;
      const float y = m[1] + (static_cast<float>(i) + Checker::kAboveText - v[1]) * px_per_row;
      if (x < m[0] + 2 || x > m[2] - 2 || y < m[1] + 2 || y > m[3] - 2) continue;
      const Rgb8 got = c.img.at(static_cast<int>(x), static_cast<int>(y));
      const float w = tile.values(i - r0, j - c0);
      const bool ok = tile.masked(i - r0, j - c0)
                          ? got == attnscope::kMaskedColor
                          : (got == attnscope::colorAt(attnscope::ColorMap::Viridis, w - 1e-5f) ||
                             got == attnscope::colorAt(attnscope::ColorMap::Viridis, w + 1e-5f));
      ++checked;
      if (!ok && ++wrong <= 3)
        std::printf("      cell (%d,%d): weight %.5f drawn %s\n", i, j, w, Checker::str(got).c_str());
    }
  c.expect(checked >= (long_scene ? 100 : 9) && wrong == 0, "cells in view in colorAt(the engine tile's weight): " +
                                             std::to_string(wrong) + " wrong of " + std::to_string(checked));
}

void checkLongGrid(Checker& c) {
  // Eight maps in a grid of however many columns gives them the most room (panel_heads.cpp): every map inside
  // the 1280 x 800 window above its status bar and none a mere sliver (the grid has some 150 px a head); any two
  // side by side apart, or one under the other with its title line between (a 15 px font: at least 15 px from a
  // map's bottom to the next map's top).
  std::vector<std::vector<float>> maps;
  for (int h = 0; h < 8; ++h) {
    const std::vector<float> r = c.rect("head" + std::to_string(h) + ".map");
    maps.push_back(r);
    const std::string name = "head " + std::to_string(h + 1) + " map [" + std::to_string(static_cast<int>(r[0])) + "," +
                             std::to_string(static_cast<int>(r[1])) + " .. " + std::to_string(static_cast<int>(r[2])) +
                             "," + std::to_string(static_cast<int>(r[3])) + "]";
    c.expect(r[2] - r[0] >= 50 && r[3] - r[1] >= 50 && r[3] <= 780, name + ": drawn, inside the window");
  }
  int clashes = 0;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      const std::vector<float>&p = maps[static_cast<std::size_t>(a)], &q = maps[static_cast<std::size_t>(b)];
      const bool beside = p[2] < q[0] || q[2] < p[0];
      const bool stacked = p[3] + 15 <= q[1] || q[3] + 15 <= p[1];
      if (!beside && !stacked && ++clashes <= 2)
        std::printf("      heads %d and %d: neither side by side nor a title line apart\n", a + 1, b + 1);
    }
  c.expect(clashes == 0, "every two maps side by side or a title line apart (" + std::to_string(clashes) + " not)");
}

}  // namespace gui

