// Room for the maps (issue 30): the model grid and the heads grid filling the centre pane at 1280 x 800 and at
// ATTNSCOPE_UI_SCALE=2, grouped heads laid out by KV group. Read from the probe's rectangles (ui_probe.h). And
// the contrast: the maps (row max) and the Export tab's PNG in the same colours. And the Export tab's value-norm
// weighting against NumPy's numbers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/analysis/value_norms.h"
#include "attnscope/compute/cpu_backend.h"
#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/scene/scene_json.h"
#include "gui_check.h"

namespace gui {

namespace {

std::string box(const std::vector<float>& r) {
  return "[" + std::to_string(static_cast<int>(r[0])) + "," + std::to_string(static_cast<int>(r[1])) + " .. " +
         std::to_string(static_cast<int>(r[2])) + "," + std::to_string(static_cast<int>(r[3])) + "]";
}

bool within(const std::vector<float>& inner, const std::vector<float>& outer) {
  return inner[0] >= outer[0] && inner[1] >= outer[1] && inner[2] <= outer[2] && inner[3] <= outer[3];
}

}  // namespace

void checkModelGridFills(Checker& c) {
  // model.area: what the pane leaves the grid (token strip, header, tiles); model.grid: the tiles and their
  // layer labels. Before: 11 px tiles with 180 of 470 px empty beside them (38%). Now at most 5% of the width
  // and of the height left over (a pixel a head and a layer of rounding: 16 of 465 px, 28 of 640 at scale 1).
  const std::vector<float> area = c.rect("model.area"), grid = c.rect("model.grid");
  const float empty_w = (area[2] - grid[2]) / (area[2] - area[0]), empty_h = (area[3] - grid[3]) / (area[3] - area[1]);
  c.expect(within(grid, area) && empty_w <= 0.05f && empty_h <= 0.05f,
           "the grid " + box(grid) + " fills its room " + box(area) + ": " + std::to_string(empty_w * 100) +
               "% of the width and " + std::to_string(empty_h * 100) + "% of the height empty");
  const std::vector<float> tile = c.rect("model.tile.0.0"), last = c.rect("model.tile.27.15");
  const float w = tile[2] - tile[0], h = tile[3] - tile[1];
  // At least 18 px wide (11 before): the centre's 390 px over 16 heads, less the KV-group gaps and frames, is
  // 19 px since the side panes' resize grips took 20 px from it.
  c.expect(w >= 18 && h >= 10 && w <= 2 * h && h <= 2 * w && last[2] - last[0] == w && last[3] - last[1] == h,
           "tiles of " + std::to_string(static_cast<int>(w)) + " x " + std::to_string(static_cast<int>(h)) +
               " px (at least 18 wide, sides at most 2:1, all alike)");
}

void checkTokenStrip(Checker& c, int tokens) {
  // Labels over the strip, not "..." nor an empty bar: the first token (the sink row) and the last always, none
  // overlapping another (the probe's check, in "clipped"), at least a quarter of the tokens named (64 tokens
  // share ~390 px in model_wide: 6 px a token, where a one-letter label and its gap need ~12, so a uniform step
  // names every third).
  int labelled = 0;
  for (int t = 0; t < tokens; ++t) labelled += c.layout.contains("model.tokentext." + std::to_string(t));
  c.expect(c.layout.contains("model.tokentext.0") &&
               c.layout.contains("model.tokentext." + std::to_string(tokens - 1)) && 4 * labelled >= tokens,
           std::to_string(labelled) + " of " + std::to_string(tokens) +
               " tokens labelled over the strip, the first and "
               "the last among them");
}

void checkHeadsWide(Checker& c) {
  // A random scene of 16 query heads in 4 KV groups (scripts/heads_wide.txt): kv head of head h is h / 4.
  constexpr int kHeads = 16, kGroup = 4;
  std::vector<std::vector<float>> maps;
  for (int h = 0; h < kHeads; ++h) maps.push_back(c.rect("head" + std::to_string(h) + ".map"));
  c.expect(!c.layout.contains("head16.map"), "16 heads drawn");
  // Each tile's buttons (mute, and enlarge where it fits) end before the next tile's title on its row starts.
  int overrun = 0;
  for (int h = 0; h + 1 < kHeads; ++h) {
    if ((h + 1) % 4 == 0) continue;  // the last tile of a row
    const std::vector<float> next = c.rect("head" + std::to_string(h + 1) + ".title");
    for (const char* button : {".mute", ".enlarge"}) {
      const std::string id = "head" + std::to_string(h) + button;
      if (c.layout.contains(id) && c.rect(id)[2] > next[0]) ++overrun;
    }
  }
  c.expect(overrun == 0, "no tile's buttons run into the next tile's title: " + std::to_string(overrun));
  // Each KV group in one frame on one row: the frames hold exactly a group's 4 heads, their maps' tops level.
  int frames = 0, bad = 0;
  for (const auto& [id, rect] : c.layout.items()) {
    if (id.rfind("heads.kvframe.", 0) != 0) continue;
    ++frames;
    const std::vector<float> f = rect.get<std::vector<float>>();
    std::vector<int> in;
    for (int h = 0; h < kHeads; ++h)
      if (within(maps[static_cast<std::size_t>(h)], f)) in.push_back(h);
    bool ok = in.size() == kGroup && in.front() % kGroup == 0 && in.back() == in.front() + kGroup - 1;
    for (int h : in) ok = ok && maps[static_cast<std::size_t>(h)][1] == maps[static_cast<std::size_t>(in[0])][1];
    if (!ok && ++bad <= 2) std::printf("      %s %s holds %zu heads\n", id.c_str(), box(f).c_str(), in.size());
  }
  c.expect(frames == kHeads / kGroup && bad == 0, std::to_string(frames) +
                                                      " KV frames, each one whole group on one "
                                                      "row (" +
                                                      std::to_string(bad) + " not)");
  // The maps fill the pane's room in the direction that limits them (square cells: the other keeps the rest):
  // their bounding box at least 90% of the room's width or of its height. Before: 60 px maps in 130 px tiles.
  const std::vector<float> area = c.rect("heads.area");
  std::vector<float> all = maps[0];
  for (const auto& m : maps)
    all = {std::min(all[0], m[0]), std::min(all[1], m[1]), std::max(all[2], m[2]), std::max(all[3], m[3])};
  const float fill = std::max((all[2] - all[0]) / (area[2] - area[0]), (all[3] - all[1]) / (area[3] - area[1]));
  c.expect(within(all, area) && fill >= 0.9f,
           "the maps " + box(all) + " fill their room " + box(area) + " to " + std::to_string(fill * 100) + "%");
  const float side = maps[0][2] - maps[0][0];
  c.expect(side >= 0.2f * (area[2] - area[0]),
           "maps " + std::to_string(static_cast<int>(side)) + " px wide, at least a fifth of the room (4 columns)");
  std::string clipped;
  for (const auto& id : c.layout.value("clipped", nlohmann::json::array())) clipped += " " + id.get<std::string>();
  c.expect(clipped.empty(), "nothing clipped or overlapping:" + clipped);
}

void checkSceneValueNorms(Checker& c) {
  // Seed 001's W_V of both heads (4 x 2) as printed; its W_O is the identity, so head h writes key j's value
  // x_j W_V^h unchanged and the value norm is ||x_j W_V^h||: head 1 (2, 0, 1), head 2 (1, 1, 2), largest 2.
  const Grid wv[2] = {{{1, 0}, {0, 0}, {1, 0}, {0, 0}}, {{0, 1}, {0, 1}, {0, 0}, {0, 0}}};
  double norms[2][3], largest = 0;
  for (int h = 0; h < 2; ++h) {
    const Grid v = mul(kX, wv[h]);
    for (int j = 0; j < 3; ++j) {
      const auto& r = v[static_cast<std::size_t>(j)];
      norms[h][j] = std::sqrt(r[0] * r[0] + r[1] * r[1]);
      largest = std::max(largest, norms[h][j]);
    }
  }
  c.expect(c.layout.contains("heads.value_norm_note"), "the note 'weights x value norms / the scene's largest norm'");
  // The window multiplies float32 weights by float32 norm ratios (relative error ~1e-7): a product within 1e-5 of
  // a boundary between two colour-map entries may show either.
  for (int h = 0; h < 2; ++h) {
    const Grid w = expectedWeights(h, false);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        const double a = w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
        const double weighted = a * norms[h][j] / largest;
        const Rgb8 got = c.cell("head" + std::to_string(h) + ".map", i, j, 3, 3, Checker::kAboveText);
        char what[192];
        std::snprintf(what, sizeof what, "value norms: head %d cell (%d,%d): %.4f x %.0f / %.0f = %.4f, drawn %s",
                      h + 1, i, j, a, norms[h][j], largest, weighted, Checker::str(got).c_str());
        c.expect(isWeightColor(got, weighted), what);
        // The number written across the cell is the weighted value too (3 decimals: within 5e-4 plus the
        // float32 product's ~1e-7 of the double worked here).
        const std::string shown =
            note(c.layout, "head" + std::to_string(h) + ".cell." + std::to_string(i) + "." + std::to_string(j));
        std::snprintf(what, sizeof what, "value norms: head %d cell (%d,%d) reads '%s', expected %.4f", h + 1, i, j,
                      shown.c_str(), weighted);
        c.expect(!shown.empty() && std::abs(std::strtod(shown.c_str(), nullptr) - weighted) <= 5e-4 + 1e-6, what);
      }
  }
}

