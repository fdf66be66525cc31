// gui_model_grid's Find heads maps beyond the head-type scores, against NumPy's float64 reference
// (tests/model/head_finding_reference.py, written from the definitions; run_gui_test.sh writes analysis_P.json for
// the last token P = 10 and the one before, and analysis_9_hello.json for the target typed as "hello"):
// composition through the query from the strongest pair's writer, and direct logit attribution, each cell in the
// colour of NumPy's number.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gui_check.h"

namespace gui {

namespace {

using attnscope::ColorMap;
using attnscope::Rgb8;

nlohmann::json loadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

Rgb8 mapCell(const Checker& shot, int l, int h, int layers, int heads, const std::string& id = "findheads.map") {
  const std::vector<float> m = shot.rect(id);
  const float cw = (m[2] - m[0]) / static_cast<float>(heads), ch = (m[3] - m[1]) / static_cast<float>(layers);
  return shot.img.at(static_cast<int>(m[0] + (h + 0.4f) * cw), static_cast<int>(m[1] + (l + 0.4f) * ch));
}

// Composition through the query: the writer picked by clicking the strongest pair is NumPy's strongest pair's
// writer; its row of the map: heads of later layers coloured by their score, earlier ones grey. By default the
// colours are centred on the random baseline b = 1 / sqrt(d_model) (E ||A M||^2 = ||A||^2 ||M||^2 / d for
// rotation-invariant random A: the score of noise): the diverging map's white at b, 0 at its blue end, the larger
// of the top score and 2b at its red end, linear on each side. Switched off: viridis(score / the largest).
void checkComposition(Checker& c, const std::string& dir) {
  const nlohmann::json q = loadJson(dir + "/ckpt/analysis_10.json")["composition"]["q"];
  const int layers = static_cast<int>(q.size()), heads = static_cast<int>(q[0].size());
  auto at = [&](int la, int ha, int lb, int hb) { return q[la][ha][lb][hb].get<double>(); };
  int wla = 0, wha = 0;
  double best = -1, second = -1;
  for (int la = 0; la < layers; ++la)
    for (int ha = 0; ha < heads; ++ha)
      for (int lb = la + 1; lb < layers; ++lb)
        for (int hb = 0; hb < heads; ++hb)
          if (const double v = at(la, ha, lb, hb); v > best)
            second = best, best = v, wla = la, wha = ha;
          else if (v > second)
            second = v;
  const Checker shot{loadPng(dir + "/composition.png"), loadLayout(dir + "/layout_composition.json")};
  c.expect(shot.layout.contains("findheads.map"), "composition: the map drawn");
  if (!shot.layout.contains("findheads.map")) return;
  const std::string writer = std::to_string(wla) + " " + std::to_string(wha);
  // A tie within NumPy's own rounding could pick either pair: then the writer is not checked.
  c.expect(best - second < 1e-9 || note(shot.layout, "findheads.writer.head") == writer,
           "composition: the strongest pair clicked picks NumPy's writer (layer, head from 0) " + writer + ": '" +
               note(shot.layout, "findheads.writer.head") + "'");
  std::istringstream shown(note(shot.layout, "findheads.writer.head"));
  int la = 0, ha = 0;
  shown >> la >> ha;
  double top = 0;
  for (int lb = la + 1; lb < layers; ++lb)
    for (int hb = 0; hb < heads; ++hb) top = std::max(top, at(la, ha, lb, hb));
  // d_model from the fixture's config (GPT-2's n_embd).
  const double d_model = loadJson(dir + "/ckpt/config.json")["n_embd"].get<double>();
  const double baseline = 1 / std::sqrt(d_model), upper = std::max(top, 2 * baseline);
  // The note has 6 significant digits: within half a unit of the sixth, 5e-7 at 0.144.
  c.expect(std::fabs(std::stod("0" + note(shot.layout, "findheads.baseline")) - baseline) <= 5e-7,
           "composition: the bar's baseline is 1/sqrt(" + std::to_string(static_cast<int>(d_model)) + ") = " +
               std::to_string(baseline) + ": '" + note(shot.layout, "findheads.baseline") + "'");
  // Export wrote that map: the CSV's layer,head,composition rows are NumPy's scores (within 1e-6: float32 of
  // scores NumPy and the engine agree on to 1e-8), empty before the writer's layer; the PNG a whole image.
  const nlohmann::json exported = loadLayout(dir + "/layout_composition_export.json");
  c.expect(note(exported, "export.message").rfind("Wrote " + dir + "/composition_export.csv (GPT-2: what later heads "
                                                  "read from layer " + std::to_string(la + 1), 0) == 0,
           "Export names the composition map it wrote: '" + note(exported, "export.message") + "'");
  {
    std::ifstream csv(dir + "/composition_export.csv");
    std::string line;
    std::getline(csv, line);
    int rows = 0, bad = 0;
    c.expect(line == "layer,head,composition", "the CSV's header: '" + line + "'");
    while (std::getline(csv, line)) {
      int l = 0, h = 0;
      char value[64] = "";
      const int got = std::sscanf(line.c_str(), "%d,%d,%63s", &l, &h, value);
      const bool before = l - 1 <= la;
      const bool ok = got >= 2 && (before ? got == 2 : std::fabs(std::atof(value) - at(la, ha, l - 1, h - 1)) <= 1e-6);
      bad += ok ? 0 : 1;
      ++rows;
    }
    c.expect(rows == layers * heads && bad == 0, "the CSV holds every head's score: " + std::to_string(rows) +
                                                     " rows, " + std::to_string(bad) + " wrong");
    const Image png = loadPng(dir + "/composition_export.png");
    c.expect(png.w > 100 && png.h > 100, "the map as a PNG: " + std::to_string(png.w) + " x " + std::to_string(png.h));
  }
  const auto place = [&](double v) { return v <= baseline ? 0.5 * v / baseline : 0.5 + 0.5 * (v - baseline) / (upper - baseline); };
  const Checker plain{loadPng(dir + "/composition_plain.png"), loadLayout(dir + "/layout_composition_plain.json")};
  for (const bool centred : {true, false}) {
    const Checker& shown_map = centred ? shot : plain;
    int wrong = 0;
    for (int l = 0; l < layers; ++l)
      for (int h = 0; h < heads; ++h) {
        const Rgb8 got = mapCell(shown_map, l, h, layers, heads);
        // The engine's scores are within 1e-8 of NumPy's (test_head_finding.cpp's kCompositionTol), the scale's
        // top too: within 1e-6 of the value on its scale is a colour step at most.
        const double v = l > la ? at(la, ha, l, h) : 0.0;
        const bool ok = l <= la ? got == attnscope::kMaskedColor
                        : centred ? colourNear(got, ColorMap::Diverging, place(v), 1e-6, 0, 1)
                                  : colourNear(got, ColorMap::Viridis, v, 1e-6 * std::max(top, 1e-3), 0, top);
        if (!ok && ++wrong <= 3)
          std::printf("      composition L%d H%d: %.6f of %.6f drawn %s\n", l + 1, h + 1, v, top,
                      Checker::str(got).c_str());
      }
    c.expect(wrong == 0, "composition: " + std::to_string(layers * heads) +
                             (centred ? " cells on the diverging map centred on the baseline"
                                      : " cells in viridis(NumPy's score / the largest), switched off,") +
                             " or grey before the writer, " + std::to_string(wrong) + " wrong");
  }
}

// Direct logit attribution at `position`: NumPy's top prediction as the target, each head's share in the diverging
// colours over +-(the largest share).
void checkLogit(Checker& c, const std::string& dir, const std::string& shot_name, const std::string& reference) {
  const nlohmann::json d = loadJson(dir + "/ckpt/" + reference + ".json")["dla"];
  const int position = d["position"].get<int>();
  const Checker shot{loadPng(dir + "/" + shot_name + ".png"), loadLayout(dir + "/layout_" + shot_name + ".json")};
  const std::string want = std::to_string(position) + " " + std::to_string(d["target"].get<int>());
  c.expect(note(shot.layout, "findheads.dla") == want, shot_name + ": the position and target of NumPy's reference '" +
                                                           want + "': '" + note(shot.layout, "findheads.dla") + "'");
  // One numbering: the position from 0 (as the token list, the token view and the hovers count) in the stepper,
  // the token line under it and the title over the map.
  const std::string at = std::to_string(position);
  c.expect(note(shot.layout, "findheads.dla.position") == at,
           shot_name + ": the position stepper shows " + at + " (from 0): '" +
               note(shot.layout, "findheads.dla.position") + "'");
  c.expect(note(shot.layout, "findheads.dla.token").rfind("token " + at + ": ", 0) == 0,
           shot_name + ": the token line names token " + at + ": '" + note(shot.layout, "findheads.dla.token") + "'");
  c.expect(note(shot.layout, "findheads.dla.title").find("at token " + at + ":") != std::string::npos,
           shot_name + ": the title names token " + at + ": '" + note(shot.layout, "findheads.dla.title") + "'");
  if (!shot.layout.contains("findheads.map")) return;
  const int layers = static_cast<int>(d["heads"].size()), heads = static_cast<int>(d["heads"][0].size());
  double m = 0;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) m = std::max(m, std::abs(d["heads"][l][h].get<double>()));
  // Each share within 5e-5 x ||u||_1 of NumPy's (test_head_finding.cpp's dlaError), the scale's m too; twice
  // that on the value covers both.
  const double tol = 2 * 5e-5 * d["u_l1"].get<double>();
  int wrong = 0;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const double v = d["heads"][l][h].get<double>();
      const Rgb8 got = mapCell(shot, l, h, layers, heads);
      if (!colourNear(got, ColorMap::Diverging, v, tol, -m, m) && ++wrong <= 3)
        std::printf("      logit L%d H%d: %+.6f of +-%.6f drawn %s\n", l + 1, h + 1, v, m, Checker::str(got).c_str());
    }
  c.expect(wrong == 0, shot_name + ": " + std::to_string(layers * heads) +
                           " cells in the diverging colour of NumPy's share, " + std::to_string(wrong) + " wrong");
}

