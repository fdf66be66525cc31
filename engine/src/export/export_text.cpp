// DejaVu Sans through stb_truetype: measuring strings for the figure layout and drawing them, straight or
// turned 90 degrees, on the PNG's canvas.
#include "export/export_text.h"

#include <stb/stb_truetype.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "attnscope/error.h"
#include "attnscope/settings.h"

namespace attnscope {

namespace {

constexpr const char* kDejaVuSans = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

const stbtt_fontinfo* fontInfo(const std::vector<unsigned char>& storage) {
  return reinterpret_cast<const stbtt_fontinfo*>(storage.data());
}

}  // namespace

std::string exportFontPath() {
  return textSetting("ATTNSCOPE_FONT").value_or(kDejaVuSans);
}

Canvas::Canvas(int w, int h, Rgb8 background) : width(w), height(h), rgb(static_cast<std::size_t>(w) * h * 3) {
  for (std::size_t i = 0; i < rgb.size(); i += 3) {
    rgb[i] = background.r;
    rgb[i + 1] = background.g;
    rgb[i + 2] = background.b;
  }
}

void Canvas::fill(const PixelRect& r, Rgb8 color) {
  const int x0 = std::max(0, r.x), x1 = std::min(width, r.x + r.w);
  const int y0 = std::max(0, r.y), y1 = std::min(height, r.y + r.h);
  for (int y = y0; y < y1; ++y) {
    std::uint8_t* p = &rgb[(static_cast<std::size_t>(y) * width + x0) * 3];
    for (int x = x0; x < x1; ++x, p += 3) {
      p[0] = color.r;
      p[1] = color.g;
      p[2] = color.b;
    }
  }
}

void Canvas::blend(int x, int y, Rgb8 color, int coverage) {
  if (x < 0 || y < 0 || x >= width || y >= height || coverage <= 0) return;
  std::uint8_t* p = &rgb[(static_cast<std::size_t>(y) * width + x) * 3];
  const int a = std::min(coverage, 255);
  auto mix = [a](std::uint8_t under, std::uint8_t over) {
    return static_cast<std::uint8_t>((under * (255 - a) + over * a + 127) / 255);
  };
  p[0] = mix(p[0], color.r);
  p[1] = mix(p[1], color.g);
  p[2] = mix(p[2], color.b);
}

std::vector<char32_t> decodeUtf8(const std::string& text) {
  std::vector<char32_t> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (extra < 0 || i + extra >= text.size()) {  // a bad lead byte, or a sequence cut short
      out.push_back(U'\uFFFD');
      ++i;
      continue;
    }
    char32_t cp = extra == 0 ? c : c & (0x3F >> extra);
    bool ok = true;
    for (int k = 1; k <= extra; ++k) {
      const auto d = static_cast<unsigned char>(text[i + k]);
      if ((d >> 6) != 0x2) ok = false;
      cp = (cp << 6) | (d & 0x3F);
    }
    out.push_back(ok ? cp : U'\uFFFD');
    i += ok ? extra + 1 : 1;
  }
  return out;
}

Font::Font(std::string bytes) : bytes_(std::move(bytes)), info_(sizeof(stbtt_fontinfo)) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes_.data());
  auto* info = reinterpret_cast<stbtt_fontinfo*>(info_.data());
  if (bytes_.size() < 12 || !stbtt_InitFont(info, data, stbtt_GetFontOffsetForIndex(data, 0)))
    throw InputError("font", "a TrueType font at " + exportFontPath(), "a file stb_truetype cannot read");
}

const Font& Font::exportFont() {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Font>> fonts;
  const std::string path = exportFontPath();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = fonts.find(path);
  if (it != fonts.end()) return *it->second;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(
        "font", "DejaVu Sans at " + path + " (Debian package fonts-dejavu-core; scripts/setup-deps.sh installs it)",
        "no readable file there");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  auto font = std::unique_ptr<Font>(new Font(bytes.str()));
  return *fonts.emplace(path, std::move(font)).first->second;
}