void checkRowContrast(Checker& c) {
  // Each row of the worked example's weights (softmax of Q K^T / sqrt(2), in double from the printed matrices)
  // over its own largest weight: the row's peak at the colour map's top, the rest at w / max. The window divides
  // float32 weights (relative error ~1e-7), so a ratio within 1e-5 of a boundary between entries may show either.
  for (int h = 0; h < 2; ++h) {
    const Grid w = expectedWeights(h, false);
    for (int i = 0; i < 3; ++i) {
      const double top =
          *std::max_element(w[static_cast<std::size_t>(i)].begin(), w[static_cast<std::size_t>(i)].end());
      for (int j = 0; j < 3; ++j) {
        const double r = w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] / top;
        const Rgb8 got = c.cell("head" + std::to_string(h) + ".map", i, j, 3, 3, Checker::kAboveText);
        char what[160];
        std::snprintf(what, sizeof what, "row max: head %d cell (%d,%d): %.4f / row max %.4f = %.4f, drawn %s", h + 1,
                      i, j, w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)], top, r,
                      Checker::str(got).c_str());
        c.expect(got == attnscope::colorAt(ColorMap::Viridis, static_cast<float>(r - 1e-5)) ||
                     got == attnscope::colorAt(ColorMap::Viridis, static_cast<float>(r + 1e-5)),
                 what);
      }
    }
  }
}

