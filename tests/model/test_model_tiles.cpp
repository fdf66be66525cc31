// Forwards past the maps limit (ForwardOptions::maps = Drop, as Auto does past ATTNSCOPE_MAPS_LIMIT): attention
// flash-style, no (n, n) map written, each layer keeping Q, K (once per kv head) and the row statistics. Every map,
// tile, rollout and grid figure read through ForwardResult against the kept-maps forward of the same weights and
// against the NumPy float64 references (gpt2_reference.py, llama_reference.py); the memory estimate linear in n.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attnscope/model/family_configs.h"
#include "attnscope/model/model.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/model/model_export.h"
#include "compare.h"
#include "export/test_export_support.h"
#include "model/test_model_support.h"

using attnscope::Matrix;
using nlohmann::json;
namespace model = attnscope::model;

namespace {

// Tiled vs kept, both float32: the first layer's maps differ only by the recompute (scores by another GEMM
// blocking, l summed over key blocks), later layers' also by a residual stream whose attention output was summed
// in another order. Seen 7.0e-6 (GPT-2's sharp maps, logits of tens) and 2.1e-6 (Mistral). Against float64
// NumPy, as the kept forward's own tests: seen 1.2e-5 and 2.6e-6; hidden 1.5e-5 and 3.0e-6; rollout 7.1e-7 and
// 8.1e-8.
constexpr double kSameTol = 2e-5, kWeightTol = 5e-5, kHiddenTol = 5e-5, kRolloutTol = 5e-6;

using attnscope::test::worse;

std::vector<int> idsOf(const json& expected) { return expected["ids"].get<std::vector<int>>(); }

// Both forwards' maps against each other and NumPy's, their hidden states and rollouts, within the tolerances.
void compareForwards(const char* what, const model::ForwardResult& kept, const model::ForwardResult& tiled,
                     const json& expected) {
  EXPECT_TRUE(kept.keepsMaps());
  EXPECT_FALSE(tiled.keepsMaps());
  EXPECT_EQ(tiled.buffer.size(), 0u);  // no (n, n) floats at all
  const model::HeadLayout& c = kept.layout;
  struct {
    double same = 0, numpy = 0, hidden = 0, rollout = 0;
  } e;
  for (int l = 0; l < c.n_layer; ++l)
    for (int h = 0; h < c.n_head; ++h) {
      const Matrix got = tiled.map(l, h);
      e.same = worse(e.same, attnscope::test::maxError(got, kept.map(l, h), {}, "tiled vs kept"));
      e.numpy = worse(e.numpy, attnscope::test::maxError(got, attnscope::test::jsonMatrix(expected["weights"][l][h]),
                                                          {}, "tiled vs NumPy"));
      int nonzero_masked = 0;  // masked cells exactly 0, as the kept maps' (causal, the window)
      for (int i = 0; i < tiled.n; ++i)
        for (int j = 0; j < tiled.n; ++j) nonzero_masked += !c.keyAllowed(l, i, j) && got(i, j) != 0.0f;
      EXPECT_EQ(nonzero_masked, 0) << "layer " << l << " head " << h;
      // Single weights (the window's hover) through the same accessor: every key of the last query row, inside
      // and outside a sliding window.
      for (int j = 0; j < tiled.n; ++j)
        EXPECT_NEAR(tiled.weight(l, h, tiled.n - 1, j), kept.weight(l, h, tiled.n - 1, j), kSameTol) << "key " << j;
      // A max-pooled tile (what the window's grid draws).
      const attnscope::TileRequest pooled{.head = h, .pooling = attnscope::Pooling::Max, .out_rows = 7, .out_cols = 5};
      const attnscope::Tile a = tiled.tile(l, pooled), b = kept.tile(l, pooled);
      e.same = worse(e.same, attnscope::test::maxError(a.values, b.values, {}, "pooled tile"));
      EXPECT_TRUE(a.masked == b.masked);
    }
  e.hidden = worse(attnscope::test::maxError(tiled.hidden, kept.hidden, {}, "hidden tiled vs kept"),
                   attnscope::test::maxError(tiled.hidden, attnscope::test::jsonMatrix(expected["hidden"]), {}, "hidden"));
  e.rollout = attnscope::test::maxError(model::attentionRollout(tiled, c),
                                        attnscope::test::jsonMatrix(expected["rollout"]), {}, "rollout");
  std::printf("%s tiled: vs kept %.2g, vs NumPy %.2g, hidden %.2g, rollout %.2g\n", what, e.same, e.numpy, e.hidden,
              e.rollout);
  EXPECT_LE(e.same, kSameTol);
  EXPECT_LE(e.numpy, kWeightTol);
  EXPECT_LE(e.hidden, kHiddenTol);
  EXPECT_LE(e.rollout, kRolloutTol);
}

std::vector<std::string> labels(const model::Model& m, const std::vector<int>& ids) {
  std::vector<std::string> tokens;
  for (int id : ids) tokens.push_back(m.tokenizer.label(id));
  return tokens;
}

// The viridis entry `c` is, or -1 (text, frames, the masked grey: not a colour-map colour).
int viridisIndex(attnscope::Rgb8 c) {
  const auto& table = attnscope::colorMapTable(attnscope::ColorMap::Viridis);
  for (int i = 0; i < attnscope::kColorMapSize; ++i)
    if (table[static_cast<std::size_t>(i)] == c) return i;
  return -1;
}

// The grid figure of both forwards: the same layout and size, the same pixel everywhere but inside the maps, and
// there at most one colour-map step apart. Why no count of differing pixels: a pixel's colour is entry
// floor(256 v) of a value v (a weight, or the mean of the weights a pooled pixel covers) that differs between the
// forwards by at most kSameTol (compareForwards asserts it), and 256 kSameTol < 1, so the entries are equal or
// neighbours. Which weights straddle a boundary depends on the rounding of the CPU at hand (FMA, AVX-512, the
// BLAS's thread split): on one machine none in GPT-2's grid, on another 18 channel values; any count would hold
// on one machine only.
void expectSameGrid(const model::ForwardResult& kept, const model::ForwardResult& tiled,
                    const std::vector<std::string>& tokens, int layer) {
  static_assert(kSameTol * attnscope::kColorMapSize < 1.0);
  const attnscope::Figure figure = model::modelGridFigure(kept, kept.layout, tokens, layer);
  const attnscope::FigureLayout layout = attnscope::layoutFigure(figure);
  const auto png = [&](const model::ForwardResult& f) {
    return attnscope::testing::decodePng(model::figureBytes(model::modelGridFigure(f, f.layout, tokens, layer),
                                                            attnscope::ExportFormat::Png));
  };
  const attnscope::testing::Image a = png(kept), b = png(tiled);
  ASSERT_EQ(a.width, layout.width);
  ASSERT_EQ(a.height, layout.height);
  ASSERT_EQ(b.width, a.width);
  ASSERT_EQ(b.height, a.height);
  const auto inMap = [&](int x, int y) {
    return std::any_of(layout.maps.begin(), layout.maps.end(), [&](const attnscope::PixelRect& r) {
      return x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h;
    });
  };
  int differ = 0, wrong = 0;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width; ++x) {
      const attnscope::Rgb8 ca = a.at(x, y), cb = b.at(x, y);
      if (ca == cb) continue;
      ++differ;
      const int ia = viridisIndex(ca), ib = viridisIndex(cb);
      const bool ok = inMap(x, y) && ia >= 0 && ib >= 0 && std::abs(ia - ib) == 1;
      if (!ok && ++wrong <= 3)
        ADD_FAILURE() << "pixel (" << x << ", " << y << "): entries " << ia << " and " << ib
                      << (inMap(x, y) ? "" : ", outside every map");
    }
  std::printf("grid %dx%d: %d pixels one colour-map step apart\n", a.width, a.height, differ - wrong);
  EXPECT_EQ(wrong, 0);
}