// Value-norm weighting of the grid and a full-size map (maps/map_sources.h's valueNormScales): cell (i, j) of head
// h in layer l is viridis(w_ij * vn[h][j] / max over the layer's heads and keys of vn), w and vn NumPy's
// (expected.json's "weights" and "value_norms": ||v_j W_O^h||). The float32 forward's weights are within 2e-4 of
// NumPy's in every layer (gui_check_model.cpp's kDeepTol), its norms within 1e-5 relative (test_value_norms.cpp):
// 3e-4 on the 0..1 scale covers both.
int wrongWeighted(const Checker& shot, const std::string& rect, const nlohmann::json& expected, int l, int h) {
  const nlohmann::json& w = expected["weights"][l][h];
  const nlohmann::json& vn = expected["value_norms"][l];
  const int n = static_cast<int>(w.size());
  double top = 0;
  for (const auto& head : vn)
    for (const auto& v : head) top = std::max(top, v.get<double>());
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const Rgb8 got = shot.cell(rect, i, j, n, n);
      const double want = w[i][j].get<double>() * vn[h][j].get<double>() / top;
      const bool ok = j > i ? got == attnscope::kMaskedColor : colourNear(got, ColorMap::Viridis, want, 3e-4, 0, 1);
      if (!ok && ++wrong <= 2)
        std::printf("      %s cell (%d,%d): weighted %.5f drawn %s\n", rect.c_str(), i, j, want,
                    Checker::str(got).c_str());
    }
  return wrong;
}

