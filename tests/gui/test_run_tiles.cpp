// A run's maps on the window's tile worker (RunTiles, app/window/maps/map_sources.h), computed off the UI thread:
// each block of a grid tile the largest weight of its cells, taken here straight from the kept maps of the same
// forward (an independent max over 4 x 4 cells), for a forward that kept its maps and one that kept none
// (recomputed from Q and K); a source replaced while it runs hands back nothing more, the newest one finishing.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/model/model.h"
#include "random_model.h"
#include "window/maps/map_sources.h"
#include "window/maps/tile_worker.h"

namespace attnscope::app {
namespace {

constexpr int kLayers = 3, kHeads = 4, kTokens = 64, kBlocks = 16;  // blocks of 4 x 4 cells

struct Forwards {
  std::shared_ptr<const model::ForwardResult> kept, dropped;
};

Forwards runForwards() {
  std::mt19937 rng(7);
  const model::Model m = test::randomGpt2({.layers = kLayers, .heads = kHeads, .d = 32, .vocab = 50, .positions = 80}, rng);
  std::vector<int> ids;
  for (int i = 0; i < kTokens; ++i) ids.push_back(static_cast<int>(rng() % 50));
  model::ForwardOptions keep, drop;
  keep.maps = MapPolicy::Keep;
  drop.maps = MapPolicy::Drop;
  return {std::make_shared<const model::ForwardResult>(model::modelForward(m, ids, keep)),
          std::make_shared<const model::ForwardResult>(model::modelForward(m, ids, drop))};
}

// Every map's overview of `forward` (kLayers x kHeads maps at kBlocks a side), once the worker has them all.
std::vector<Tile> gridOf(TileWorker& worker, const std::shared_ptr<const model::ForwardResult>& forward,
                         unsigned revision) {
  worker.start(std::make_shared<RunTiles>(forward, 0, kLayers * kHeads, kBlocks, MapWeighting{}), revision);
  EXPECT_TRUE(worker.waitOverviews(revision));
  std::vector<Tile> maps(kLayers * kHeads);
  for (TileWorker::Landed& l : worker.take()) {
    EXPECT_EQ(l.revision, revision);
    if (l.overview) maps.at(static_cast<std::size_t>(l.map)) = std::move(l.tile);
  }
  return maps;
}

// Every block against the max of its 4 x 4 cells in `maps` (causal: blocks above the diagonal masked). Returns the
// largest difference.
double worstBlock(const std::vector<Tile>& grid, const model::ForwardResult& maps) {
  const int cells = kTokens / kBlocks;
  double worst = 0;
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kHeads; ++h) {
      const Matrix m = maps.map(l, h);
      const Tile& t = grid.at(static_cast<std::size_t>(l * kHeads + h));
      EXPECT_EQ(t.values.rows(), kBlocks);
      if (t.values.rows() != kBlocks) return 1e30;
      for (int p = 0; p < kBlocks; ++p)
        for (int q = 0; q < kBlocks; ++q) {
          float want = 0;
          for (int i = p * cells; i < (p + 1) * cells; ++i)
            for (int j = q * cells; j < (q + 1) * cells && j <= i; ++j) want = std::max(want, m(i, j));
          EXPECT_EQ(t.masked(p, q) != 0, q > p) << "layer " << l << " head " << h << " block " << p << "," << q;
          if (q <= p) worst = std::max(worst, static_cast<double>(std::abs(t.values(p, q) - want)));
        }
    }
  return worst;
}

// Error seen: 0 for kept maps (the same floats), under 1e-7 recomputed (exp(s - m) / l in another order).
TEST(RunTiles, KeptAndRecomputedMapsPoolToTheMaxOfEachBlock) {
  const Forwards f = runForwards();
  TileWorker worker;
  EXPECT_LE(worstBlock(gridOf(worker, f.kept, 1), *f.kept), 1e-5);
  EXPECT_LE(worstBlock(gridOf(worker, f.dropped, 2), *f.kept), 1e-5);
}

// A newer source replaces the one running: the older revision's wait gives up and only the newer's tiles land.
TEST(RunTiles, TheWorkerFinishesTheNewestSourceAndDropsTheOneItReplaced) {
  const Forwards f = runForwards();
  TileWorker worker;
  worker.start(std::make_shared<RunTiles>(f.dropped, 0, kLayers * kHeads, kBlocks, MapWeighting{}), 1);
  const std::vector<Tile> grid = gridOf(worker, f.kept, 2);
  EXPECT_FALSE(worker.waitOverviews(1));
  EXPECT_LE(worstBlock(grid, *f.kept), 1e-5);
}

// The full-size map is one map of the run (first = its index): its overview at n a side is the map itself, and a
// view tile the cells asked for.
TEST(RunTiles, OneMapFullSizeIsTheMapItself) {
  const Forwards f = runForwards();
  const int index = 1 * kHeads + 2;  // layer 2, head 3
  TileWorker worker;
  worker.start(std::make_shared<RunTiles>(f.dropped, index, 1, kTokens, MapWeighting{}), 5);
  ASSERT_TRUE(worker.waitOverviews(5));
  std::vector<TileWorker::Landed> landed = worker.take();
  ASSERT_EQ(landed.size(), 1u);
  const Matrix want = f.kept->map(1, 2);
  EXPECT_EQ(landed[0].map, 0);
  EXPECT_LE((landed[0].tile.values - want).cwiseAbs().maxCoeff(), 1e-5f);
  worker.requestView(0, 10, 14, 3, 9, 4, 6);
  landed.clear();
  for (int tries = 0; tries < 500 && landed.empty(); ++tries) {
    landed = worker.take();
    if (landed.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(landed.size(), 1u);
  EXPECT_FALSE(landed[0].overview);
  EXPECT_LE((landed[0].tile.values - want.block(10, 3, 4, 6)).cwiseAbs().maxCoeff(), 1e-5f);
}

// A layer that cannot be read when shown (a capture's file changed since it was opened): its maps are masked grey
// and the worker says which layer and head and why, once, while the other layers' maps are drawn.
TEST(RunTiles, AMapThatCannotBeReadIsMaskedAndSaid) {
  const Forwards f = runForwards();
  auto broken = std::make_shared<model::ForwardResult>();
  broken->n = f.dropped->n, broken->maps = f.dropped->maps, broken->layout = f.dropped->layout;
  const std::shared_ptr<const model::ForwardResult> source = f.dropped;
  broken->reader = std::make_shared<const model::LayerReader>(
      [source](int l) {
        if (l == 1) throw InputError("layer 2: q", "(4, 64, 8) float32", "a file of 12 bytes");
        return source->stats.at(static_cast<std::size_t>(l));
      },
      [](int, HeadResult&) {});
  TileWorker worker;
  EXPECT_EQ(worker.problem(), "");
  worker.start(std::make_shared<RunTiles>(broken, 0, kLayers * kHeads, kBlocks, MapWeighting{}), 1);
  ASSERT_TRUE(worker.waitOverviews(1));
  const std::string problem = worker.problem();
  EXPECT_NE(problem.find("layer 2, head 1"), std::string::npos) << problem;
  EXPECT_NE(problem.find("a file of 12 bytes"), std::string::npos) << problem;
  for (TileWorker::Landed& l : worker.take()) {
    const bool unreadable = l.map / kHeads == 1;
    EXPECT_EQ(l.tile.masked.minCoeff() == 1, unreadable) << "map " << l.map;
  }
  worker.start(std::make_shared<RunTiles>(f.dropped, 0, kLayers * kHeads, kBlocks, MapWeighting{}), 2);
  EXPECT_EQ(worker.problem(), "") << "a new source starts without the old one's problem";
}

}  // namespace
}  // namespace attnscope::app
