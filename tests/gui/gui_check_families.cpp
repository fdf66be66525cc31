// Pixel checks of grouped-query heads and RoPE: a tiny Llama checkpoint with KV groups in the centre pane
// (scripts/model_llama.txt; llama_reference.py's NumPy float64 maps in expected.json), a Qwen3 layer opened as
// the scene and back (scripts/model_llama_scene.txt), and a 4-head scene whose
// KV-head count is lowered to 2 and then RoPE switched on (scripts/groups_rope.txt), its maps worked out here in
// double from the scene saved before the edits, independently of the engine's grouped and rotary code.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/model/model.h"
#include "attnscope/scene/scene_json.h"
#include "gui_check.h"

namespace gui {

namespace {

using Maps = std::vector<std::vector<std::vector<std::vector<double>>>>;  // (layers, heads, n, n)
const Rgb8 kFrame{230, 160, 60};                                          // model_view.cpp's kGroupFrame

// Cells of `rect_id` (n x n, causal) not in the colour of `w` (isWeightColor: within 1e-5 of the weight, where
// the engine's maps are within 3.2e-6 of NumPy's, docs/models.md), or, above the diagonal (or, with a sliding window of
// `window` keys, at j <= i - window), not masked. fy: where in a cell to read (Checker::cell). causal false (an
// encoder): every cell in the weight's colour, none masked.
int wrongCausalCells(const Checker& c, const std::string& rect_id, const std::vector<std::vector<double>>& w, int n,
                     int window = 0, float fy = 0.5f, bool causal = true) {
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const Rgb8 got = c.cell(rect_id, i, j, n, n, fy);
      const double want = w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      const bool masked = (causal && j > i) || (window > 0 && j <= i - window);
      if (!(masked ? got == attnscope::kMaskedColor : isWeightColor(got, want)) && ++wrong <= 2)
        std::printf("      %s cell (%d,%d): weight %.4f drawn %s\n", rect_id.c_str(), i, j, want,
                    Checker::str(got).c_str());
    }
  return wrong;
}

// The same for value-norm weighted maps (values w_ij vn_j / top in 0..1): within 2e-5 of the colour's value.
int wrongWeightedCells(const Checker& c, const std::string& rect_id, const std::vector<std::vector<double>>& w, int n,
                       int window, float fy = 0.5f) {
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const Rgb8 got = c.cell(rect_id, i, j, n, n, fy);
      const double want = w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      const bool masked = j > i || (window > 0 && j <= i - window);
      if (!(masked ? got == attnscope::kMaskedColor : colourNear(got, ColorMap::Viridis, want, 2e-5, 0, 1)) &&
          ++wrong <= 2)
        std::printf("      %s cell (%d,%d): weighted %.5f drawn %s\n", rect_id.c_str(), i, j, want,
                    Checker::str(got).c_str());
    }
  return wrong;
}

bool inside(const std::vector<float>& inner, const std::vector<float>& outer) {
  return inner[0] >= outer[0] && inner[1] >= outer[1] && inner[2] <= outer[2] && inner[3] <= outer[3];
}

