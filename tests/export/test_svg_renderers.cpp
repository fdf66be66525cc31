// The SVG export drawn by the renderers authors use (librsvg's rsvg-convert, ImageMagick's own MSVG renderer,
// a headless Chromium) against the PNG the app writes of the same figure: every cell's centre and points down
// the colour bar in the same colours. A renderer missing from this machine skips its check with a message,
// except in CI (CI=true), where scripts/setup-deps.sh installs all three and a missing one fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"
#include "command_support.h"
#include "export/test_export_support.h"

using namespace attnscope;
using namespace attnscope::testing;

namespace {

// Solid fills are the same 8-bit sRGB in every renderer; 2 levels allow a renderer's premultiplied 16-bit
// rounding (seen: 0 in rsvg and ImageMagick, up to 1 in Chromium).
constexpr int kCellTolerance = 2;
// The bar's gradient has stops every 2 of the 256 map entries and is linear between them, while the PNG's rows
// show the entry floor(256 t): at most 2 entries apart, and viridis moves at most 2.68 levels an entry (its
// table's largest step), so 2 x 2.68 + 1 for rounding.
constexpr int kBarTolerance = 6;

bool ciRun() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// The first of `names` on PATH (or an absolute path that exists), else "".
std::string findTool(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const std::string probe = std::string("command -v '") + name + "' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return name;
  }
  return "";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int channelGap(Rgb8 a, Rgb8 b) { return std::max({std::abs(a.r - b.r), std::abs(a.g - b.g), std::abs(a.b - b.b)}); }

std::string text(Rgb8 c) {
  return "(" + std::to_string(c.r) + ", " + std::to_string(c.g) + ", " + std::to_string(c.b) + ")";
}

class SvgRenderers : public ::testing::Test {
 protected:
  void SetUp() override {
    scene_ = handScene();
    result_ = CpuBackend(1).compute(scene_);
    request_.what = ExportWhat::Heads;
    figure_ = makeFigure(scene_, result_, request_);
    layout_ = layoutFigure(figure_);
    request_.format = ExportFormat::Png;
    png_ = decodePng(exportBytes(scene_, result_, request_));
    request_.format = ExportFormat::Svg;
    svg_path_ = dir_.file("figure.svg");
    std::ofstream(svg_path_, std::ios::binary) << exportBytes(scene_, result_, request_);
  }

  // Skips (outside CI) or fails (in CI) when none of `names` is installed; else the tool's name.
  std::string requireTool(std::initializer_list<const char*> names, const std::string& package) {
    const std::string tool = findTool(names);
    if (tool.empty() && ciRun())
      ADD_FAILURE() << *names.begin() << " is missing in CI: scripts/setup-deps.sh installs Debian's " << package;
    return tool;
  }

  // The rendered image against the app's PNG: its size, each cell's centre, points down the colour bar.
  void expectSameFigure(const std::string& rendered_path, const std::string& renderer) {
    const Image img = decodePng(slurp(rendered_path));
    ASSERT_EQ(img.width, png_.width) << renderer;
    ASSERT_EQ(img.height, png_.height) << renderer;
    for (std::size_t p = 0; p < figure_.panels.size(); ++p) {
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          const PixelRect r = cellRect(figure_, layout_, static_cast<int>(p), i, j);
          const int x = r.x + r.w / 2, y = r.y + r.h / 2;
          EXPECT_LE(channelGap(img.at(x, y), png_.at(x, y)), kCellTolerance)
              << renderer << ": head " << p + 1 << " cell (" << i << ", " << j << ") drawn " << text(img.at(x, y))
              << ", the PNG has " << text(png_.at(x, y));
        }
      }
    }
    const PixelRect& bar = layout_.colorbar;
    for (double f : {0.05, 0.25, 0.5, 0.75, 0.95}) {
      const int x = bar.x + bar.w / 2, y = bar.y + static_cast<int>(f * bar.h);
      EXPECT_LE(channelGap(img.at(x, y), png_.at(x, y)), kBarTolerance)
          << renderer << ": colour bar at " << f << " of its height drawn " << text(img.at(x, y)) << ", the PNG has "
          << text(png_.at(x, y));
    }
    // Turned titles (the query axis's, the colour bar's) read from bottom to top as in the PNG: turned a quarter
    // anticlockwise about their anchor, the glyphs stand left of it (their ascent); turned the other way (as MSVG
    // drew rotate(-90)) they stand right of it. Ink (a channel sum under 384) within one em either side.
    for (const TextItem& t : layout_.texts) {
      if (!t.vertical) continue;
      const auto ink = [&](const Image& image, int x0, int x1) {
        const int half = static_cast<int>(t.size * t.text.size() * 0.4);
        int dark = 0;
        for (int y = static_cast<int>(t.y) - half; y <= static_cast<int>(t.y) + half; ++y)
          for (int x = x0; x < x1; ++x)
            if (x >= 0 && y >= 0 && x < image.width && y < image.height) {
              const Rgb8 c = image.at(x, y);
              dark += c.r + c.g + c.b < 384;
            }
        return dark;
      };
      const int x = static_cast<int>(std::lround(t.x)), em = static_cast<int>(std::ceil(t.size));
      EXPECT_GT(ink(png_, x - em, x), ink(png_, x, x + em)) << "the PNG's '" << t.text << "'";
      EXPECT_GT(ink(img, x - em, x), ink(img, x, x + em))
          << renderer << ": '" << t.text << "' turned the other way (ink left of its anchor " << ink(img, x - em, x)
          << ", right " << ink(img, x, x + em) << ")";
    }
    // Between the maps (white paper in the PNG) nothing is outlined or filled black: the middle of the gap between
    // the first two.
    const PixelRect& m0 = layout_.maps[0];
    const int gap_x = layout_.maps.size() > 1 ? (m0.x + m0.w + layout_.maps[1].x) / 2 : m0.x + m0.w + 5;
    EXPECT_LE(channelGap(img.at(gap_x, m0.y + m0.h / 2), Rgb8{255, 255, 255}), kCellTolerance) << renderer;
  }

  TempDir dir_;
  Scene scene_;
  Result result_;
  ExportRequest request_;
  Figure figure_;
  FigureLayout layout_;
  Image png_;
  std::string svg_path_;
};