void checkExportRowContrast(Checker& c, const std::string& dir) {
  // Where each cell lies is the exporter's layout of the same figure (tested in test_export_contrast.cpp); its
  // colour must be the worked example's weight over its row's max, worked out here in double (the engine's
  // float32 ratio: either entry within 1e-5 of a boundary, as above).
  const Image exported = loadPng(dir + "/exported_rows.png");
  const attnscope::Scene scene = attnscope::workedExampleScene();
  attnscope::ExportRequest request;
  request.what = attnscope::ExportWhat::Heads;
  request.contrast = {attnscope::ColorScale::RowMax, false};
  request.dpi = attnscope::kDefaultDpi;  // the Export tab's default
  const attnscope::Figure figure = attnscope::makeFigure(scene, attnscope::CpuBackend(1).compute(scene), request);
  const attnscope::FigureLayout layout = attnscope::pngLayout(figure);
  c.expect(exported.w == layout.width && exported.h == layout.height,
           "export wrote a " + std::to_string(exported.w) + " x " + std::to_string(exported.h) + " PNG, laid out " +
               std::to_string(layout.width) + " x " + std::to_string(layout.height));
  c.expect(c.layout.contains("export.contrast") && c.layout.contains("export.message"),
           "the Export tab says the colours under its button, and that it wrote the file");
  if (exported.w != layout.width || exported.h != layout.height) return;
  for (int h = 0; h < 2; ++h) {
    const Grid w = expectedWeights(h, false);
    for (int i = 0; i < 3; ++i) {
      const auto& row = w[static_cast<std::size_t>(i)];
      const double top = *std::max_element(row.begin(), row.end());
      for (int j = 0; j < 3; ++j) {
        const double r = row[static_cast<std::size_t>(j)] / top;
        const attnscope::PixelRect cell = attnscope::cellRect(figure, layout, h, i, j);
        const Rgb8 got = exported.at(cell.x + cell.w / 2, cell.y + cell.h / 2);
        char what[160];
        std::snprintf(what, sizeof what, "exported row max: head %d cell (%d,%d): %.4f / %.4f = %.4f, drawn %s", h + 1,
                      i, j, row[static_cast<std::size_t>(j)], top, r, Checker::str(got).c_str());
        c.expect(got == attnscope::colorAt(ColorMap::Viridis, static_cast<float>(r - 1e-5)) ||
                     got == attnscope::colorAt(ColorMap::Viridis, static_cast<float>(r + 1e-5)),
                 what);
      }
    }
  }
}