// A scene's head maps in double: softmax(((X W_Q + b_Q) R_q) ((X_k W_K + b_K) R_k)^T * scale) with head h's
// W_Q and the W_K of head `k_from[h]`; R rotates entries t and t + dims/2 by position * theta^(-2t/dims) as
// Hugging Face's rotate_half does (dims 0: no rotation). No mask (the script's scene has none; checked).
Grid mapOf(const attnscope::Scene& s, int h, int k_from, double theta, int dims) {
  const auto project = [](const attnscope::Matrix& x, const attnscope::Matrix& w,
                          const std::optional<attnscope::RowVector>& b, int d) {
    Grid out(static_cast<std::size_t>(x.rows()), std::vector<double>(static_cast<std::size_t>(d), 0.0));
    for (int i = 0; i < x.rows(); ++i)
      for (int c = 0; c < d; ++c) {
        double v = b ? static_cast<double>((*b)(c)) : 0.0;
        for (int m = 0; m < x.cols(); ++m) v += static_cast<double>(x(i, m)) * static_cast<double>(w(m, c));
        out[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)] = v;
      }
    return out;
  };
  const auto rotate = [&](Grid& rows) {
    for (std::size_t pos = 0; pos < rows.size(); ++pos)
      for (int t = 0; t < dims / 2; ++t) {
        const double angle = static_cast<double>(pos) * std::pow(theta, -2.0 * t / dims);
        std::vector<double>& r = rows[pos];
        const double a = r[static_cast<std::size_t>(t)], b = r[static_cast<std::size_t>(t + dims / 2)];
        r[static_cast<std::size_t>(t)] = a * std::cos(angle) - b * std::sin(angle);
        r[static_cast<std::size_t>(t + dims / 2)] = b * std::cos(angle) + a * std::sin(angle);
      }
  };
  const attnscope::HeadParams& q = s.heads[static_cast<std::size_t>(h)];
  const attnscope::HeadParams& k = s.heads[static_cast<std::size_t>(k_from)];
  const int d = q.dK();
  Grid qs = project(s.query, q.w_q, q.b_q, d), ks = project(s.key ? *s.key : s.query, k.w_k, k.b_k, d);
  rotate(qs), rotate(ks);
  const double scale = s.scale ? static_cast<double>(*s.scale) : 1 / std::sqrt(static_cast<double>(d));
  Grid w(qs.size(), std::vector<double>(ks.size(), 0.0));
  for (std::size_t i = 0; i < qs.size(); ++i) {
    std::vector<double> score(ks.size());
    for (std::size_t j = 0; j < ks.size(); ++j) {
      for (int c = 0; c < d; ++c) score[j] += qs[i][static_cast<std::size_t>(c)] * ks[j][static_cast<std::size_t>(c)];
      score[j] *= scale;
    }
    const double top = *std::max_element(score.begin(), score.end());
    double sum = 0;
    for (std::size_t j = 0; j < ks.size(); ++j) sum += (w[i][j] = std::exp(score[j] - top));
    for (double& v : w[i]) v /= sum;
  }
  return w;
}

// Cells of the heads panel's map of head h not in the colour of `w`.
int wrongSceneCells(const Checker& c, int h, const Grid& w) {
  int wrong = 0;
  const std::string map = "head" + std::to_string(h) + ".map";
  const int nq = static_cast<int>(w.size()), nk = static_cast<int>(w[0].size());
  for (int i = 0; i < nq; ++i)
    for (int j = 0; j < nk; ++j) {
      const Rgb8 got = c.cell(map, i, j, nq, nk, Checker::kAboveText);
      if (!isWeightColor(got, w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]) && ++wrong <= 2)
        std::printf("      %s cell (%d,%d): weight %.4f drawn %s\n", map.c_str(), i, j,
                    w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)], Checker::str(got).c_str());
    }
  return wrong;
}

double largestChange(const Grid& a, const Grid& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[i].size(); ++j) m = std::max(m, std::fabs(a[i][j] - b[i][j]));
  return m;
}

}  // namespace