void checkValueNorms(Checker& c, const std::string& dir) {
  const nlohmann::json expected = loadJson(dir + "/ckpt/expected.json");
  const Checker grid{loadPng(dir + "/value_norm_grid.png"), loadLayout(dir + "/layout_value_norm_grid.json")};
  c.expect(grid.layout.contains("model.value_norm_note") && grid.layout.contains("model.tile.11.11"),
           "value norms: the grid drawn weighted, and says so");
  int wrong = 0;
  for (const auto& [l, h] : {std::pair{0, 0}, std::pair{4, 7}, std::pair{11, 11}})
    if (grid.layout.contains("model.tile." + std::to_string(l) + "." + std::to_string(h)))
      wrong += wrongWeighted(grid, "model.tile." + std::to_string(l) + "." + std::to_string(h), expected, l, h);
  c.expect(wrong == 0,
           "value norms: tiles (1,1), (5,8), (12,12) in viridis(NumPy's weight x norm / the layer's "
           "largest norm), " +
               std::to_string(wrong) + " wrong");
  const Checker map{loadPng(dir + "/value_norm_map.png"), loadLayout(dir + "/layout_value_norm_map.json")};
  c.expect(map.layout.contains("model.map") && wrongWeighted(map, "model.map", expected, 4, 7) == 0,
           "value norms: layer 5, head 8 full-size, every cell weighted as NumPy's");
}

}  // namespace

