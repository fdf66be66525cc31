// Colour maps: viridis against matplotlib's published colours, the texture-lookup index formula, and the
// diverging map's white centre and blue/red sides.
#include <gtest/gtest.h>

#include <cmath>

#include "attnscope/export/colormap.h"

using namespace attnscope;

namespace {

Rgb8 hex(unsigned v) {
  return {static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
}

}  // namespace

TEST(ColorMap, ViridisMatchesMatplotlibsPublishedColours) {
  // matplotlib: [to_hex(viridis(t)) for t in (0, .25, .5, .75, 1)] =
  // #440154 #3b528b #21918c #5ec962 #fde725 (the five-colour viridis palette found throughout its docs).
  EXPECT_EQ(colorAt(ColorMap::Viridis, 0.0f), hex(0x440154));
  EXPECT_EQ(colorAt(ColorMap::Viridis, 0.25f), hex(0x3B528B));
  EXPECT_EQ(colorAt(ColorMap::Viridis, 0.5f), hex(0x21918C));
  EXPECT_EQ(colorAt(ColorMap::Viridis, 0.75f), hex(0x5EC962));
  EXPECT_EQ(colorAt(ColorMap::Viridis, 1.0f), hex(0xFDE725));
}

TEST(ColorMap, ViridisGetsLighterAllTheWay) {
  // Viridis is designed with monotonically increasing lightness; a mistyped entry would break the order.
  // Rounding to 8 bits makes neighbours tie or dip by up to 3e-4 in luminance (seen at entries 95, 113, 130,
  // 146), while four entries apart luminance always rises by more than 2e-3: compare entries 4 apart.
  const auto& t = colorMapTable(ColorMap::Viridis);
  for (int i = 4; i < kColorMapSize; ++i)
    EXPECT_GT(relativeLuminance(t[i]), relativeLuminance(t[i - 4])) << "entry " << i;
}

TEST(ColorMap, IndexIsTheNearestFilteredTextureLookup) {
  // A 256-texel texture sampled at t returns texel floor(t * 256), the last texel for t = 1.
  EXPECT_EQ(colorMapIndex(0.0f), 0);
  EXPECT_EQ(colorMapIndex(1.0f / 256.0f), 1);
  EXPECT_EQ(colorMapIndex(0.999f / 256.0f), 0);
  EXPECT_EQ(colorMapIndex(0.5f), 128);
  EXPECT_EQ(colorMapIndex(std::nextafter(0.5f, 0.0f)), 127);
  EXPECT_EQ(colorMapIndex(1.0f), 255);
  EXPECT_EQ(colorMapIndex(-3.0f), 0);  // clamped
  EXPECT_EQ(colorMapIndex(7.0f), 255);
  EXPECT_EQ(colorMapIndex(NAN), 0);
  for (ColorMap m : {ColorMap::Viridis, ColorMap::Diverging}) {
    const auto& table = colorMapTable(m);
    EXPECT_EQ(colorAt(m, 200.5f / 256.0f), table[200]);
  }
}

TEST(ColorMap, ScaleParameter) {
  EXPECT_FLOAT_EQ(colorMapParameter(0.0f, -1.0f, 1.0f), 0.5f);
  EXPECT_FLOAT_EQ(colorMapParameter(-1.0f, -1.0f, 1.0f), 0.0f);
  EXPECT_FLOAT_EQ(colorMapParameter(2.0f, -1.0f, 1.0f), 1.0f);
  EXPECT_FLOAT_EQ(colorMapParameter(0.25f, 0.0f, 0.5f), 0.5f);
  EXPECT_FLOAT_EQ(colorMapParameter(3.0f, 1.0f, 1.0f), 0.0f);  // empty scale
}

TEST(ColorMap, DivergingIsBlueWhiteRed) {
  const auto& t = colorMapTable(ColorMap::Diverging);
  // Ends: ColorBrewer RdBu's darkest blue #053061 and darkest red #67001f.
  EXPECT_EQ(t[0], hex(0x053061));
  EXPECT_EQ(t[255], hex(0x67001F));
  // Zero similarity (t = 0.5) is white, and so is the entry just below it.
  EXPECT_EQ(colorAt(ColorMap::Diverging, colorMapParameter(0.0f, -1.0f, 1.0f)), hex(0xFFFFFF));
  EXPECT_EQ(t[127], hex(0xFFFFFF));
  // Blue below the middle, red above, darker with distance from it on both sides.
  for (int i = 0; i < 127; ++i) {
    EXPECT_GT(t[i].b, t[i].r) << "entry " << i;
    EXPECT_GT(t[255 - i].r, t[255 - i].b) << "entry " << 255 - i;
    EXPECT_LE(relativeLuminance(t[i]), relativeLuminance(t[i + 1])) << "entry " << i;
    EXPECT_LE(relativeLuminance(t[255 - i]), relativeLuminance(t[254 - i])) << "entry " << 255 - i;
  }
}

TEST(ColorMap, MaskedGreyIsNotInEitherMap) {
  for (ColorMap m : {ColorMap::Viridis, ColorMap::Diverging})
    for (const Rgb8& c : colorMapTable(m)) EXPECT_NE(c, kMaskedColor);
}
