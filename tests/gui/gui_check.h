// What the GUI checks share (gui_check*.cpp): screenshots and layouts read back, the worked example's weights
// worked out in double from seed 001's printed matrices, and pixel expectations against the engine's colour map.
#pragma once

#include <stb_image.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/export/colormap.h"

namespace gui {

using attnscope::ColorMap;
using attnscope::Rgb8;

using Grid = std::vector<std::vector<double>>;  // (rows, cols)

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> rgb;
  Rgb8 at(int x, int y) const {
    const unsigned char* p =
        &rgb[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * 3];
    return Rgb8{p[0], p[1], p[2]};
  }
};

inline Image loadPng(const std::string& path) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.w, &img.h, &channels, 3);
  if (!data) throw std::runtime_error("cannot read " + path);
  img.rgb.assign(data, data + static_cast<std::size_t>(img.w) * static_cast<std::size_t>(img.h) * 3);
  stbi_image_free(data);
  return img;
}

inline nlohmann::json loadLayout(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

// An NPY file as the exporters write it (version 1.0, '<f4', C order), decoded here without the engine: its
// shape and its values as double.
struct Npy {
  std::vector<long> shape;
  std::vector<double> values;
};
inline Npy loadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0 || bytes[6] != 1)
    throw std::runtime_error(path + ": not an NPY 1.x file");
  const std::size_t header_len =
      static_cast<unsigned char>(bytes[8]) | static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8;
  const std::string header = bytes.substr(10, header_len);
  if (header.find("'descr': '<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(path + ": not little-endian float32 in C order: " + header);
  Npy npy;
  const std::size_t open = header.find('(', header.find("'shape'")), close = header.find(')', open);
  std::size_t count = 1;
  for (std::size_t at = open + 1; at < close;) {
    const std::size_t comma = std::min(header.find(',', at), close);
    const std::string field = header.substr(at, comma - at);
    if (field.find_first_of("0123456789") != std::string::npos) {
      npy.shape.push_back(std::stol(field));
      count *= static_cast<std::size_t>(npy.shape.back());
    }
    at = comma + 1;
  }
  const std::size_t data = 10 + header_len;
  if (bytes.size() != data + 4 * count) throw std::runtime_error(path + ": data of another size than its shape");
  for (std::size_t k = 0; k < count; ++k) {
    float v = 0;
    std::memcpy(&v, bytes.data() + data + 4 * k, 4);
    npy.values.push_back(v);
  }
  return npy;
}

// A text the window named in a layout (ui_probe.h's probeNote: "status.subject", "window.title"), "" when absent.
inline std::string note(const nlohmann::json& layout, const std::string& id) {
  if (!layout.contains("notes") || !layout["notes"].contains(id)) return "";
  return layout["notes"][id].get<std::string>();
}

inline Grid mul(const Grid& a, const Grid& b) {
  Grid c(a.size(), std::vector<double>(b[0].size(), 0.0));
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t k = 0; k < b.size(); ++k)
      for (std::size_t j = 0; j < b[0].size(); ++j) c[i][j] += a[i][k] * b[k][j];
  return c;
}

// Seed 001's worked example: X (3 x 4), W_Q and W_K of both heads (4 x 2) as printed.
inline const Grid kX = {{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 1, 0, 0}};
inline const Grid kWq[2] = {{{1, 0}, {0, 1}, {0, 0}, {0, 0}}, {{0, 0}, {0, 0}, {1, 0}, {0, 1}}};
inline const Grid kWk[2] = {{{0, 1}, {1, 0}, {0, 0}, {0, 0}}, {{0, 0}, {0, 0}, {0, 1}, {1, 0}}};

// softmax(Q K^T / sqrt(2)) row by row; causal: keys after the query are left out (weight 0).
// `scale`: the scores' factor, 1/sqrt(d_k) = 1/sqrt(2) unless a pitfall changes it.
inline Grid expectedWeights(int head, bool causal, const Grid& x = kX, double wq00 = -1,
                            double scale = 1 / std::sqrt(2.0)) {
  Grid wq = kWq[head];
  if (wq00 >= 0) wq[0][0] = wq00;
  const Grid q = mul(x, wq), k = mul(x, kWk[head]);
  Grid w(3, std::vector<double>(3, 0.0));
  for (int i = 0; i < 3; ++i) {
    double sum = 0;
    for (int j = 0; j < 3; ++j) {
      if (causal && j > i) continue;
      const double s = (q[i][0] * k[j][0] + q[i][1] * k[j][1]) * scale;
      sum += (w[i][j] = std::exp(s));
    }
    for (int j = 0; j < 3; ++j) w[i][j] /= sum;
  }
  return w;
}