double Font::textWidth(const std::string& utf8, float size) const {
  const stbtt_fontinfo* info = fontInfo(info_);
  const double scale = stbtt_ScaleForMappingEmToPixels(info, size);
  const std::vector<char32_t> cps = decodeUtf8(utf8);
  double width = 0;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    int advance = 0, bearing = 0;
    stbtt_GetCodepointHMetrics(info, static_cast<int>(cps[i]), &advance, &bearing);
    width += advance * scale;
    if (i + 1 < cps.size())
      width += stbtt_GetCodepointKernAdvance(info, static_cast<int>(cps[i]), static_cast<int>(cps[i + 1])) * scale;
  }
  return width;
}

double Font::ascent(float size) const {
  int asc = 0, desc = 0, gap = 0;
  stbtt_GetFontVMetrics(fontInfo(info_), &asc, &desc, &gap);
  return asc * stbtt_ScaleForMappingEmToPixels(fontInfo(info_), size);
}

double Font::descent(float size) const {
  int asc = 0, desc = 0, gap = 0;
  stbtt_GetFontVMetrics(fontInfo(info_), &asc, &desc, &gap);
  return -desc * stbtt_ScaleForMappingEmToPixels(fontInfo(info_), size);
}

void Font::draw(Canvas& canvas, const TextItem& item) const {
  const stbtt_fontinfo* info = fontInfo(info_);
  const float scale = stbtt_ScaleForMappingEmToPixels(info, item.size);
  const std::vector<char32_t> cps = decodeUtf8(item.text);
  const double width = textWidth(item.text, item.size);
  // Pen start along the text direction, relative to the anchor.
  double pen = item.anchor == TextAnchor::Start ? 0 : item.anchor == TextAnchor::Middle ? -width / 2 : -width;
  std::vector<unsigned char> glyph;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const int cp = static_cast<int>(cps[i]);
    // The glyph is drawn in text coordinates (u along the baseline, v downwards), then placed on the canvas:
    // straight at (x + u, y + v); vertical, turned anticlockwise, at (x + v, y - u).
    const double u0 = std::floor(pen);
    const float shift = static_cast<float>(pen - u0);
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    stbtt_GetCodepointBitmapBoxSubpixel(info, cp, scale, scale, shift, 0, &x0, &y0, &x1, &y1);
    const int gw = x1 - x0, gh = y1 - y0;
    if (gw > 0 && gh > 0) {
      glyph.assign(static_cast<std::size_t>(gw) * gh, 0);
      stbtt_MakeCodepointBitmapSubpixel(info, glyph.data(), gw, gh, gw, scale, scale, shift, 0, cp);
      const int ax = static_cast<int>(std::lround(item.x)), ay = static_cast<int>(std::lround(item.y));
      for (int gy = 0; gy < gh; ++gy) {
        for (int gx = 0; gx < gw; ++gx) {
          const int coverage = glyph[static_cast<std::size_t>(gy) * gw + gx];
          if (coverage == 0) continue;
          const int u = static_cast<int>(u0) + x0 + gx, v = y0 + gy;
          if (item.vertical)
            canvas.blend(ax + v, ay - u, item.color, coverage);
          else
            canvas.blend(ax + u, ay + v, item.color, coverage);
        }
      }
    }
    int advance = 0, bearing = 0;
    stbtt_GetCodepointHMetrics(info, cp, &advance, &bearing);
    pen += advance * scale;
    if (i + 1 < cps.size()) pen += stbtt_GetCodepointKernAdvance(info, cp, static_cast<int>(cps[i + 1])) * scale;
  }
}

std::string visibleText(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (c == '\n')
      s += "\\n";
    else if (c == '\t')
      s += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20)
      s += "\uFFFD";
    else
      s += c;
  }
  return s;
}

}  // namespace attnscope