// A checkpoint's forward twice over expected.json's ids, its maps kept and past the limit (dropped: tiles).
struct TwoForwards {
  json expected;
  model::Model m;
  std::vector<int> ids;
  model::ForwardResult kept, tiled;
};
TwoForwards twoForwards(const std::string& dir) {
  TwoForwards f{json::parse(model_test::slurp(dir + "/expected.json")), model::loadModel(dir), {}, {}, {}};
  f.ids = idsOf(f.expected);
  f.kept = model::modelForward(f.m, f.ids, {.maps = attnscope::MapPolicy::Keep});
  f.tiled = model::modelForward(f.m, f.ids, {.maps = attnscope::MapPolicy::Drop});
  return f;
}

}  // namespace

TEST(ModelTiles, Gpt2PastTheLimitMatchesKeptMapsAndNumPy) {
  // 200 tokens: two blocks of query rows, one key block (256); 2 layers x 4 heads, d 32.
  const TwoForwards f = twoForwards(model_test::tinyCheckpoint("--tokens 200 --positions 256 --layers 2 --seed 3"));
  const auto& [expected, m, ids, kept, tiled] = f;
  ASSERT_EQ(tiled.stats.size(), 2u);
  for (const attnscope::HeadResult& hr : tiled.stats[0].heads) {  // O(n d) per head: Q, K (n, 8), m and l (n)
    EXPECT_EQ(hr.q.rows(), 200);
    EXPECT_EQ(hr.q.cols(), 8);
    EXPECT_EQ(hr.k().rows(), 200);
    EXPECT_EQ(hr.row_sum.size(), 200);
  }
  compareForwards("GPT-2", kept, tiled, expected);
  expectSameGrid(kept, tiled, labels(m, ids), -1);  // cells of 3 px: every map whole
}

