// SVG export: the same layout as the PNG as vector graphics: one <rect> per cell (an embedded PNG of the map
// when there are too many cells for a vector file to stay small), real <text> labels, escaped. Written so that
// the common renderers (librsvg, ImageMagick's own MSVG, browsers, Inkscape) draw it alike: every shape states
// its fill and stroke="none" (a renderer's default stroke outlined each cell and glyph), the colour bar is one
// embedded image (256 one-pixel rects, and a linearGradient too, drew as one black block in ImageMagick's MSVG),
// fonts end in a generic family.
#include <cstdio>
#include <string>

#include "export/export_formats.h"

namespace attnscope {

namespace {

// Above this many cells in all panels together, each map is embedded as a PNG image instead of rects.
constexpr long kMaxVectorCells = 40000;

std::string xmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n')
          out += "\uFFFD";  // not allowed in XML
        else
          out += c;
    }
  }
  return out;
}

std::string hex(Rgb8 c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

std::string num(double v, int decimals = 2) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string rect(int x, int y, int w, int h, Rgb8 c) {
  return "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(w) +
         "\" height=\"" + std::to_string(h) + "\" fill=\"" + hex(c) + "\" stroke=\"none\"/>\n";
}

std::string base64(const std::string& bytes) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? table[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? table[v & 63] : '=';
  }
  return out;
}

// A PNG drawn at its own pixel size at `r`.
std::string image(const PixelRect& r, const std::string& png) {
  return "<image x=\"" + std::to_string(r.x) + "\" y=\"" + std::to_string(r.y) + "\" width=\"" + std::to_string(r.w) +
         "\" height=\"" + std::to_string(r.h) +
         "\" image-rendering=\"pixelated\" preserveAspectRatio=\"none\" xlink:href=\"data:image/png;base64," +
         base64(png) + "\"/>\n";
}

}  // namespace

std::string svgBytes(const Figure& figure, const FigureLayout& layout) {
  const std::string w = std::to_string(layout.width), h = std::to_string(layout.height);
  // The size in inches (the layout's CSS pixels / 96, to a millionth: 5e-5 px at most off): a physical unit that
  // every renderer, slide program and LaTeX reads alike, where bare pixels are taken at 72 dpi by some (and
  // ImageMagick's MSVG reads points as pixels). The drawing itself is in the layout's pixels (the viewBox).
  const auto inches = [](int px) { return num(px / 96.0, 6) + "in"; };
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"" +
         inches(layout.width) + "\" height=\"" + inches(layout.height) + "\" viewBox=\"0 0 " + w + " " + h +
         "\" font-family=\"DejaVu Sans\" fill=\"none\" stroke=\"none\">\n";
  // One family in the attribute (MSVG reads no list: a list there drew no text at all); the style sheet, which
  // browsers, librsvg and Inkscape read over the attribute, adds the fallbacks down to a generic family.
  out += "<style>text { font-family: \"DejaVu Sans\", Verdana, Arial, sans-serif; }</style>\n";
  out += "<title>" + xmlEscape(figure.title) + "</title>\n";
  out += rect(0, 0, layout.width, layout.height, Rgb8{255, 255, 255});

  long cells = 0;
  for (const HeatmapPanel& p : figure.panels) cells += static_cast<long>(p.values.size());
  out += "<g shape-rendering=\"crispEdges\">\n";
  for (std::size_t p = 0; p < layout.maps.size(); ++p) {
    const PixelRect& m = layout.maps[p];
    const HeatmapPanel& panel = figure.panels[p];
    const bool whole_cells = m.w >= panel.values.cols() && m.h >= panel.values.rows();
    if (cells <= kMaxVectorCells && whole_cells) {
      const std::vector<float> tops = contrastTops(figure, static_cast<int>(p));
      for (Eigen::Index i = 0; i < panel.values.rows(); ++i) {
        for (Eigen::Index j = 0; j < panel.values.cols(); ++j) {
          const PixelRect r = cellRect(figure, layout, static_cast<int>(p), static_cast<int>(i), static_cast<int>(j));
          const bool masked = panel.masked.size() > 0 && panel.masked(i, j);
          out += rect(r.x, r.y, r.w, r.h,
                      cellColor(figure, panel.values(i, j), masked, tops[static_cast<std::size_t>(i)]));
        }
      }
    } else {
      out += image(m, encodePng(rasterizeMap(figure, static_cast<int>(p), m.w, m.h)));
    }
  }
  for (const FillItem& f : layout.fills) out += rect(f.rect.x, f.rect.y, f.rect.w, f.rect.h, f.color);
  // Colour bar: an embedded PNG of the PNG export's own bar pixels (row y the value at its centre, vmax at the
  // top), at its size, so that no renderer resamples it. ImageMagick's MSVG draws a linearGradient black.
  const PixelRect& bar = layout.colorbar;
  Canvas bar_pixels(bar.w, bar.h, Rgb8{255, 255, 255});
  for (int y = 0; y < bar.h; ++y)
    bar_pixels.fill({0, y, bar.w, 1}, colorAt(figure.map, 1.0f - (y + 0.5f) / static_cast<float>(bar.h)));
  out += image(bar, encodePng(bar_pixels));
  for (const LineItem& l : layout.lines) out += rect(l.x0, l.y0, l.x1 - l.x0 + 1, l.y1 - l.y0 + 1, l.color);
  out += "</g>\n";

  for (const TextItem& t : layout.texts) {
    const char* anchor = t.anchor == TextAnchor::Start ? "start" : t.anchor == TextAnchor::Middle ? "middle" : "end";
    // Upright text at (0, 0) moved into place and turned a quarter anticlockwise, reading from bottom to top:
    // MSVG drops text under rotate(-90 x y), the three-number form, and turns rotate(-90) and matrix(0 -1 1 0 ..)
    // the other way (it reads a matrix transposed). So the quarter turn is written as two reflections, each its
    // own transpose, scale(1 -1) after the swap of x and y: every renderer composes them to the same turn.
    const std::string x = t.vertical ? "0" : num(t.x), y = t.vertical ? "0" : num(t.y);
    out += "<text x=\"" + x + "\" y=\"" + y + "\" font-size=\"" + num(t.size) + "\" text-anchor=\"" + anchor +
           "\" fill=\"" + hex(t.color) + "\" stroke=\"none\"";
    if (t.vertical) out += " transform=\"translate(" + num(t.x) + " " + num(t.y) + ") scale(1 -1) matrix(0 1 1 0 0 0)\"";
    out += " xml:space=\"preserve\">" + xmlEscape(t.text) + "</text>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace attnscope
