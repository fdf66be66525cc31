// gui_long_zoom: a long scene (16384 tokens, maps not kept) zoomed deep into head 1; gui_big_zoom_{cpu,gpu}: a
// big one (512 tokens, 8 heads, maps kept) computed off the UI thread. Every cell in view must be drawn in the
// colour of the engine's weight tile for that region (computed here from the saved scene by the CPU backend).
#include <cmath>
#include <string>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/scene/scene_json.h"
#include "gui_check.h"

namespace gui {

void checkLongZoom(Checker& c, const std::string& dir, bool long_scene) {
  const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/scene.json");
  if (long_scene) {
    c.expect(saved.nQ() >= 16384, "a long scene: n = " + std::to_string(saved.nQ()));
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

}  // namespace gui