struct Checker {
  Image img;
  nlohmann::json layout;
  int failures = 0;

  std::vector<float> rect(const std::string& id) const {
    if (!layout.contains(id)) throw std::runtime_error("layout has no '" + id + "'");
    return layout[id].get<std::vector<float>>();
  }
  // A pixel of cell (i, j) of a map with n_q x n_k cells: centred across, `fy` of the way down. The heads
  // panel writes a large cell's weight across its middle, so its maps are read at kAboveText.
  static constexpr float kAboveText = 0.2f;
  Rgb8 cell(const std::string& map, int i, int j, int n_q, int n_k, float fy = 0.5f) const {
    const std::vector<float> r = rect(map);
    const float x = r[0] + (r[2] - r[0]) * (static_cast<float>(j) + 0.5f) / static_cast<float>(n_k);
    const float y = r[1] + (r[3] - r[1]) * (static_cast<float>(i) + fy) / static_cast<float>(n_q);
    return img.at(static_cast<int>(x), static_cast<int>(y));
  }
  void expect(bool ok, const std::string& what) {
    if (!ok) ++failures;
    std::printf("%s  %s\n", ok ? "ok  " : "FAIL", what.c_str());
  }
  static std::string str(Rgb8 c) {
    return "(" + std::to_string(c.r) + "," + std::to_string(c.g) + "," + std::to_string(c.b) + ")";
  }
  // The shader and colorAt both take the nearest of 256 entries; the window draws the float32 weight, this
  // check computes in double, so a weight within 1e-5 of a boundary between two entries may show either.
  void expectWeightColor(const std::string& map, int head, int i, int j, double w) {
    const Rgb8 got = cell(map, i, j, 3, 3, kAboveText);
    const Rgb8 lo = attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w - 1e-5));
    const Rgb8 hi = attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w + 1e-5));
    char what[160];
    std::snprintf(what, sizeof what, "head %d cell (%d,%d): weight %.4f -> colour %s, drawn %s", head + 1, i, j, w,
                  str(attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w))).c_str(), str(got).c_str());
    expect(got == lo || got == hi, what);
  }
  void expectWorkedExample(int heads_to_check, bool causal) {
    for (int h = 0; h < heads_to_check; ++h) {
      const Grid w = expectedWeights(h, causal);
      const std::string map = "head" + std::to_string(h) + ".map";
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          if (causal && j > i) {
            const Rgb8 got = cell(map, i, j, 3, 3, kAboveText);
            expect(got == attnscope::kMaskedColor, "head " + std::to_string(h + 1) + " cell (" + std::to_string(i) +
                                                       "," + std::to_string(j) + ") masked: drawn " + str(got));
          } else {
            expectWeightColor(map, h, i, j, w[i][j]);
          }
        }
    }
  }
};


// `got` is the colour of weight w: the window draws the float32 weight, the references are double, so a weight
// within 1e-5 of a boundary between two colour-map entries may show either.
// Whether `got` is the colour of some value within `tol` of `v` on the scale [vmin, vmax] of `map`.
inline bool colourNear(Rgb8 got, ColorMap map, double v, double tol, double vmin, double vmax) {
  const int lo = attnscope::colorMapIndex(
      attnscope::colorMapParameter(static_cast<float>(v - tol), static_cast<float>(vmin), static_cast<float>(vmax)));
  const int hi = attnscope::colorMapIndex(
      attnscope::colorMapParameter(static_cast<float>(v + tol), static_cast<float>(vmin), static_cast<float>(vmax)));
  for (int k = lo; k <= hi; ++k)
    if (got == attnscope::colorMapTable(map)[static_cast<std::size_t>(k)]) return true;
  return false;
}