// A BERT checkpoint from the Checkpoint tab (scripts/model_bert.txt): an encoder's tiles and its focused map drawn
// full, every cell (the upper triangle included) in the colour of NumPy's float64 weight (bert_reference.py), none
// in the masked grey; and the upper triangle really carries weight (so grey there would be a wrong picture).
void checkModelBert(Checker& c, const std::string& dir) {
  std::ifstream in(dir + "/ckpt/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const Maps maps = expected["weights"].get<Maps>();
  const std::vector<int> ids = expected["ids"].get<std::vector<int>>();
  const attnscope::model::Model ck = attnscope::model::loadModel(dir + "/ckpt");
  c.expect(ck.tokenizer.encode("The cat sat on the mat.") == ids, "the panel's text gives the tokens NumPy ran");
  const int layers = static_cast<int>(maps.size()), heads = static_cast<int>(maps[0].size());
  const int n = static_cast<int>(ids.size());
  c.expect(layers == 2 && heads == 4 && n == 16, "NumPy's maps: 2 layers x 4 heads, 16 tokens ([CLS] ... [SEP])");
  double upper = INFINITY;  // the least mean weight a query puts on later keys, over every head (seen: 0.39)
  for (const auto& layer : maps)
    for (const auto& map : layer) {
      double sum = 0;
      for (int i = 0; i + 1 < n; ++i)
        for (int j = i + 1; j < n; ++j) sum += map[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      upper = std::min(upper, sum / static_cast<double>(n - 1));
    }
  c.expect(upper > 0.1, "NumPy's maps put weight on later keys (least mean " + std::to_string(upper) + ")");
  // Find heads' list: direct logit attribution offered greyed out with the encoder's reason, naming the family as
  // people write it ("BERT", not the config's "bert"); a click on it changes nothing.
  const nlohmann::json offer = loadLayout(dir + "/layout_dla_offer.json");
  const nlohmann::json clicked = loadLayout(dir + "/layout_dla_clicked.json");
  c.expect(offer.contains("findheads.score.9") &&
               note(offer, "findheads.dla_refused").find("BERT is an encoder") != std::string::npos,
           "logit attribution offered disabled, with the reason: '" + note(offer, "findheads.dla_refused") + "'");
  c.expect(!clicked.contains("findheads.dla.title") && !clicked.contains("findheads.unavailable") &&
               clicked.contains("findheads.map"),
           "a click on the disabled entry leaves the head-type map on show");
  int wrong = 0, grey = 0;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const std::string id = "model.tile." + std::to_string(l) + "." + std::to_string(h);
      const auto& w = maps[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
      wrong += wrongCausalCells(c, id, w, n, 0, 0.5f, false);
      for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) grey += c.cell(id, i, j, n, n) == attnscope::kMaskedColor;
    }
  const std::vector<float> tile = c.rect("model.tile.0.0");
  c.expect(tile[2] - tile[0] >= static_cast<float>(n),
           "tiles of " + std::to_string(static_cast<int>(tile[2] - tile[0])) + " px: no cell pooled");
  c.expect(wrong == 0 && grey == 0, "grid: 8 tiles x 256 cells in colorAt(NumPy's weight), " + std::to_string(wrong) +
                                        " wrong, " + std::to_string(grey) + " upper cells grey");
  const Checker focus{loadPng(dir + "/focus.png"), loadLayout(dir + "/layout_focus.json")};
  c.expect(focus.layout.contains("model.map"), "one map shown full-size");
  if (focus.layout.contains("model.map"))
    c.expect(wrongCausalCells(focus, "model.map", maps[1][2], n, 0, 0.5f, false) == 0,
             "layer 2, head 3 full-size: every cell, the upper triangle too, in colorAt");
}

void checkModelLlama(Checker& c, const std::string& dir) {
  std::ifstream in(dir + "/ckpt/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const Maps maps = expected["weights"].get<Maps>();
  const std::vector<int> ids = expected["ids"].get<std::vector<int>>();
  const std::vector<int> kv = expected["kv_head"].get<std::vector<int>>();
  const attnscope::model::Model ck = attnscope::model::loadModel(dir + "/ckpt");
  c.expect(ck.tokenizer.encode("The cat sat on the mat.") == ids, "the panel's text gives the tokens NumPy ran");
  const int layers = static_cast<int>(maps.size()), heads = static_cast<int>(maps[0].size());
  const int n = static_cast<int>(ids.size()), groups = kv.back() + 1;
  c.expect(layers == 3 && heads == 8 && groups == 4 && n == 24,
           "NumPy's maps: 3 layers x 8 heads in 4 KV groups, 24 tokens");

  // Every tile in NumPy's colours (a tile at least n px wide: one pixel per cell or more, none pooled).
  int wrong = 0;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h)
      wrong += wrongCausalCells(c, "model.tile." + std::to_string(l) + "." + std::to_string(h),
                                maps[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)], n);
  const std::vector<float> tile = c.rect("model.tile.0.0");
  c.expect(tile[2] - tile[0] >= static_cast<float>(n),
           "tiles of " + std::to_string(static_cast<int>(tile[2] - tile[0])) + " px: no cell pooled");
  c.expect(wrong == 0,
           "grid: 24 tiles x 576 cells in colorAt(NumPy's weight) or masked, " + std::to_string(wrong) + " wrong");

  // One frame per layer and KV group around exactly that group's query heads; its 1-px line in the frame colour
  // on all four sides (read at each side's middle); the gap between two groups' frames not in it.
  int bad_frames = 0;
  for (int l = 0; l < layers; ++l)
    for (int g = 0; g < groups; ++g) {
      const std::string id = "model.kvframe." + std::to_string(l) + "." + std::to_string(g);
      if (!c.layout.contains(id)) {
        ++bad_frames;
        continue;
      }
      const std::vector<float> f = c.rect(id);
      bool ok = true;
      for (int h = 0; h < heads; ++h)
        ok = ok && inside(c.rect("model.tile." + std::to_string(l) + "." + std::to_string(h)), f) ==
                       (kv[static_cast<std::size_t>(h)] == g);
      const int x0 = static_cast<int>(f[0]), y0 = static_cast<int>(f[1]), x1 = static_cast<int>(f[2]) - 1,
                y1 = static_cast<int>(f[3]) - 1;
      const int xm = (x0 + x1) / 2, ym = (y0 + y1) / 2;
      ok = ok && c.img.at(x0, ym) == kFrame && c.img.at(x1, ym) == kFrame && c.img.at(xm, y0) == kFrame &&
           c.img.at(xm, y1) == kFrame && !(c.img.at(x1 + 1, ym) == kFrame);
      if (!ok && ++bad_frames <= 2)
        std::printf("      %s: left %s right %s top %s bottom %s\n", id.c_str(), Checker::str(c.img.at(x0, ym)).c_str(),
                    Checker::str(c.img.at(x1, ym)).c_str(), Checker::str(c.img.at(xm, y0)).c_str(),
                    Checker::str(c.img.at(xm, y1)).c_str());
    }
  c.expect(bad_frames == 0,
           "12 KV-group frames drawn around their two query heads, " + std::to_string(bad_frames) + " wrong");
  int labelled = 0;
  for (int g = 0; g < groups; ++g) {
    const std::string id = "model.kvlabel." + std::to_string(g);
    if (!c.layout.contains(id)) continue;
    const std::vector<float> r = c.rect(id);
    int lit = 0;
    for (int y = static_cast<int>(r[1]); y < static_cast<int>(r[3]); ++y)
      for (int x = static_cast<int>(r[0]); x < static_cast<int>(r[2]); ++x) lit += c.img.at(x, y) == kFrame;
    labelled += lit > 20;  // "KV n" and its bracket in the frame colour (seen: well over 20 px)
  }
  c.expect(labelled == groups,
           "each group labelled with its KV head above the grid (" + std::to_string(labelled) + " of 4)");

  // Layer 2, head 4 hovered: a tooltip (layer, head, KV head, query, key, weight: six lines, ~250 x 100 px) opens
  // 16 to 24 px right of the mouse at its height; every pixel of [mx + 50, mx + 150) x [my + 10, my + 50) lies
  // under it and changes from the grid and panel behind (seen: 3996 of 4000).
  const Image hover = loadPng(dir + "/hover.png");
  const std::vector<float> r = c.rect("model.tile.1.3");
  const int mx = static_cast<int>((r[0] + r[2]) / 2), my = static_cast<int>((r[1] + r[3]) / 2);
  int changed = 0;
  for (int y = my + 10; y < my + 50; ++y)
    for (int x = mx + 50; x < mx + 150; ++x) changed += !(hover.at(x, y) == c.img.at(x, y));
  c.expect(changed > 3600, "tooltip drawn next to the mouse (" + std::to_string(changed) + " of 4000 pixels changed)");

  // Layer 2, head 3 (kv head 2) clicked: that map alone, every cell in NumPy's colour.
  const Checker focus{loadPng(dir + "/focus.png"), loadLayout(dir + "/layout_focus.json")};
  c.expect(focus.layout.contains("model.map") && !focus.layout.contains("model.tile.0.0"), "one map shown full-size");
  if (focus.layout.contains("model.map"))
    c.expect(wrongCausalCells(focus, "model.map", maps[1][2], n) == 0,
             "layer 2, head 3 full-size: every cell in colorAt");
  // "Open layer as scene" opens a Llama layer too: the centre shows the scene's 8 heads (model_llama_scene checks
  // their maps), no longer the model's map.
  const nlohmann::json after = loadLayout(dir + "/layout_after_open.json");
  c.expect(!after.contains("model.map") && after.contains("head7.map") && after.contains("model.back"),
           "Open-as-scene puts layer 2's 8 heads in the centre, with the way back to the model");
}

