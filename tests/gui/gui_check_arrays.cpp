// Pixel checks of the file bar's Open on arrays files (scripts/open_arrays.txt): the attention tensors' grids and
// map drawn in the colours of the arrays NumPy wrote, every cell a weight (a saved tensor has no causal mask),
// and nn.MultiheadAttention's layer opened as the scene in the colours of NumPy's own computation
// (open_arrays_fixtures.py writes expected.json), independently of the engine.
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gui_check.h"

namespace gui {

namespace {

using Map = std::vector<std::vector<double>>;  // (n, n)

// Cells of a map over `rect_id` (n x n, read `fy` down each cell) not in the colour of NumPy's weight; prints the
// first few. Every cell is a weight: none may be drawn masked.
int wrongCells(const Checker& c, const std::string& rect_id, const Map& w, float fy = 0.5f) {
  const int n = static_cast<int>(w.size());
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const Rgb8 got = c.cell(rect_id, i, j, n, n, fy);
      const double want = w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      if (!isWeightColor(got, want) && ++wrong <= 3)
        std::printf("      %s cell (%d,%d): weight %.4f -> %s, drawn %s\n", rect_id.c_str(), i, j, want,
                    Checker::str(attnscope::colorAt(ColorMap::Viridis, static_cast<float>(want))).c_str(),
                    Checker::str(got).c_str());
    }
  return wrong;
}

// Pixels of the red error text (errorText's colour, anti-aliased) inside the rectangle `id`.
int redPixels(const Checker& c, const std::string& id) {
  const std::vector<float> r = c.rect(id);
  int red = 0;
  for (int y = static_cast<int>(r[1]); y < static_cast<int>(r[3]); ++y)
    for (int x = static_cast<int>(r[0]); x < static_cast<int>(r[2]); ++x) {
      const Rgb8 p = c.img.at(x, y);
      red += p.r > 180 && p.g < 140 && p.b < 140;
    }
  return red;
}

std::string tileId(int l, int h) { return "model.tile." + std::to_string(l) + "." + std::to_string(h); }

}  // namespace

// The Export tab's CSV of one head's map (header `query\key,<keys>`, then `<query>,<weights>` a row), as numbers.
Map readMapCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string line;
  std::getline(in, line);  // the header
  Map rows;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<double> row;
    std::size_t at = line.find(',');  // past the query token
    while (at != std::string::npos) {
      const std::size_t next = line.find(',', at + 1);
      row.push_back(std::stod(line.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1)));
      at = next;
    }
    rows.push_back(row);
  }
  return rows;
}

