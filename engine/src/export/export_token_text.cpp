// A token text figure: chips of colour in reading order, wrapped at the page's width, with a colour bar; and its
// numbers as CSV and NPY.
#include "attnscope/export/token_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "attnscope/error.h"
#include "attnscope/text_bounds.h"
#include "export/export_formats.h"

namespace attnscope {

namespace {

constexpr double kDefaultWidthIn = 8;  // the page's width when none is given
constexpr float kTextSize = 14, kTokenTitleSize = 16, kTokenTickSize = 13, kTokenAxisSize = 14;
constexpr int kTokenMargin = 16, kPad = 3, kGap = 3, kLineGap = 5, kBarWidth = 14, kBarGap = 24, kMinBarHeight = 120;
constexpr Rgb8 kInk{38, 38, 38}, kLightInk{255, 255, 255}, kBarFrame{80, 80, 80}, kPicked{220, 40, 40};
constexpr std::size_t kMaxTokenChars = 40;  // a chip shows at most this much of a token (the CSV holds it whole)

void checkLengths(const TokenText& t) {
  const std::string n = std::to_string(t.tokens.size()) + " (one per token)";
  if (t.values.size() != t.tokens.size()) throw InputError("values", n, std::to_string(t.values.size()));
  if (!t.masked.empty() && t.masked.size() != t.tokens.size())
    throw InputError("masked", n, std::to_string(t.masked.size()));
}

bool isMasked(const TokenText& t, std::size_t k) { return !t.masked.empty() && t.masked[k] != 0; }

float topOf(const TokenText& t) {
  float top = 0;
  for (std::size_t k = 0; k < t.values.size(); ++k)
    if (!isMasked(t, k) && std::isfinite(t.values[k])) top = std::max(top, t.values[k]);
  return top > 0 ? top : 1.0f;
}

}  // namespace

Figure tokenTextFigure(const TokenText& t) {
  checkLengths(t);
  Figure f;
  f.title = t.title;
  f.scale_label = t.scale_label;
  f.map = ColorMap::Viridis;
  f.vmin = 0;
  f.vmax = topOf(t);
  f.ticks = {0.0f, f.vmax / 2, f.vmax};
  f.tick_decimals = f.vmax >= 10 ? 1 : 3;
  f.dpi = t.dpi;
  f.size = t.size;
  return f;
}

FigureLayout tokenTextLayout(const TokenText& t) {
  checkLengths(t);
  const Font& font = Font::exportFont();
  const double scale = t.size.font_pt > 0 ? t.size.font_pt * 96.0 / 72.0 / kTokenTickSize : 1.0;
  const auto px = [scale](double v) { return static_cast<int>(std::lround(v * scale)); };
  const float text_size = static_cast<float>(kTextSize * scale), title_size = static_cast<float>(kTokenTitleSize * scale);
  const float tick_size = static_cast<float>(kTokenTickSize * scale), axis_size = static_cast<float>(kTokenAxisSize * scale);
  const Figure fig = tokenTextFigure(t);
  FigureLayout L;
  const int page_w = static_cast<int>(std::lround((t.size.width_in > 0 ? t.size.width_in : kDefaultWidthIn) * kLayoutDpi));
  const int margin = px(kTokenMargin);
  // The colour bar's column: the bar, its ticks' labels and its upright label.
  double tick_w = 0;
  std::vector<std::string> tick_texts;
  for (const float v : fig.ticks) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", fig.tick_decimals, static_cast<double>(v));
    tick_texts.emplace_back(buf);
    tick_w = std::max(tick_w, font.textWidth(buf, tick_size));
  }
  const int bar_w = px(kBarWidth);
  const int bar_column = px(kBarGap) + bar_w + 7 + static_cast<int>(std::ceil(tick_w)) + 10 +
                         static_cast<int>(std::ceil(font.ascent(axis_size) + font.descent(axis_size)));
  const int text_x0 = margin, text_x1 = page_w - margin - bar_column;
  if (text_x1 - text_x0 < px(120))
    throw InputError("--width", "room for the text beside the colour bar (a wider page or a smaller font)",
                     std::to_string(t.size.width_in) + " in");
  const int title_h = static_cast<int>(std::ceil(font.ascent(title_size) + font.descent(title_size)));
  const double title_w = font.textWidth(t.title, title_size);
  L.texts.push_back({t.title, title_size, std::max(page_w / 2.0, margin + title_w / 2), margin + font.ascent(title_size),
                     TextAnchor::Middle, false, kInk});
  const int top = margin + title_h + px(12);
  const int pad = px(kPad), gap = px(kGap);
  const int chip_h = static_cast<int>(std::ceil(font.ascent(text_size) + font.descent(text_size))) + pad;
  const int line_h = chip_h + px(kLineGap);
  int x = text_x0, y = top;
  for (std::size_t k = 0; k < t.tokens.size(); ++k) {
    const std::string text = visibleText(elideLabel(t.tokens[k], kMaxTokenChars));
    const int w = static_cast<int>(std::ceil(font.textWidth(text, text_size))) + 2 * pad;
    if (x > text_x0 && x + w > text_x1) x = text_x0, y += line_h;
    const int chip_w = std::min(w, text_x1 - text_x0);
    const bool masked = isMasked(t, k);
    const Rgb8 color = masked ? kMaskedColor : cellColor(fig, t.values[k], false);
    L.fills.push_back({{x, y, chip_w, chip_h}, color});
    L.texts.push_back({text, text_size, static_cast<double>(x + pad),
                       y + (chip_h + font.ascent(text_size) - font.descent(text_size)) / 2.0, TextAnchor::Start, false,
                       relativeLuminance(color) > 0.408 ? kInk : kLightInk});
    if (static_cast<int>(k) == t.picked) {  // a 2-pixel red frame just outside the chip
      const int x0 = x - 2, y0 = y - 2, x1 = x + chip_w + 1, y1 = y + chip_h + 1;
      for (int d = 0; d < 2; ++d) {
        L.lines.push_back({x0 + d, y0 + d, x1 - d, y0 + d, kPicked});
        L.lines.push_back({x0 + d, y1 - d, x1 - d, y1 - d, kPicked});
        L.lines.push_back({x0 + d, y0 + d, x0 + d, y1 - d, kPicked});
        L.lines.push_back({x1 - d, y0 + d, x1 - d, y1 - d, kPicked});
      }
    }
    x += chip_w + gap;
  }
  const int text_bottom = y + chip_h;
  // The colour bar: beside the text, as tall as it, at least kMinBarHeight and its upright label's length.
  const int label_len = static_cast<int>(std::ceil(font.textWidth(t.scale_label, axis_size)));
  const int bar_h = std::max({text_bottom - top, px(kMinBarHeight), label_len + px(8)});
  L.colorbar = {text_x1 + px(kBarGap), top, bar_w, bar_h};
  const PixelRect& bar = L.colorbar;
  for (std::size_t k = 0; k < fig.ticks.size(); ++k) {
    const int ty = bar.y + static_cast<int>(std::lround((1.0 - colorBarParameter(fig, fig.ticks[k])) * (bar.h - 1)));
    L.lines.push_back({bar.x + bar.w, ty, bar.x + bar.w + 3, ty, kBarFrame});
    L.texts.push_back({tick_texts[k], tick_size, bar.x + bar.w + 7.0, ty + 0.3645 * tick_size, TextAnchor::Start, false,
                       kInk});
  }
  L.lines.push_back({bar.x - 1, bar.y - 1, bar.x + bar.w, bar.y - 1, kBarFrame});
  L.lines.push_back({bar.x - 1, bar.y + bar.h, bar.x + bar.w, bar.y + bar.h, kBarFrame});
  L.lines.push_back({bar.x - 1, bar.y - 1, bar.x - 1, bar.y + bar.h, kBarFrame});
  L.lines.push_back({bar.x + bar.w, bar.y - 1, bar.x + bar.w, bar.y + bar.h, kBarFrame});
  L.texts.push_back({t.scale_label, axis_size, bar.x + bar.w + 7 + std::ceil(tick_w) + 10 + font.ascent(axis_size),
                     bar.y + bar.h / 2.0, TextAnchor::Middle, true, kInk});
  L.width = std::max(page_w, static_cast<int>(std::ceil(margin + title_w)) + margin);
  L.height = std::max(text_bottom, bar.y + bar.h) + margin;
  if (L.height > kMaxImageSide)
    throw InputError("figure",
                     "a token text at most " + std::to_string(kMaxImageSide) +
                         " px tall (fewer tokens, a wider page or a smaller font; CSV and NPY hold any length)",
                     std::to_string(t.tokens.size()) + " tokens, " + std::to_string(L.height) + " px");
  return L;
}