// A capture (scripts/capture.txt): refused in one red line when broken, then its grid and one map full-size, every
// cell in the colour of NumPy's weight of the checkpoint the capture was taken from, or grey outside the causal
// 5-key window; the query heads framed by their KV group. On the GPU backend every tile and the full-size map are
// the GPU's (RunTiles on the tile workers' own contexts: the grid's 8 overviews, the map's overview), with no
// fallback said.
void checkCapture(Checker& c, const std::string& dir, const std::string& backend) {
  std::ifstream in(dir + "/ckpt/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const Maps maps = expected["weights"].get<Maps>();
  const int n = static_cast<int>(expected["ids"].size()), window = 5;
  c.expect(maps.size() == 2 && maps[0].size() == 4 && n == 24, "NumPy's maps: 2 layers x 4 heads, 24 tokens");

  const Checker broken{loadPng(dir + "/broken.png"), loadLayout(dir + "/layout_broken.json")};
  c.expect(broken.layout.contains("file.message") && broken.layout.contains("head0.map") &&
               !broken.layout.contains("model.tile.0.0"),
           "a broken capture: a message in the file bar, the worked example still shown");
  if (broken.layout.contains("file.message")) {
    const std::vector<float> r = broken.rect("file.message");
    int red = 0;
    for (int y = static_cast<int>(r[1]); y < static_cast<int>(r[3]); ++y)
      for (int x = static_cast<int>(r[0]); x < static_cast<int>(r[2]); ++x) {
        const Rgb8 p = broken.img.at(x, y);
        red += p.r > 180 && p.g < 140 && p.b < 140;
      }
    c.expect(red > 30, "the message is red (" + std::to_string(red) + " red pixels)");
    c.expect(note(broken.layout, "file.message").find("n_kv_head") != std::string::npos,
             "it names the field: '" + note(broken.layout, "file.message") + "'");
  }

  if (backend == "gpu") {
    const Checker focus_gpu{loadPng(dir + "/focus.png"), loadLayout(dir + "/layout_focus.json")};
    c.expect(note(c.layout, "model.grid_gpu_tiles") == "8" && !c.layout.contains("model.grid_problem"),
             "the grid's 8 maps drawn on the GPU (" + note(c.layout, "model.grid_gpu_tiles") + ")");
    c.expect(std::atoi(note(focus_gpu.layout, "model.map_gpu_tiles").c_str()) >= 1 &&
                 !focus_gpu.layout.contains("model.map_problem"),
             "the full-size map drawn on the GPU (" + note(focus_gpu.layout, "model.map_gpu_tiles") + " tiles)");
  } else {
    c.expect(note(c.layout, "model.grid_gpu_tiles") == "0", "on the CPU backend no tile is the GPU's");
  }

  int wrong = 0;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h)
      wrong += wrongCausalCells(c, "model.tile." + std::to_string(l) + "." + std::to_string(h),
                                maps[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)], n, window);
  c.expect(wrong == 0, "grid: 8 tiles x 576 cells in colorAt(NumPy's weight) or masked, " + std::to_string(wrong) +
                           " wrong");
  c.expect(c.layout.contains("model.kvframe.0.1") && !c.layout.contains("model.kvframe.0.2"),
           "each layer's heads framed in 2 KV groups");
  const Checker focus{loadPng(dir + "/focus.png"), loadLayout(dir + "/layout_focus.json")};
  c.expect(focus.layout.contains("model.map") &&
               wrongCausalCells(focus, "model.map", maps[1][2], n, window, Checker::kAboveText) == 0,
           "layer 2, head 3 full-size: every cell in colorAt(NumPy's weight) or masked");

  // Value norms from the capture's v and W_O rows: cell (i, j) of head h in colorAt(w_ij vn[h][j] / the layer's
  // largest vn), w and vn NumPy's float64. The capture's maps are within 1e-5 of NumPy's and its norms within 1e-5
  // relative (test_capture.cpp), inside isWeightColor's 1e-5 either side of a colour step only where no step lies
  // between: 2e-5 on the 0..1 scale covers both.
  const auto weighted = [&](int l, int h) {
    const nlohmann::json& vn = expected["value_norms"][static_cast<std::size_t>(l)];
    double top = 0;
    for (const auto& head : vn)
      for (const auto& v : head) top = std::max(top, v.get<double>());
    Grid w = maps[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
    for (auto& row : w)
      for (int j = 0; j < n; ++j) row[static_cast<std::size_t>(j)] *= vn[h][j].get<double>() / top;
    return w;
  };
  const Checker vmap{loadPng(dir + "/value_norm_map.png"), loadLayout(dir + "/layout_value_norm_map.json")};
  c.expect(vmap.layout.contains("model.value_norm_note") && vmap.layout.contains("model.map") &&
               wrongWeightedCells(vmap, "model.map", weighted(1, 2), n, window, Checker::kAboveText) == 0,
           "value norms: layer 2, head 3 full-size in colorAt(NumPy's weight x norm / the layer's largest norm)");
  const Checker vgrid{loadPng(dir + "/value_norm_grid.png"), loadLayout(dir + "/layout_value_norm_grid.json")};
  int wrong_weighted = 0;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h)
      wrong_weighted += wrongWeightedCells(vgrid, "model.tile." + std::to_string(l) + "." + std::to_string(h),
                                           weighted(l, h), n, window);
  c.expect(wrong_weighted == 0, "value norms: the grid's 8 tiles weighted as NumPy's, " +
                                    std::to_string(wrong_weighted) + " cells wrong");
  // The token view of a capture: its layer read and its numbers worked out off the UI thread, then shown.
  const nlohmann::json tokens = loadLayout(dir + "/layout_tokenview.json");
  c.expect(note(tokens, "tokenview.token") == "5" && tokens.contains("tokenview.from") &&
               !tokens.contains("tokenview.error") && !tokens.contains("tokenview.pending"),
           "the token view shows token 5 of the capture, computed off the UI thread");
}