// Which heads matter: every head zero-ablated on the loss, each cell the diverging colour of NumPy's change of the
// loss (patching_reference.py, a whole float64 forward per head) over +-(the largest change of a head, a layer's
// attention or its MLP: the heads and the layers' strip share one bar). The float32 forward's
// hidden states at 12 layers are within 2e-4 of NumPy's (gui_check_model.cpp's kDeepTol), so a loss (a log-softmax
// of logits h . W_U) within 2 x 2e-4 x the unembedding's largest row sum, and a change (two of them) twice that.
void checkPatching(Checker& c, const std::string& dir) {
  const nlohmann::json d = loadJson(dir + "/ckpt/patch_zero.json");
  const Checker shot{loadPng(dir + "/patch.png"), loadLayout(dir + "/layout_patch.json")};
  c.expect(note(shot.layout, "findheads.patch.title").rfind("ablation (zero), loss", 0) == 0,
           "which heads matter: the title names zero ablation on the loss: '" +
               note(shot.layout, "findheads.patch.title") + "'");
  if (!shot.layout.contains("findheads.map")) {
    c.expect(false, "which heads matter: the map is drawn");
    return;
  }
  const int layers = static_cast<int>(d["heads"].size()), heads = static_cast<int>(d["heads"][0].size());
  const double clean = d["clean"].get<double>();
  double m = 0;  // the bar's reach: the largest change of any head, any layer's attention or MLP (one scale)
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h < heads; ++h) m = std::max(m, std::abs(d["heads"][l][h].get<double>() - clean));
    for (const char* part : {"layers", "mlp"}) m = std::max(m, std::abs(d[part][l].get<double>() - clean));
  }
  const double tol = 2 * 2 * 2e-4 * d["unembed_l1"].get<double>();
  int wrong = 0;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const double v = d["heads"][l][h].get<double>() - clean;
      const Rgb8 got = mapCell(shot, l, h, layers, heads);
      if (!colourNear(got, ColorMap::Diverging, v, tol, -m, m) && ++wrong <= 3)
        std::printf("      ablation L%d H%d: %+.6f of +-%.6f drawn %s\n", l + 1, h + 1, v, m, Checker::str(got).c_str());
    }
  c.expect(wrong == 0, "which heads matter: " + std::to_string(layers * heads) +
                           " cells in the diverging colour of NumPy's change of the loss, " + std::to_string(wrong) +
                           " wrong");
  // The layers' strip: each layer's attention (every head at once) and MLP, on the same bar.
  wrong = 0;
  for (int l = 0; l < layers; ++l)
    for (int part = 0; part < 2; ++part) {
      const double v = d[part == 0 ? "layers" : "mlp"][l].get<double>() - clean;
      const Rgb8 got = shot.layout.contains("findheads.parts.map") ? mapCell(shot, l, part, layers, 2, "findheads.parts.map")
                                                                   : Rgb8{0, 0, 0};
      if (!colourNear(got, ColorMap::Diverging, v, tol, -m, m) && ++wrong <= 3)
        std::printf("      ablation L%d %s: %+.6f of +-%.6f drawn %s\n", l + 1, part == 0 ? "attn" : "MLP", v, m,
                    Checker::str(got).c_str());
    }
  c.expect(wrong == 0, "which heads matter: the layers' " + std::to_string(2 * layers) +
                           " attention and MLP cells in NumPy's colours, " + std::to_string(wrong) + " wrong");
}