std::string tokenTextBytes(const TokenText& t, ExportFormat format) {
  checkLengths(t);
  const auto value = [&](std::size_t k) { return isMasked(t, k) ? 0.0f : t.values[k]; };
  switch (format) {
    case ExportFormat::Csv: {
      std::string csv = "position,token," + csvField(t.value_name) + ",masked\n";
      for (std::size_t k = 0; k < t.tokens.size(); ++k) {
        char buf[32];
        csv += std::to_string(k) + "," + csvField(t.tokens[k]) + ",";
        csv.append(buf, std::to_chars(buf, buf + sizeof buf, value(k)).ptr);
        csv += isMasked(t, k) ? ",1\n" : ",0\n";
      }
      return csv;
    }
    case ExportFormat::Npy: {
      std::string bytes = npyHeader({static_cast<long>(t.tokens.size())});
      for (std::size_t k = 0; k < t.tokens.size(); ++k) {
        const float v = value(k);
        bytes.append(reinterpret_cast<const char*>(&v), sizeof v);  // little-endian on x86-64, as '<f4' says
      }
      return bytes;
    }
    case ExportFormat::Png:
    case ExportFormat::Svg: {
      const Figure fig = tokenTextFigure(t);
      FigureLayout layout = tokenTextLayout(t);
      if (format == ExportFormat::Svg) return svgBytes(fig, layout);
      return pngBytes(fig, scaledToDpi(fig, std::move(layout)));
    }
  }
  throw InputError("format", "png, svg, csv or npy", std::to_string(static_cast<int>(format)));
}

}  // namespace attnscope