TEST(ModelTiles, MistralWindowPastTheLimitMatchesKeptMapsAndNumPy) {
  // Mistral, 16 query heads on 4 kv heads, a sliding window of 70 over 301 tokens: 3 blocks of query rows, 2 key
  // blocks, key blocks before a row block's window skipped; 16 heads a grid row make 160 px panels, so the grid
  // figure pools (301 cells into 160 px) from tiles.
  std::string text;
  while (text.size() < 300) text += "Windows and blocks: a query sees only its last seventy keys. ";
  text.resize(300);
  const TwoForwards f = twoForwards(model_test::referenceCheckpoint(
      "llama_reference.py",
      "--family mistral --heads 16 --kv-heads 4 --head-dim 8 --layers 2 --window 70 --positions 512 --text '" + text +
          "'"));
  const auto& [expected, m, ids, kept, tiled] = f;
  ASSERT_EQ(ids.size(), 301u);
  ASSERT_EQ(tiled.stats.size(), 2u);
  const auto& heads = tiled.stats[1].heads;
  for (int h = 0; h < 16; ++h)  // K held once per kv head: query heads 4g .. 4g + 3 share head 4g's
    EXPECT_TRUE(heads[static_cast<std::size_t>(h)].sharesKeyValuesWith(heads[static_cast<std::size_t>(h / 4 * 4)]));
  EXPECT_FALSE(heads[0].sharesKeyValuesWith(heads[4]));
  compareForwards("Mistral", kept, tiled, expected);
  expectSameGrid(kept, tiled, labels(m, ids), -1);
  expectSameGrid(kept, tiled, labels(m, ids), 1);
  // The streamed JSON of layer 2: each map made as the text reaches it (JsonMatrices::addMade), the kept ones'.
  attnscope::JsonMatrices streamed;
  const json written = json::parse(
      attnscope::formatJson(model::modelResultJson(m, text, ids, tiled, Matrix(), 1, &streamed), &streamed));
  ASSERT_EQ(written["layers"].size(), 1u);
  double worst = 0;
  for (int h = 0; h < 16; ++h)
    worst = worse(worst, attnscope::test::maxError(attnscope::test::jsonMatrix(written["layers"][0]["heads"][h]),
                                                   kept.map(1, h), {}, "streamed JSON"));
  EXPECT_LE(worst, kSameTol);
}

