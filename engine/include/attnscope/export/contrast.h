// How attention weights become colours: one contrast setting for every map view of the window (heads grid,
// model grid, full-size map) and for the PNG and SVG figures of weights, defined here once. Each weight is put
// over a top (1; the largest weight of the maps shown; of its own map; of its own row, the allowed cells only),
// then t = weight / top linearly, or on a log scale over 3 decades (t = 1 + log10(weight / top) / 3, a
// thousandth of the top and below at the colour map's start). t picks the colour as colorAt (colormap.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

namespace attnscope {

// The top each weight is divided by. In this order in the window's control and on the command line
// (--contrast fixed|shared|head|row).
enum class ColorScale { Fixed, Shared, PerHead, RowMax };

struct MapContrast {
  ColorScale scale = ColorScale::Fixed;
  bool log = false;
  bool operator==(const MapContrast& o) const { return scale == o.scale && log == o.log; }
  bool operator!=(const MapContrast& o) const { return !(*this == o); }
};

// t in [0, 1] of `weight` under `contrast`, its top already chosen (a row's max for RowMax): what the window's
// heatmap shader computes, what the exporters colour by, and the colour bar's scale. top <= 0: t = 0.
inline float contrastT(const MapContrast& contrast, float weight, float top) {
  float t = top > 0 ? weight / top : 0.0f;
  t = t < 0 ? 0 : (t > 1 ? 1 : t);
  if (contrast.log) t = t > 0 ? std::max(0.0f, 1.0f + std::log10(t) / 3.0f) : 0.0f;
  return t;
}

// The scale's name as the window's control shows it: "0 to 1", "shared max", "per-head max", "row max".
inline const char* colorScaleName(ColorScale scale) {
  switch (scale) {
    case ColorScale::Fixed:
      return "0 to 1";
    case ColorScale::Shared:
      return "shared max";
    case ColorScale::PerHead:
      return "per-head max";
    case ColorScale::RowMax:
      return "row max";
  }
  return "0 to 1";
}

// "row max, log", "0 to 1": the whole setting in a few words (the window's Export tab says what it writes).
inline std::string contrastName(const MapContrast& contrast) {
  return std::string(colorScaleName(contrast.scale)) + (contrast.log ? ", log" : "");
}

}  // namespace attnscope
