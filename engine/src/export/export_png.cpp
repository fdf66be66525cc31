// PNG export: the figure painted on an RGB canvas (heatmaps, colour bar, lines, DejaVu Sans text) and encoded
// in memory with stb_image_write. Also the heatmap rasteriser the SVG embeds for large maps.
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "export/export_formats.h"

namespace attnscope {

namespace {

void appendBytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

void appendBigEndian(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xffu));
}

// PNG's CRC-32 (ISO 3309, polynomial 0xedb88320 reflected), bit by bit: nine bytes a figure, no table needed.
std::uint32_t crc32(const std::string& bytes) {
  std::uint32_t c = 0xffffffffu;
  for (const char byte : bytes) {
    c ^= static_cast<unsigned char>(byte);
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}

}  // namespace

// Pixel p along an axis of n cells shows the cells pooledRange(p, pixels, n): the pooling every long map's
// tiles use too (compute/tiles.h). Under a contrast each cell is first put over its top (contrastTops), then
// pooled: a pixel of several cells is the mean of their normalised weights, one of one cell exactly its
// cellColor.
Canvas rasterizeMap(const Figure& figure, int panel, int w, int h) {
  const HeatmapPanel& p = figure.panels[static_cast<std::size_t>(panel)];
  const int rows = static_cast<int>(p.values.rows()), cols = static_cast<int>(p.values.cols());
  const bool has_mask = p.masked.size() > 0;
  const bool plain = figure.contrast == MapContrast{};  // the vmin..vmax scale, as every figure but weights'
  const std::vector<float> tops = contrastTops(figure, panel);
  Canvas c(w, h, kMaskedColor);
  std::vector<std::pair<int, int>> col_ranges(static_cast<std::size_t>(w));
  for (int x = 0; x < w; ++x) col_ranges[static_cast<std::size_t>(x)] = pooledRange(x, w, cols);
  for (int y = 0; y < h; ++y) {
    const auto [r0, r1] = pooledRange(y, h, rows);
    for (int x = 0; x < w; ++x) {
      const auto [c0, c1] = col_ranges[static_cast<std::size_t>(x)];
      double sum = 0;
      int count = 0;
      for (int i = r0; i < r1; ++i) {
        // A row whose top is 0 (nothing above 0) adds 0s: its cells are at the colour map's start.
        const double top = plain ? 1.0 : static_cast<double>(tops[static_cast<std::size_t>(i)]);
        for (int j = c0; j < c1; ++j) {
          if (has_mask && p.masked(i, j)) continue;
          if (plain)
            sum += p.values(i, j);
          else if (top > 0)
            sum += p.values(i, j) / top;
          ++count;
        }
      }
      Rgb8 color = kMaskedColor;
      if (count > 0) {
        const auto mean = static_cast<float>(sum / count);
        color = plain ? cellColor(figure, mean, false) : colorAt(figure.map, contrastT(figure.contrast, mean, 1.0f));
      }
      std::uint8_t* px = &c.rgb[(static_cast<std::size_t>(y) * w + x) * 3];
      px[0] = color.r;
      px[1] = color.g;
      px[2] = color.b;
    }
  }
  return c;
}

namespace {

// The pHYs chunk: length, "pHYs", x and y pixels per metre = round(dpi / 0.0254), unit 1 = metre, CRC-32.
std::string pngPhysChunk(int dpi) {
  const auto per_metre = static_cast<std::uint32_t>(std::lround(dpi / 0.0254));
  std::string body = "pHYs";
  appendBigEndian(body, per_metre);
  appendBigEndian(body, per_metre);
  body.push_back(1);  // the unit: the metre
  std::string chunk;
  appendBigEndian(chunk, 9);
  chunk += body;
  appendBigEndian(chunk, crc32(body));
  return chunk;
}

}  // namespace

std::string encodePng(const Canvas& canvas, int dpi) {
  std::string bytes;
  // stb's flip flag is one for the whole process (libstb): state it for our rows, top first, on every call,
  // so that nothing another part of the program set can turn an export upside down.
  stbi_flip_vertically_on_write(0);
  if (!stbi_write_png_to_func(appendBytes, &bytes, canvas.width, canvas.height, 3, canvas.rgb.data(), canvas.width * 3))
    throw InputError("png", "an image stb_image_write can encode",
                     shapeString(canvas.height, canvas.width) + " pixels");
  // The signature (8 bytes) and IHDR (4 + 4 + 13 + 4) come first; pHYs must come before the image data.
  constexpr std::size_t kAfterHeader = 8 + 25;
  if (dpi > 0 && bytes.size() > kAfterHeader) bytes.insert(kAfterHeader, pngPhysChunk(dpi));
  return bytes;
}

std::string pngBytes(const Figure& figure, const FigureLayout& layout) {
  Canvas canvas(layout.width, layout.height, Rgb8{255, 255, 255});
  for (std::size_t p = 0; p < layout.maps.size(); ++p) {
    const PixelRect& m = layout.maps[p];
    const Canvas map = rasterizeMap(figure, static_cast<int>(p), m.w, m.h);
    for (int y = 0; y < m.h; ++y)
      std::copy_n(&map.rgb[static_cast<std::size_t>(y) * m.w * 3], static_cast<std::size_t>(m.w) * 3,
                  &canvas.rgb[(static_cast<std::size_t>(m.y + y) * canvas.width + m.x) * 3]);
  }
  for (const FillItem& f : layout.fills) canvas.fill(f.rect, f.color);
  // Colour bar: pixel row y shows the value at its centre, vmax at the top.
  const PixelRect& bar = layout.colorbar;
  for (int y = 0; y < bar.h; ++y)
    canvas.fill({bar.x, bar.y + y, bar.w, 1}, colorAt(figure.map, 1.0f - (y + 0.5f) / static_cast<float>(bar.h)));
  for (const LineItem& l : layout.lines) canvas.fill({l.x0, l.y0, l.x1 - l.x0 + 1, l.y1 - l.y0 + 1}, l.color);
  const Font& font = Font::exportFont();
  for (const TextItem& t : layout.texts) font.draw(canvas, t);
  return encodePng(canvas, layout.dpi);
}

}  // namespace attnscope
