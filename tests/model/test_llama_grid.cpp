// The model grid figure (--grid-out) of a checkpoint with a sliding window: cells the window hides (key j <= i - W)
// are drawn masked, as the causal cells above the diagonal are, not as weight 0.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attnscope/export/colormap.h"
#include "attnscope/model/model_export.h"
#include "compare.h"
#include "export/test_export_support.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace model = attnscope::model;

TEST(LlamaGrid, SlidingWindowCellsAreDrawnMasked) {
  // Mistral, a window of 3 on every layer, 2 layers x 4 heads; BOS + 11 byte tokens.
  const std::string text = "windows win";
  const std::string dir = model_test::tempDir() + "/ckpt";
  const model_test::CommandRun made = model_test::run(std::string(model_test::kPython) + " '" + ATTNSCOPE_SOURCE_DIR +
                                                      "/tests/model/llama_reference.py' '" + dir +
                                                      "' --family mistral --window 3 --text '" + text + "'");
  ASSERT_EQ(made.status, 0) << made.err;
  const std::string out = model_test::tempDir();
  const model_test::CommandRun r = model_test::run(std::string("'") + ATTNSCOPE_BINARY + "' model '" + dir +
                                                   "' --text '" + text + "' --out '" + out + "/r.json' --grid-out '" +
                                                   out + "/grid.png'");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(model_test::slurp(out + "/r.json"));
  const int layers = 2, heads = 4, n = static_cast<int>(j["tokens"].size());
  ASSERT_EQ(n, 12);

  // The figure rebuilt from the written maps with the window in the layout, for the exporter's cell positions.
  model::ForwardResult maps;
  maps.resize(n, layers * heads);
  for (int m = 0; m < layers * heads; ++m)
    maps.mutableMap(m) = attnscope::test::jsonMatrix(j["layers"][m / heads]["heads"][m % heads]).cast<float>();
  model::HeadLayout layout(layers, heads, 2);
  layout.window = {3, 3};
  std::vector<std::string> tokens;
  for (const json& t : j["tokens"]) tokens.push_back(t.get<std::string>());
  // As the command line draws it: titled after config.json's model_type, at the default dpi.
  attnscope::Figure figure = model::modelGridFigure(maps, layout, tokens, -1, {}, "mistral");
  figure.dpi = attnscope::kDefaultDpi;
  const attnscope::FigureLayout placed = attnscope::pngLayout(figure);
  const attnscope::testing::Image img = attnscope::testing::decodePng(model_test::slurp(out + "/grid.png"));
  ASSERT_EQ(img.width, placed.width);
  ASSERT_EQ(img.height, placed.height);
  int wrong = 0, window_cells = 0;
  for (int m = 0; m < layers * heads; ++m)
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) {
        const attnscope::PixelRect cell = attnscope::cellRect(figure, placed, m, i, k);
        const attnscope::Rgb8 got = img.at(cell.x + cell.w / 2, cell.y + cell.h / 2);
        const bool hidden = k > i || k <= i - 3;  // causal, or outside the window of 3 (worked out by hand)
        window_cells += k <= i - 3;
        const float w = maps.keptMap(m)(i, k);
        if (hidden) {
          EXPECT_EQ(w, 0.0f);  // the forward's weight there is 0; drawn masked, not as 0
        }
        const bool ok = hidden ? got == attnscope::kMaskedColor
                               : (got == attnscope::colorAt(attnscope::ColorMap::Viridis, w - 1e-5f) ||
                                  got == attnscope::colorAt(attnscope::ColorMap::Viridis, w + 1e-5f));
        wrong += !ok;
      }
  EXPECT_EQ(window_cells, layers * heads * 45);  // rows 3..11 hide 1..9 keys each: 45 per map
  EXPECT_EQ(wrong, 0) << "grid cells neither masked where the window hides them nor in their weight's colour";
}