void checkOpenArrays(Checker& c, const std::string& dir) {
  // The form is opaque: a strip of its bottom padding (2 to 5 px above its lower edge, 8 px in from its sides),
  // drawn over the heads below it, is all the style's PopupBg (0.08 x 255 = 20.4, stored as 20) at full alpha;
  // at the style's 94% the heatmaps under it showed through.
  const Checker form_shot{loadPng(dir + "/form.png"), loadLayout(dir + "/layout_form.json")};
  if (form_shot.layout.contains("open.window")) {
    const std::vector<float> r = form_shot.rect("open.window");
    int other = 0, seen = 0;
    for (int y = static_cast<int>(r[3]) - 5; y <= static_cast<int>(r[3]) - 2; ++y)
      for (int x = static_cast<int>(r[0]) + 8; x < static_cast<int>(r[2]) - 8; ++x, ++seen)
        other += !(form_shot.img.at(x, y) == Rgb8{20, 20, 20});
    c.expect(seen > 100 && other == 0, "the Open form's background is opaque: " + std::to_string(other) + " of " +
                                           std::to_string(seen) + " padding pixels not (20, 20, 20)");
  } else {
    c.expect(false, "the Open form's window probed (open.window)");
  }
  std::ifstream in(dir + "/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  using Maps = std::vector<std::vector<Map>>;
  const Maps npy = expected["npy"].get<Maps>();        // (2, 3, 6, 6)
  const std::vector<Map> big = expected["big"].get<std::vector<Map>>();    // (3, 5, 5)
  const std::vector<Map> layer = expected["layer"].get<std::vector<Map>>();  // (2 heads, 4, 4)
  c.expect(npy.size() == 2 && npy[0].size() == 3 && npy[0][0].size() == 6 && big.size() == 3 &&
               big[0].size() == 5 && layer.size() == 2 && layer[0].size() == 4,
           "NumPy's arrays: (2, 3, 6, 6), (3, 5, 5), layer (2, 4, 4)");

  const nlohmann::json form = loadLayout(dir + "/layout_form.json");
  c.expect(form.contains("open.form") && form.contains("open.detected") && form.contains("open.as.attention") &&
               !form.contains("open.tensor.0"),
           "Open on a .npy asks how to read it, says what its content looks like; one array: no tensor choice");

  // The .npy tensor: 2 layers x 3 heads in the centre, every cell of every tile in NumPy's colour.
  const Checker grid{loadPng(dir + "/npy.png"), loadLayout(dir + "/layout_npy.json")};
  int wrong = 0, missing = 0;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h)
      grid.layout.contains(tileId(l, h)) ? void(wrong += wrongCells(grid, tileId(l, h), npy[l][h])) : void(++missing);
  c.expect(missing == 0 && !grid.layout.contains(tileId(2, 0)) && !grid.layout.contains(tileId(0, 3)),
           "the .npy's 2 x 3 tiles drawn, no more (" + std::to_string(missing) + " missing)");
  c.expect(wrong == 0, ".npy grid: 6 tiles x 36 cells in colorAt(the array's weight), " + std::to_string(wrong) +
                           " wrong");
  const std::vector<float> tile = grid.rect(tileId(0, 0)), tab = grid.rect("tab.checkpoint");
  c.expect(tile[0] > 0.2f * static_cast<float>(grid.img.w) && grid.rect(tileId(1, 2))[2] < tab[0],
           "the grid lies in the centre pane");

  // Layer 2, head 3 clicked: full-size, every cell in NumPy's colour; the Checkpoint tab shows its scores.
  const Checker focus{loadPng(dir + "/focus.png"), loadLayout(dir + "/layout_focus.json")};
  c.expect(focus.layout.contains("model.map") && !focus.layout.contains(tileId(0, 0)), "one map full-size");
  if (focus.layout.contains("model.map")) {
    const std::vector<float> m = focus.rect("model.map");
    c.expect(m[2] - m[0] > 2 * (tile[2] - tile[0]), "the map is wider than two tiles");
    c.expect(wrongCells(focus, "model.map", npy[1][2]) == 0, "layer 2, head 3 full-size: every cell in colorAt");
  }
  c.expect(focus.layout.contains("tensor.scores") && focus.layout.contains("tensor.similarity") &&
               focus.layout.contains("tensor.layer.plus"),
           "the Checkpoint tab shows the tensor's head-type scores and similarity, by layer");
  c.expect(note(focus.layout, "status.subject") == "att.npy: 2 layers x 3 heads, 6 tokens  |  layer 2, head 3",
           "the status bar names the tensor and the map on show: '" + note(focus.layout, "status.subject") + "'");
  c.expect(note(focus.layout, "tensor.layer") == "2", "the tensor's layer stepper reads 2 with layer 2's map on show");
  // The left pane follows the subject: the tensor's shape (the fixture's (2, 3, 6, 6)), its tokens, the same layer
  // and head as the grid and the status bar.
  c.expect(note(focus.layout, "pane.left.title") == "Tensor" && note(focus.layout, "subject.pane") == "tensor",
           "the left pane is the tensor's: '" + note(focus.layout, "pane.left.title") + "'");
  c.expect(note(focus.layout, "subject.tensor.shape") == "(2, 3, 6, 6)",
           "the left pane says the tensor's shape: '" + note(focus.layout, "subject.tensor.shape") + "'");
  c.expect(note(focus.layout, "subject.tokens") == "6" && note(focus.layout, "subject.layer") == "2" &&
               note(focus.layout, "subject.head") == "3",
           "the left pane lists 6 tokens and reads layer 2, head 3");
  c.expect(!focus.layout.contains("tab.model") && focus.layout.contains("subject.editors_hidden"),
           "the scene editors are hidden, with a word why");

  // Export with the tensor's map on show: that map, its format from the path (.csv). The CSV holds each float32
  // weight in the shortest text that reads back as it, so each equals NumPy's float32 array exactly.
  c.expect(loadLayout(dir + "/layout_export.json").contains("export.message"), "Export says it wrote map.csv");
  const Map exported = readMapCsv(dir + "/map.csv");
  bool same = exported.size() == 6;
  for (int i = 0; same && i < 6; ++i) {
    same = exported[static_cast<std::size_t>(i)].size() == 6;
    for (int j = 0; same && j < 6; ++j)
      same = static_cast<float>(exported[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]) ==
             static_cast<float>(npy[1][2][static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
  }
  c.expect(same, "map.csv is layer 2 head 3's (6, 6) weights, each NumPy's float32 exactly");
  // The shown layer's heads as NPY: (3, 6, 6), each float32 weight written unchanged, so equal to NumPy's
  // float32 array exactly.
  c.expect(loadLayout(dir + "/layout_export_layer.json").contains("export.message"), "Export says it wrote layer.npy");
  const Npy layer_npy = loadNpy(dir + "/layer.npy");
  bool layer_same = layer_npy.shape == std::vector<long>{3, 6, 6};
  for (std::size_t h = 0; layer_same && h < 3; ++h)
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t j = 0; j < 6; ++j)
        layer_same = layer_same && static_cast<float>(layer_npy.values[(h * 6 + i) * 6 + j]) ==
                                       static_cast<float>(npy[1][h][i][j]);
  c.expect(layer_same, "layer.npy is layer 2's (3, 6, 6) heads, each NumPy's float32 exactly");
  const nlohmann::json similarity = loadLayout(dir + "/layout_similarity.json");
  c.expect(note(similarity, "similarity.subject") == "att.npy, layer 2: its 3 heads' maps compared" &&
               similarity.contains("similarity.map"),
           "Similarity shows the tensor's layer 2, not the worked example: '" +
               note(similarity, "similarity.subject") + "'");

  // The Checkpoint tab's grid figure of the tensor (model::modelGridFigure, tested against references by `view
  // --grid-out`'s tests): written, an SVG, a row a layer named L1, L2 at its left, a column a head named H1 .. H3
  // on top (counted from 1), the tokens on its axes.
  c.expect(loadLayout(dir + "/layout_figure.json").contains("checkpoint.figure.note"),
           "Export grid figure says what it wrote");
  std::ifstream svg_in(dir + "/grid.svg");
  const std::string svg((std::istreambuf_iterator<char>(svg_in)), std::istreambuf_iterator<char>());
  bool titled = svg.find("<svg") != std::string::npos;
  for (int l = 1; l <= 2; ++l) titled = titled && svg.find(">L" + std::to_string(l) + "<") != std::string::npos;
  for (int h = 1; h <= 3; ++h) titled = titled && svg.find(">H" + std::to_string(h) + "<") != std::string::npos;
  c.expect(titled && svg.find(">cat<") != std::string::npos && svg.find(">L3<") == std::string::npos &&
               svg.find(">H4<") == std::string::npos,
           "grid.svg: an SVG with rows L1, L2 and columns H1 .. H3, and the tensor's tokens");
  // The same figure as a PNG at the window's dpi (the Export tab's, 192 by default): the SVG's size in CSS pixels
  // (96 a inch) times 192 / 96, rounded.
  const auto attribute = [&](const char* name) {
    const std::size_t at = svg.find(std::string(" ") + name + "=\"");
    return at == std::string::npos ? -1.0 : std::stod(svg.substr(at + std::strlen(name) + 3));
  };
  const Image png = loadPng(dir + "/grid.png");
  // (written in inches: pixels = inches x 96)
  const long want_w = std::lround(attribute("width") * 96 * 2), want_h = std::lround(attribute("height") * 96 * 2);
  c.expect(png.w == want_w && png.h == want_h, "grid.png at 192 dpi: " + std::to_string(png.w) + " x " +
                                                   std::to_string(png.h) + ", the SVG's size x 2 is " +
                                                   std::to_string(want_w) + " x " + std::to_string(want_h));

  // The safetensors file's first tensor ("big", by name order): 1 layer x 3 heads.
  const Checker st{loadPng(dir + "/st.png"), loadLayout(dir + "/layout_st.json")};
  int st_wrong = 0, st_missing = 0;
  for (int h = 0; h < 3; ++h)
    st.layout.contains(tileId(0, h)) ? void(st_wrong += wrongCells(st, tileId(0, h), big[h])) : void(++st_missing);
  c.expect(st_missing == 0 && !st.layout.contains(tileId(1, 0)), "safetensors \"big\": 1 x 3 tiles");
  c.expect(st_wrong == 0, "safetensors grid: 3 tiles x 25 cells in colorAt, " + std::to_string(st_wrong) + " wrong");

  // Three tokens for six positions: one red line in the form; after Cancel the tensor shown before stays.
  const Checker bad{loadPng(dir + "/bad.png"), loadLayout(dir + "/layout_bad.json")};
  c.expect(bad.layout.contains("open.error"), "a token count that does not match: an error line in the form");
  if (bad.layout.contains("open.error")) {
    const int red = redPixels(bad, "open.error");
    c.expect(red > 30, "the error is red text (" + std::to_string(red) + " red pixels)");
  }
  const nlohmann::json after = loadLayout(dir + "/layout_after_bad.json");
  c.expect(!after.contains("open.form") && after.contains(tileId(0, 2)) && !after.contains(tileId(1, 0)),
           "after the failed Open, the tensor shown before is still shown");

  // A file that is not there: no form, one red message in the file bar, the tensor still shown.
  const Checker absent{loadPng(dir + "/missing.png"), loadLayout(dir + "/layout_missing.json")};
  c.expect(!absent.layout.contains("open.form") && absent.layout.contains(tileId(0, 2)) &&
               absent.layout.contains("file.message"),
           "Open on a missing .npy: no form, a message, the tensor still shown");
  if (absent.layout.contains("file.message")) {
    const int red = redPixels(absent, "file.message");
    c.expect(red > 30, "the file bar's message is red (" + std::to_string(red) + " red pixels)");
  }

  // nn.MultiheadAttention's layer (torch-mha, 2 heads) as the scene: both heads' maps in NumPy's colours.
  const nlohmann::json layer_form = loadLayout(dir + "/layout_layer_form.json");
  c.expect(layer_form.contains("open.layout.torch-mha") && layer_form.contains("open.heads.plus") &&
               layer_form.contains("open.mask.none"),
           "a state dict's form asks for the layout, heads and mask");
  c.expect(c.layout.contains("head1.map") && !c.layout.contains("head2.map") && !c.layout.contains(tileId(0, 0)),
           "the layer's 2 heads shown as the scene");
  int layer_wrong = 0;
  for (int h = 0; h < 2; ++h)
    if (c.layout.contains("head" + std::to_string(h) + ".map"))
      layer_wrong += wrongCells(c, "head" + std::to_string(h) + ".map", layer[h], Checker::kAboveText);
  c.expect(layer_wrong == 0, "torch-mha layer: 2 heads x 16 cells in colorAt(NumPy's softmax(q k^T / sqrt(2))), " +
                                 std::to_string(layer_wrong) + " wrong");
}

}  // namespace gui