void checkExportFigure(Checker& c, const std::string& dir) {
  // Ticking the Export tab's cluster order leaves the heads grid in head order (its slots left to right, then top
  // to bottom: 1234), while the clustering's leaf order of this scene is another (else the check says nothing).
  const attnscope::Scene saved = attnscope::loadSceneFile(dir + "/scene.json");
  const attnscope::Result result = attnscope::CpuBackend(1).compute(saved);
  const attnscope::Clustering cl = attnscope::clusterHeads(result.similarity, attnscope::ClusterMetric::Cosine);
  std::string leaves;
  for (int h : cl.order) leaves += std::to_string(h + 1);
  c.expect(leaves != "1234", "the repeated preset's cluster order differs from head order: " + leaves);
  const Checker order{Image{}, loadLayout(dir + "/layout_order.json")};
  std::vector<std::pair<std::pair<float, float>, int>> slots;  // ((top, left), head)
  for (int h = 0; h < 4; ++h) {
    const std::vector<float> r = order.rect("head" + std::to_string(h) + ".map");
    slots.push_back({{r[1], r[0]}, h});
  }
  std::sort(slots.begin(), slots.end());
  std::string shown;
  for (const auto& s : slots) shown += std::to_string(s.second + 1);
  c.expect(shown == "1234", "the heads grid keeps head order under the Export tab's cluster order: " + shown);
  // The PNG at 300 dpi: the layout of the same figure (96 an inch) times 300 / 96 = 3.125 a side, rounded.
  attnscope::ExportRequest request;
  request.what = attnscope::ExportWhat::Heads;
  const attnscope::FigureLayout natural = attnscope::layoutFigure(attnscope::makeFigure(saved, result, request));
  const Image png = loadPng(dir + "/heads300.png");
  const long want_w = std::lround(natural.width * 3.125), want_h = std::lround(natural.height * 3.125);
  c.expect(png.w == want_w && png.h == want_h, "heads300.png " + std::to_string(png.w) + " x " + std::to_string(png.h) +
                                                   ", want " + std::to_string(want_w) + " x " + std::to_string(want_h));
  c.expect(loadLayout(dir + "/layout_wrote.json").contains("export.message"), "the Wrote line after the export");
  const nlohmann::json cleared = loadLayout(dir + "/layout_cleared.json");
  c.expect(!cleared.contains("export.message") && !cleared.contains("export.error"),
           "the Wrote line gone once the path changed");
  c.expect(!cleared.contains("export.mismatch"), "a .svg path typed with PNG picked: no mismatch (SVG below)");
  c.expect(loadLayout(dir + "/layout_svg.json").contains("export.message"), "the SVG written");
  std::ifstream svg(dir + "/heads.svg");
  std::string first;
  std::getline(svg, first);
  c.expect(first.rfind("<?xml", 0) == 0, "heads.svg is SVG: " + first);
  const nlohmann::json bad = loadLayout(dir + "/layout_bad_dpi.json");
  c.expect(bad.contains("export.dpi_error"), "a dpi of 5 refused in red");
  c.expect(c.layout.contains("tab.export"), "the window still running after the bad dpi");
}

namespace {

std::string fileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The most |npy - want| over an NPY's values against a JSON array nested to the same shape (flattened in C
// order), or infinity when the counts differ.
// "%.2g" of an error: std::to_string writes 3e-7 as 0.000000.
std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

double worstOf(const Npy& npy, const nlohmann::json& want) {
  std::vector<double> flat;
  const std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
    if (j.is_array())
      for (const auto& e : j) walk(e);
    else
      flat.push_back(j.get<double>());
  };
  walk(want);
  if (flat.size() != npy.values.size()) return INFINITY;
  double worst = 0;
  for (std::size_t k = 0; k < flat.size(); ++k) worst = std::max(worst, std::abs(npy.values[k] - flat[k]));
  return worst;
}

}  // namespace

