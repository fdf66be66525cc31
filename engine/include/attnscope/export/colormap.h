// Colour maps, defined once: the exporters and the window's heatmap shader (as a 256-entry texture) use
// these same tables.
#pragma once

#include <array>
#include <cstdint>

namespace attnscope {

struct Rgb8 {
  std::uint8_t r, g, b;
  bool operator==(const Rgb8&) const = default;
};

enum class ColorMap {
  Viridis,   // sequential, for weights (0..1)
  Diverging  // blue-white-red (RdBu-like), for similarity (-1..1) and differences
};

constexpr int kColorMapSize = 256;
// Viridis: matplotlib's 256 entries, rounded to 8 bits as matplotlib's to_hex does (entry 0 = #440154,
// entry 255 = #FDE725). Diverging: ColorBrewer RdBu reversed with a pure white centre; entries 127 and 128
// are white, entry i and entry 255 - i are mirror images (blue below the middle, red above).
const std::array<Rgb8, kColorMapSize>& colorMapTable(ColorMap map);
// The entry a 256x1 nearest-filtered texture returns for coordinate t: index = min(255, floor(t * 256)), t
// clamped to [0, 1] (NaN -> 0). This is also matplotlib's lookup for a 256-entry ListedColormap.
int colorMapIndex(float t);
// t in [0, 1] (clamped) -> colour: colorMapTable(map)[colorMapIndex(t)].
Rgb8 colorAt(ColorMap map, float t);
// Relative luminance of an sRGB colour (WCAG 2), 0 (black) to 1 (white): text on a colour is dark above 0.408, as
// seaborn picks its annotation colour.
double relativeLuminance(Rgb8 c);
// A value on the scale [vmin, vmax] -> t in [0, 1], clamped (0 when the scale is empty).
float colorMapParameter(float value, float vmin, float vmax);
// The colour shown for a masked cell (score -inf).
constexpr Rgb8 kMaskedColor{200, 200, 200};

}  // namespace attnscope