TEST_F(SvgRenderers, LibrsvgDrawsThePngsColours) {
  const std::string tool = requireTool({"rsvg-convert"}, "librsvg2-bin");
  if (tool.empty()) GTEST_SKIP() << "rsvg-convert not installed (Debian librsvg2-bin): librsvg check skipped";
  const std::string out = dir_.file("rsvg.png");
  ASSERT_EQ(std::system((tool + " -b white -o '" + out + "' '" + svg_path_ + "' 2>/dev/null").c_str()), 0);
  expectSameFigure(out, "librsvg");
}

TEST_F(SvgRenderers, ImageMagickDrawsThePngsColours) {
  // The Debian binary by its own name: a `convert` earlier on PATH may be a wrapper of something else.
  const std::string tool = requireTool({"convert-im6.q16", "/usr/bin/convert"}, "imagemagick");
  if (tool.empty()) GTEST_SKIP() << "ImageMagick not installed (Debian imagemagick): its check skipped";
  // Its own renderer is a coder of its own package (without it ImageMagick hands SVG to rsvg-convert).
  if (std::system(("'" + tool + "' -list format 2>/dev/null | grep -q MSVG").c_str()) != 0) {
    if (ciRun()) FAIL() << "ImageMagick's MSVG coder is missing in CI: setup-deps installs libmagickcore-6.q16-6-extra";
    GTEST_SKIP() << "ImageMagick's MSVG coder not installed (Debian libmagickcore-6.q16-6-extra): its check skipped";
  }
  const std::string out = dir_.file("magick.png");
  // MSVG: ImageMagick's own renderer (the one that drew the old colour bar black), at 96 px an inch as the SVG.
  ASSERT_EQ(std::system((tool + " -density 96 -background white 'msvg:" + svg_path_ +
                         "' -flatten -alpha off 'png24:" + out + "' 2>/dev/null")
                            .c_str()),
            0);
  expectSameFigure(out, "ImageMagick (MSVG)");
}

TEST_F(SvgRenderers, ChromiumDrawsThePngsColours) {
  const std::string tool = requireTool({"chromium", "chromium-browser"}, "chromium");
  if (tool.empty()) GTEST_SKIP() << "chromium not installed (Debian chromium): browser check skipped";
  const std::string page = dir_.file("page.html"), out = dir_.file("chromium.png");
  std::ofstream(page) << "<!DOCTYPE html><html><body style=\"margin:0;background:#fff\"><img src=\"figure.svg\" "
                         "style=\"display:block\"></body></html>\n";
  const std::string size = std::to_string(png_.width) + "," + std::to_string(png_.height);
  ASSERT_EQ(std::system((tool +
                         " --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 "
                         "--force-color-profile=srgb --window-size=" +
                         size + " --screenshot='" + out + "' 'file://" + page + "' >/dev/null 2>&1")
                            .c_str()),
            0);
  expectSameFigure(out, "Chromium");
}

}  // namespace