void checkExportValueNorms(Checker& c, const std::string& dir) {
  // NumPy's float64 numbers of the scene (value_norms_fixture.py): alpha_ij, ||(x_j W_V + b_V) W_O^h|| and their
  // product, up to 7.1 here. The window's weights are float32 softmaxes of 4 keys (seen within 5e-8 of NumPy's)
  // times float32 norms (each within 1.2e-7 relative, up to 9.2): an error of about 1e-6 at most; 1e-5 allowed.
  const nlohmann::json expected = nlohmann::json::parse(fileBytes(dir + "/vn_expected.json"));
  constexpr double kTol = 1e-5;
  const Npy heads = loadNpy(dir + "/vn_heads.npy");
  const double worst = worstOf(heads, expected["weighted"]);
  c.expect(heads.shape == std::vector<long>{4, 3, 4} && worst <= kTol,
           "value norms on: all heads' NPY is NumPy's alpha_ij x ||(x_j W_V + b_V) W_O^h||, worst " +
               sci(worst));
  const Npy head1 = loadNpy(dir + "/vn_head1.npy");
  const double worst1 = worstOf(head1, expected["weighted"][0]);
  c.expect(head1.shape == std::vector<long>{3, 4} && worst1 <= kTol,
           "value norms on: head 1's NPY is NumPy's weighted map, worst " + sci(worst1));
  // The figure: titled and labelled as weighted (its SVG's text), each PNG cell in viridis(weighted / the largest
  // norm), the bar's top. Where the cells lie is the engine's layout of the same figure (test_export.cpp).
  const std::string svg = fileBytes(dir + "/vn_heads.svg");
  c.expect(svg.find(">Attention weights x value norms, all 4 heads</text>") != std::string::npos &&
               svg.find(">weight x value norm</text>") != std::string::npos,
           "the SVG's title says 'Attention weights x value norms' and its bar 'weight x value norm'");
  double top = 0;
  for (const auto& head : expected["norms"])
    for (const auto& v : head) top = std::max(top, v.get<double>());
  const attnscope::Scene scene = attnscope::loadSceneFile(dir + "/vn_scene.json");
  const attnscope::Result result = attnscope::CpuBackend(1).compute(scene);
  const attnscope::Matrix norms = attnscope::sceneValueNorms(scene);
  attnscope::ExportRequest request;
  request.what = attnscope::ExportWhat::Heads;
  request.dpi = attnscope::kDefaultDpi;  // the Export tab's default
  request.value_norms = &norms;
  const attnscope::Figure figure = attnscope::makeFigure(scene, result, request);
  const attnscope::FigureLayout placed = attnscope::pngLayout(figure);
  const Image png = loadPng(dir + "/vn_heads.png");
  c.expect(png.w == placed.width && png.h == placed.height, "vn_heads.png has the weighted figure's size");
  if (png.w == placed.width && png.h == placed.height) {
    int wrong = 0;
    for (int h = 0; h < 4; ++h)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          const attnscope::PixelRect r = attnscope::cellRect(figure, placed, h, i, j);
          const Rgb8 got = png.at(r.x + r.w / 2, r.y + r.h / 4);
          const double t = expected["weighted"][h][i][j].get<double>() / top;  // kTol / 9.2 from NumPy's
          if (!isWeightColor(got, t) && ++wrong <= 2)
            std::printf("      vn_heads.png head %d (%d,%d): %.5f / %.5f drawn %s\n", h + 1, i, j,
                        expected["weighted"][h][i][j].get<double>(), top, Checker::str(got).c_str());
        }
    c.expect(wrong == 0, "vn_heads.png: 48 cells in viridis(NumPy's weighted / largest norm), " +
                             std::to_string(wrong) + " wrong");
  }
  const nlohmann::json on = loadLayout(dir + "/layout_scene.json");
  c.expect(on.contains("export.message") && on.contains("export.contrast") && !on.contains("export.value_norm_why"),
           "value norms on, all heads: written, and the line under the button says the colours are weighted");
  c.expect(loadLayout(dir + "/layout_why.json").contains("export.value_norm_why"),
           "value norms on, similarity: a line says it is of the plain weights");
  // The switch off: today's bytes (the engine's plain export of the same scene), and NumPy's weights.
  attnscope::ExportRequest plain;
  plain.what = attnscope::ExportWhat::Heads;
  plain.dpi = attnscope::kDefaultDpi;
  plain.format = attnscope::ExportFormat::Npy;
  c.expect(fileBytes(dir + "/plain_heads.npy") == attnscope::exportBytes(scene, result, plain),
           "value norms off: the NPY is the plain export's bytes");
  const double worst_plain = worstOf(loadNpy(dir + "/plain_heads.npy"), expected["weights"]);
  c.expect(worst_plain <= 1e-6, "value norms off: NumPy's weights, worst " + sci(worst_plain));
  plain.format = attnscope::ExportFormat::Png;
  c.expect(fileBytes(dir + "/plain_heads.png") == attnscope::exportBytes(scene, result, plain),
           "value norms off: the PNG is the plain export's bytes");
  c.expect(!loadLayout(dir + "/layout_plain.json").contains("export.value_norm_why"), "value norms off: no why line");
  // The checkpoint's every layer: NumPy's weights x value norms (expected.json, float64 from the F16 weights). The
  // float32 forward's weights are within 2e-4 of NumPy's (gui_check_model.cpp's kDeepTol), its norms within 1e-5
  // relative (test_value_norms.cpp): |error| <= 2.1e-4 x the head's largest norm.
  const nlohmann::json ckpt = nlohmann::json::parse(fileBytes(dir + "/ckpt/expected.json"));
  const Npy grid = loadNpy(dir + "/grid_vn.npy");
  const int layers = 2, n_head = 3, n = static_cast<int>(ckpt["ids"].size());
  bool shape = grid.shape == std::vector<long>{layers, n_head, n, n};
  int wrong = 0;
  double worst_grid = 0;
  for (int l = 0; shape && l < layers; ++l)
    for (int h = 0; h < n_head; ++h) {
      const nlohmann::json& vn = ckpt["value_norms"][l][h];
      double largest = 0;
      for (const auto& v : vn) largest = std::max(largest, v.get<double>());
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          const double want = ckpt["weights"][l][h][i][j].get<double>() * vn[j].get<double>();
          const double got = grid.values[static_cast<std::size_t>(((l * n_head + h) * n + i) * n + j)];
          worst_grid = std::max(worst_grid, std::abs(got - want) / largest);
          if (!(std::abs(got - want) <= 2.1e-4 * largest)) ++wrong;
        }
    }
  c.expect(shape && wrong == 0, "checkpoint grid NPY (2, 3, n, n): NumPy's weight x value norm, worst " +
                                    sci(worst_grid) + " of the head's largest norm, " +
                                    std::to_string(wrong) + " outside 2.1e-4");
  c.expect(fileBytes(dir + "/grid_vn.npy") == fileBytes(dir + "/cli_vn.npy"),
           "the window's weighted grid NPY is `attnscope model --weighting value-norm --out`'s, byte for byte");
  // Layer 1's heads through the scene exporters (the layer as a scene, the norms as ExportRequest::value_norms):
  // the grid's first layer, byte for byte (the NPY data after the 128-byte headers of both).
  const Npy layer = loadNpy(dir + "/layer_vn.npy");
  const std::string grid_bytes = fileBytes(dir + "/grid_vn.npy"), layer_bytes = fileBytes(dir + "/layer_vn.npy");
  const std::size_t grid_data = grid_bytes.size() - 4 * grid.values.size(),
                    layer_data = layer_bytes.size() - 4 * layer.values.size();
  c.expect(layer.shape == std::vector<long>{n_head, n, n} &&
               layer_bytes.compare(layer_data, std::string::npos, grid_bytes, grid_data, 4 * layer.values.size()) == 0,
           "layer 1's heads NPY (3, n, n) is the weighted grid's layer 1");
  c.expect(loadPng(dir + "/grid_vn.png").w > 0, "grid_vn.png written");
  c.expect(c.layout.contains("export.message") && c.layout.contains("model.value_norm_note"),
           "the checkpoint's grid weighted on show, and its export written");
  // A saved tensor (open_arrays_fixtures.py's att.npy, float32 weights) has no W_V or W_O: with the switch still
  // on, the export of layer 1's heads (the What kept from the checkpoint) holds the tensor's own weights exactly,
  // and a line says why.
  const nlohmann::json tensor = loadLayout(dir + "/layout_tensor.json");
  c.expect(tensor.contains("export.value_norm_why") && tensor.contains("export.message"),
           "a saved tensor with value norms on: written, and a line says it holds the weights");
  const std::string att = fileBytes(dir + "/att.npy"), wrote = fileBytes(dir + "/tensor.npy");
  const std::size_t all = 2 * 3 * 6 * 6, layer1 = 3 * 6 * 6;  // floats: the tensor's, its layer 1's
  c.expect(att.size() >= 4 * all && wrote.size() >= 4 * layer1 &&
               att.compare(att.size() - 4 * all, 4 * layer1, wrote, wrote.size() - 4 * layer1, 4 * layer1) == 0,
           "the tensor's layer 1 export is its (3, 6, 6) weights as saved");
}

}  // namespace gui