inline bool isWeightColor(Rgb8 got, double w) {
  return got == attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w - 1e-5)) ||
         got == attnscope::colorAt(ColorMap::Viridis, static_cast<float>(w + 1e-5));
}

// The checks of other files, by test name (gui_check_model.cpp, gui_check_panels.cpp, gui_check_families.cpp).
// maps_dropped: the forward kept no maps (model_grid_ondemand): the same pixels, recomputed from Q and K.
void checkModelGrid(Checker& c, const std::string& dir, bool maps_dropped, bool gpu);
// gui_model_grid's Find heads: composition and direct logit attribution against NumPy (gui_check_findheads.cpp).
void checkFindHeadsMaps(Checker& c, const std::string& dir);
void checkTinyModel(Checker& c, const std::string& dir);  // the Checkpoint tab's tiny trained model (gui_tiny_model)
void checkModelLlama(Checker& c, const std::string& dir);
void checkModelBert(Checker& c, const std::string& dir);  // an encoder's maps drawn full (gui_check_families.cpp)
// gui_model_wide: a 28 x 16-head grid's labels, none overlapping, the first and last of each kind drawn.
void checkModelWide(Checker& c, const std::string& dir);
// gui_model_wide (and _x2): the grid filling its room; gui_heads_wide (and _x2): 16 heads in 4 KV groups, each
// group on one row, the maps filling theirs (gui_check_maps.cpp).
void checkModelGridFills(Checker& c);
void checkTokenStrip(Checker& c, int tokens);
void checkHeadsWide(Checker& c);
// gui_row_contrast: the worked example's maps under the "row max" contrast, each row over its own max.
void checkRowContrast(Checker& c);
// gui_value_norms: the worked example weighted by value norms (worked by hand from the seed's W_V).
void checkSceneValueNorms(Checker& c);
// gui_export_row_contrast: the Export tab's PNG of all heads in "row max" colours, and the line that says so.
void checkExportRowContrast(Checker& c, const std::string& dir);
void checkExportFigure(Checker& c, const std::string& dir);  // the Export tab's dpi, order, format, message
// gui_export_value_norms: the Export tab's value-norm weighted NPY, PNG and SVG of a scene and of a checkpoint's
// grid against NumPy's float64 numbers; the switch off writes the plain bytes (gui_check_maps.cpp).
void checkExportValueNorms(Checker& c, const std::string& dir);
void checkModelLlamaScene(Checker& c, const std::string& dir);
void checkGroupsRope(Checker& c, const std::string& dir);
void checkPanels(Checker& c, const std::string& dir);
void checkRowProfile(Checker& c, const std::string& dir);  // gui_check_panels.cpp
void checkLesson(Checker& c, const std::string& dir);  // gui_check_lesson.cpp: issue 33's lesson
void checkLessonWalk(Checker& c, const std::string& dir);  // its walkthrough tables and an edit's marks
void checkTeacherFigure(Checker& c, const std::string& dir);  // sentence_heads' tiles: every token, every chip
void checkLongZoom(Checker& c, const std::string& dir, bool long_scene);  // gui_check_long.cpp
// gui_long_grid: eight heads of a 32768-token scene, each map inside its own place in the grid.
void checkLongGrid(Checker& c);                          // gui_check_long.cpp
void checkLongGpu(Checker& c, const std::string& dir);  // gui_check_long.cpp
void checkLongValueNorms(Checker& c, const std::string& dir);  // gui_check_long.cpp
void checkOpenArrays(Checker& c, const std::string& dir);  // gui_check_arrays.cpp
// gui_capture: a capture folder opened in the window, its maps in NumPy's colours (gui_check_families.cpp).
void checkCapture(Checker& c, const std::string& dir, const std::string& backend);
void checkPanes(Checker& c, const std::string& dir);       // gui_check_panes.cpp
void checkBrowse(Checker& c, const std::string& dir);      // gui_check_panes.cpp
void checkScriptCommands(Checker& c, const std::string& dir);  // gui_check_script.cpp
void checkOpenCommandLine(Checker& c, const std::string& dir);  // gui_check_script.cpp
void checkExportBackground(Checker& c, const std::string& dir);  // gui_check_script.cpp
void checkModelGemma2(Checker& c);                                // gui_check_script.cpp

}  // namespace gui
