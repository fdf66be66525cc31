// Text for the PNG and SVG exports: DejaVu Sans through stb_truetype (measuring for the layout, drawing for
// the PNG), and the RGB canvas the PNG is painted on. Private to the engine's exporters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/export/colormap.h"
#include "attnscope/export/export_layout.h"

namespace attnscope {

// /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf (Debian's fonts-dejavu-core), or ATTNSCOPE_FONT when set.
std::string exportFontPath();

// An 8-bit RGB image, row-major, 3 bytes a pixel.
struct Canvas {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // (height, width, 3)

  Canvas(int w, int h, Rgb8 background);
  void fill(const PixelRect& r, Rgb8 color);
  // Mixes `color` over pixel (x, y) with coverage 0..255; pixels outside the canvas are ignored.
  void blend(int x, int y, Rgb8 color, int coverage);
};

class Font {
 public:
  // The exporters' font, loaded once per path. Throws InputError("font", ...) naming the path and the package
  // when it is missing or unreadable.
  static const Font& exportFont();

  double textWidth(const std::string& utf8, float size) const;  // pixels at `size` pixels per em
  double ascent(float size) const;                              // above the baseline, pixels
  double descent(float size) const;                             // below the baseline, pixels (positive)
  void draw(Canvas& canvas, const TextItem& item) const;

 private:
  explicit Font(std::string bytes);
  std::string bytes_;
  std::vector<unsigned char> info_;  // stbtt_fontinfo, kept opaque so that this header needs no stb
};

// A label as a figure shows it: newlines and tabs as "\\n" and "\\t", any other control character U+FFFD.
std::string visibleText(const std::string& text);

// UTF-8 -> code points; a malformed byte becomes U+FFFD.
std::vector<char32_t> decodeUtf8(const std::string& text);

}  // namespace attnscope