TEST(ModelTiles, Gemma2SoftCapPastTheLimitMatchesKeptMapsAndNumPy) {
  // Gemma 2 with its scores soft-capped at 1 (the cap bites: the tiny model's scores reach several units), 151
  // tokens (two blocks of query rows), a sliding window of 40 on even layers: the forward past the maps limit keeps
  // the statistics of the capped scores (attendHeadStats), and the tiles cap what they recompute (score_cap).
  const TwoForwards f = twoForwards(model_test::referenceCheckpoint(
      "gemma_reference.py", "--family gemma2 --softcap 1 --window 40 --text '" + model_test::kLong + "'"));
  const auto& [expected, m, ids, kept, tiled] = f;
  ASSERT_EQ(tiled.stats.size(), 2u);
  EXPECT_EQ(tiled.stats[0].score_cap, 1.0f);
  compareForwards("Gemma 2", kept, tiled, expected);
  expectSameGrid(kept, tiled, labels(m, ids), -1);
}

TEST(ModelTiles, ForwardMemoryPastTheLimitIsLinearInTokens) {
  // A Qwen3-0.6B-shaped config: 28 layers, 16 query heads on 8 kv heads, head_dim 128, hidden 1024, inter 3072.
  model::LlamaConfig c;
  c.n_layer = 28, c.n_head = 16, c.n_kv_head = 8, c.head_dim = 128, c.hidden = 1024, c.intermediate = 3072;
  c.window.assign(28, 0);
  // Worked out by hand at n = 8192: kept = 4 (per layer n (q_dim 2048 + kv_dim 1024 + 2 x 16 heads) + n (3 hidden
  // + 2 q_dim + 2 kv_dim + 3 inter)) = 4 x 8192 x (28 x 3104 + 18432) = 3,451,912,192 bytes; the maps alone would
  // be 28 x 16 x 8192^2 x 4 = 120 GiB.
  const model::Architecture a = model::describeLlama(c);
  const std::size_t at8192 = model::forwardBytes(a, 8192, false, attnscope::MapPolicy::Auto);
  EXPECT_EQ(at8192, std::size_t{3451912192});
  EXPECT_EQ(model::forwardBytes(a, 8192, false, attnscope::MapPolicy::Drop), at8192);
  EXPECT_EQ(model::forwardBytes(a, 4096, false, attnscope::MapPolicy::Auto) * 2, at8192);  // linear in n: no n^2 term
  EXPECT_GT(model::forwardBytes(a, 8192, false, attnscope::MapPolicy::Keep), std::size_t{28} * 16 * 8192 * 8192 * 4);
  // Small enough, the maps are kept (256 MiB default limit: 28 x 16 x 64^2 x 4 = 7 MiB).
  EXPECT_TRUE(model::forwardKeepsMaps(28, 16, 64, attnscope::MapPolicy::Auto));
  EXPECT_FALSE(model::forwardKeepsMaps(28, 16, 1024, attnscope::MapPolicy::Auto));  // 1.75 GiB

  // GPT-2 small (12 layers, 12 heads, d 768) at 1024 tokens: kept Q, K (n, d) per layer and m, l per head,
  // 4 x 1024 x (12 x (2 x 768 + 2 x 12) + 11 x 768 activations) = 111,280,128 bytes, against 576 MiB of maps.
  model::Gpt2Config g;
  g.n_layer = 12, g.n_head = 12, g.n_embd = 768;
  EXPECT_EQ(model::forwardBytes(model::describeGpt2(g), 1024, false, attnscope::MapPolicy::Auto), std::size_t{111280128});
}