void checkModelLlamaScene(Checker& c, const std::string& dir) {
  std::ifstream in(dir + "/ckpt/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const Maps maps = expected["weights"].get<Maps>();
  const std::vector<int> ids = expected["ids"].get<std::vector<int>>();
  const int n = static_cast<int>(ids.size()), window = 4;  // run_gui_test.sh's --window 4, on layer 2 only
  c.expect(maps.size() == 2 && maps[1].size() == 4 && n == 24, "NumPy's maps: 2 layers x 4 heads, 24 tokens");

  // The scene as saved from the window: what the Model panel's KV-head stepper and RoPE toggle edit, from the
  // checkpoint's config (hidden 32, 4 heads of 8 on 2 KV heads, rope_theta 10000, Qwen3's q_norm/k_norm).
  const attnscope::Scene s = attnscope::loadSceneFile(dir + "/scene.json");
  c.expect(s.d_model == 32 && s.numHeads() == 4 && s.query.rows() == n, "the scene: d_model 32, 4 heads, 24 rows");
  c.expect(s.numKvHeads() == 2 && s.kvOf(0) == 0 && s.kvOf(1) == 0 && s.kvOf(2) == 1 && s.kvOf(3) == 1,
           "heads 1-2 read KV head 1, heads 3-4 KV head 2");
  c.expect(s.rope && s.rope->theta == 10000.0 && s.rope->dims == 8, "RoPE: theta 10000 over all 8 dims");
  c.expect(s.q_norm.has_value() && s.k_norm.has_value(), "Qwen3's q_norm and k_norm");
  bool window_mask = s.mask == attnscope::MaskKind::Explicit && s.explicit_mask.rows() == n &&
                     s.explicit_mask.cols() == n;
  for (int i = 0; window_mask && i < n; ++i)
    for (int j = 0; j < n; ++j) window_mask = window_mask && (s.explicit_mask(i, j) != 0) == (j <= i && j > i - window);
  c.expect(window_mask, "the sliding window of 4 keys as the mask (query i sees i - 3 .. i)");
  const nlohmann::json model_tab = loadLayout(dir + "/layout_model.json");
  c.expect(model_tab.contains("model.kv_heads.minus") && model_tab.contains("model.rope"),
           "the Model panel shows the KV-head stepper and the RoPE toggle");

  // The heads grid: exactly 4 heads, each cell in colorAt(NumPy's layer-2 weight) or masked (read at
  // kAboveText, clear of the "KV n" label at a frame's lower right). The engine's maps of this scene are within
  // 2.5e-7 (CPU) and 2.9e-7 (GPU) of NumPy's (`model --layer 2 --scene-out`, then `compute`); isWeightColor's
  // 1e-5 is the allowance for a weight near a colour-map entry's boundary. The way back to the model is on show.
  c.expect(c.layout.contains("head3.map") && !c.layout.contains("head4.map") && !c.layout.contains("model.tile.0.0"),
           "the centre shows the scene's 4 heads");
  c.expect(c.layout.contains("model.back"), "a 'Back to the model' button above the heads");
  int wrong = 0;
  for (int h = 0; h < 4 && c.layout.contains("head3.map"); ++h)
    wrong += wrongCausalCells(c, "head" + std::to_string(h) + ".map", maps[1][static_cast<std::size_t>(h)], n, window,
                              Checker::kAboveText);
  c.expect(wrong == 0, "layer 2 as the scene: 4 heads x 576 cells in colorAt(NumPy's weight) or masked, " +
                           std::to_string(wrong) + " wrong");

  // KV frames (panel_heads.cpp's colour (240, 200, 80), a 2-px anti-aliased line: seen (173, 145, 61) on one
  // side, 70% over the pane's (15, 15, 15)): a pixel that is that blend at 50% or more, every channel within 6,
  // left of each group's first map (past its query labels: seen 39 px) and right of its last (seen 4 px), at
  // the maps' middle height; none between the group's two maps.
  const auto isFramePixel = [](Rgb8 p) {
    const double a = (p.r - 15.0) / (240.0 - 15.0);
    return a >= 0.5 && a <= 1.0 && std::fabs(p.g - (15.0 + a * 185.0)) <= 6 && std::fabs(p.b - (15.0 + a * 65.0)) <= 6;
  };
  const auto frameNear = [&](int x0, int x1, int y) {
    for (int x = std::max(0, x0); x < std::min(c.img.w, x1); ++x)
      if (isFramePixel(c.img.at(x, y))) return true;
    return false;
  };
  int framed = 0;
  for (int g = 0; g < 2 && c.layout.contains("head3.map"); ++g) {
    const std::vector<float> a = c.rect("head" + std::to_string(2 * g) + ".map"),
                             b = c.rect("head" + std::to_string(2 * g + 1) + ".map");
    const int y = static_cast<int>((a[1] + a[3]) / 2);
    framed += frameNear(static_cast<int>(a[0]) - 60, static_cast<int>(a[0]), y) &&
              frameNear(static_cast<int>(b[2]), static_cast<int>(b[2]) + 12, y) &&
              !frameNear(static_cast<int>(a[2]), static_cast<int>(b[0]), y);
  }
  c.expect(framed == 2, "each KV group's two heads inside one frame (" + std::to_string(framed) + " of 2)");

  // Back to the model: the grid again, layer 2 head 3's tile in NumPy's colours, the keys before the sliding
  // window masked as the scene's mask and the tooltip have them.
  const Checker back{loadPng(dir + "/back.png"), loadLayout(dir + "/layout_back.json")};
  c.expect(back.layout.contains("model.tile.1.3") && !back.layout.contains("head0.map"),
           "Back to the model: the layers x heads grid in the centre again");
  if (back.layout.contains("model.tile.1.2"))
    c.expect(wrongCausalCells(back, "model.tile.1.2", maps[1][2], n, window) == 0,
             "layer 2, head 3's tile after going back: every cell in colorAt, or masked (causal, sliding window)");
}

void checkGroupsRope(Checker& c, const std::string& dir) {
  const attnscope::Scene mha = attnscope::loadSceneFile(dir + "/mha.json");
  c.expect(mha.numHeads() == 4 && !mha.grouped() && !mha.hasMask() && !mha.rope,
           "the saved scene: 4 heads, each its own K/V, no mask, no RoPE");
  const attnscope::Scene gqa = attnscope::loadSceneFile(dir + "/gqa.json");
  c.expect(gqa.numKvHeads() == 2 && gqa.kvOf(0) == 0 && gqa.kvOf(1) == 0 && gqa.kvOf(2) == 1 && gqa.kvOf(3) == 1,
           "after kv heads - -: heads 1-2 read KV head 1, heads 3-4 KV head 2");
  const attnscope::Scene roped = attnscope::loadSceneFile(dir + "/rope.json");
  const int d_k = mha.heads[0].dK();
  c.expect(roped.rope && roped.rope->theta == 10000.0 && roped.rope->dims == d_k - d_k % 2,
           "RoPE on: theta 10000 over the head's " + std::to_string(d_k - d_k % 2) + " dims");
  const int dims = d_k - d_k % 2;

  // Before: each head its own K. After: each group keeps its first head's K (heads 1 and 3 keep theirs; 2 and
  // 4 now read 1's and 3's). Then RoPE on the grouped scene.
  const Checker before{loadPng(dir + "/mha.png"), loadLayout(dir + "/layout_mha.json")};
  const Checker rope{loadPng(dir + "/rope.png"), loadLayout(dir + "/layout_rope.json")};
  int wrong_before = 0, wrong_gqa = 0, wrong_rope = 0;
  for (int h = 0; h < 4; ++h) {
    const Grid own = mapOf(mha, h, h, 0, 0), shared = mapOf(mha, h, h - h % 2, 0, 0);
    const Grid rotated = mapOf(mha, h, h - h % 2, 10000.0, dims);
    wrong_before += wrongSceneCells(before, h, own);
    wrong_gqa += wrongSceneCells(c, h, shared);
    wrong_rope += wrongSceneCells(rope, h, rotated);
    const double moved = largestChange(own, shared), turned = largestChange(shared, rotated);
    if (h % 2 == 0)
      c.expect(moved == 0, "head " + std::to_string(h + 1) + " keeps its own K: its map unchanged by the merge");
    else
      c.expect(moved > 0.01, "head " + std::to_string(h + 1) + " reads head " + std::to_string(h) +
                                 "'s K: its map changes (largest change " + std::to_string(moved) + ")");
    c.expect(turned > 0.01, "head " + std::to_string(h + 1) + "'s map changes with RoPE (largest change " +
                                std::to_string(turned) + ")");
  }
  c.expect(wrong_before == 0,
           "4 heads before: every cell in colorAt(weight), " + std::to_string(wrong_before) + " wrong");
  c.expect(wrong_gqa == 0,
           "2 KV heads: every cell in colorAt(weight with the group's K), " + std::to_string(wrong_gqa) + " wrong");
  c.expect(wrong_rope == 0,
           "RoPE on: every cell in colorAt(weight with q, k rotated), " + std::to_string(wrong_rope) + " wrong");
}

}  // namespace gui
