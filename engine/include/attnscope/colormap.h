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
  Viridis,  // sequential, for weights (0..1)
  Diverging // blue-white-red (RdBu-like), for similarity (-1..1) and differences
};

constexpr int kColorMapSize = 256;
const std::array<Rgb8, kColorMapSize>& colorMapTable(ColorMap map);
// t in [0, 1] (clamped) -> colour, nearest of the 256 entries (as the GPU's nearest-filtered texture).
Rgb8 colorAt(ColorMap map, float t);
// The colour shown for a masked cell (score -inf).
constexpr Rgb8 kMaskedColor{200, 200, 200};

}  // namespace attnscope