// The tiny trained model's preset (gui_tiny_model): the induction map lights the one head training.json names (the
// training script's PyTorch scores: 0.96 there, every other head under 0.05), its cell viridis above 0.5 and every
// other cell's below 0.25; then zero ablation on the loss over the second copy: that head's cell in the diverging
// map's red half, far from white (the loss goes from near 0 to several nats: test_tiny_induction.cpp), and the heads
// outside the circuit (at least 4 of 8) near white; the layers' attention and MLP strip drawn beside.
void checkTinyModel(Checker& c, const std::string& dir) {
  const nlohmann::json trained = loadJson(std::string(ATTNSCOPE_ASSETS_DIR) + "/models/tiny-induction/training.json");
  const int il = trained["strongest_induction"][0].get<int>(), ih = trained["strongest_induction"][1].get<int>();
  const Checker induction{loadPng(dir + "/induction.png"), loadLayout(dir + "/layout_induction.json")};
  if (!induction.layout.contains("findheads.map")) {
    c.expect(false, "tiny model: Find heads' map is drawn");
    return;
  }
  const auto viridisAbove = [](Rgb8 got, double at) {
    for (int k = attnscope::colorMapIndex(static_cast<float>(at)); k < 256; ++k)
      if (got == attnscope::colorMapTable(ColorMap::Viridis)[static_cast<std::size_t>(k)]) return true;
    return false;
  };
  int lit = 0, dark = 0;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      const Rgb8 got = mapCell(induction, l, h, 2, 4);
      if (l == il && h == ih) lit += viridisAbove(got, 0.5) ? 1 : 0;
      else dark += viridisAbove(got, 0.25) ? 0 : 1;
    }
  c.expect(lit == 1 && dark == 7, "tiny model: the induction map lights layer " + std::to_string(il + 1) + ", head " +
                                      std::to_string(ih + 1) + " alone (lit " + std::to_string(lit) + ", dark " +
                                      std::to_string(dark) + " of 7)");
  const std::string title = note(c.layout, "findheads.patch.title");
  c.expect(title.rfind("ablation (zero), loss from position 20", 0) == 0, "tiny model: zero ablation on the loss "
                                                                           "from position 20: '" + title + "'");
  if (!c.layout.contains("findheads.map") || !c.layout.contains("findheads.parts.map")) {
    c.expect(false, "tiny model: the heads' map and the layers' strip are drawn");
    return;
  }
  const Rgb8 head = mapCell(c, il, ih, 2, 4);
  c.expect(head.r > head.g + 60 && head.r > head.b + 60, "tiny model: the induction head's ablation in red, drawn " +
                                                     Checker::str(head));
  int white = 0;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      const Rgb8 got = mapCell(c, l, h, 2, 4);
      white += got.r > 215 && got.g > 215 && got.b > 215 ? 1 : 0;
    }
  c.expect(white >= 4, "tiny model: the heads outside the circuit near white (" + std::to_string(white) + " of 8)");
  // Run again on a new forward: the interventions wait for Run (seconds to minutes on a real model).
  const nlohmann::json stale = loadLayout(dir + "/layout_stale.json");
  c.expect(stale.contains("findheads.patch.stale") && !stale.contains("findheads.pending") &&
               !stale.contains("findheads.map"),
           "tiny model: after a new forward, which heads matter waits for Run (nothing computing, no old map)");
}

void checkFindHeadsMaps(Checker& c, const std::string& dir) {
  checkValueNorms(c, dir);
  checkPatching(c, dir);
  checkComposition(c, dir);
  checkLogit(c, dir, "dla", "analysis_10");
  checkLogit(c, dir, "dla_prev", "analysis_9");
  // "hello there" typed as the target: refused (two tokens), in a line under the field; what was shown stays.
  const nlohmann::json refused = loadLayout(dir + "/layout_dla_refused.json");
  c.expect(refused.contains("findheads.dla.target.error") && note(refused, "findheads.dla").rfind("9 ", 0) == 0,
           "a two-token target refused under the field, the attribution shown kept");
  checkLogit(c, dir, "dla_hello", "analysis_9_hello");
}

}  // namespace gui
