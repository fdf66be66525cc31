// The model grid's pooled tiles (app/window/maps/model_grid_tiles.h), computed off the UI thread: each block
// the largest weight of its cells, taken here straight from the kept maps of the same forward (an independent
// max over 4 x 4 cells), for a forward that kept its maps and one that kept none (recomputed from Q and K); and
// a job replaced while it runs stops early, the newest one finishing.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "attnscope/model/model.h"
#include "random_model.h"
#include "window/maps/model_grid_tiles.h"

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

std::shared_ptr<GridTilesJob> jobFor(const std::shared_ptr<const model::ForwardResult>& forward) {
  auto job = std::make_shared<GridTilesJob>();
  job->forward = forward;
  job->layers = kLayers, job->heads = kHeads, job->blocks = kBlocks;
  return job;
}

// Every block of the atlas against the max of its 4 x 4 cells in `maps` (causal: blocks above the diagonal
// masked). Returns the largest difference.
double worstBlock(const GridTilesJob& job, const model::ForwardResult& maps) {
  const int cells = kTokens / kBlocks, width = kHeads * kBlocks;
  double worst = 0;
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kHeads; ++h) {
      const Matrix m = maps.map(l, h);
      for (int p = 0; p < kBlocks; ++p)
        for (int q = 0; q < kBlocks; ++q) {
          float want = 0;
          for (int i = p * cells; i < (p + 1) * cells; ++i)
            for (int j = q * cells; j < (q + 1) * cells && j <= i; ++j) want = std::max(want, m(i, j));
          const std::size_t at = static_cast<std::size_t>((l * kBlocks + p) * width + h * kBlocks + q);
          EXPECT_EQ(job.allowed[at], q <= p ? 255 : 0) << "layer " << l << " head " << h << " block " << p << "," << q;
          if (q <= p) worst = std::max(worst, static_cast<double>(std::abs(job.values[at] - want)));
        }
    }
  return worst;
}

TEST(GridTiles, KeptAndRecomputedMapsPoolToTheMaxOfEachBlock) {
  const Forwards f = runForwards();
  ASSERT_TRUE(f.kept->keepsMaps());
  ASSERT_FALSE(f.dropped->keepsMaps());
  for (const auto& forward : {f.kept, f.dropped}) {
    const std::shared_ptr<GridTilesJob> job = jobFor(forward);
    computeGridTiles(*job);
    EXPECT_EQ(job->layers_done.load(), kLayers);
    // The same forward's kept maps: exact for the kept forward; float32 recompute order for the other.
    EXPECT_LE(worstBlock(*job, *f.kept), 1e-5);
  }
}

TEST(GridTiles, ACancelledJobStopsBeforeItsNextMap) {
  const Forwards f = runForwards();
  const std::shared_ptr<GridTilesJob> job = jobFor(f.dropped);
  job->cancel = true;
  computeGridTiles(*job);
  EXPECT_EQ(job->layers_done.load(), 0);
}

TEST(GridTiles, TheWorkerFinishesTheNewestJobAndCancelsTheOneItReplaced) {
  const Forwards f = runForwards();
  GridTileWorker worker;
  const std::shared_ptr<GridTilesJob> old_job = jobFor(f.dropped), new_job = jobFor(f.kept);
  worker.start(old_job);
  worker.start(new_job);
  EXPECT_TRUE(old_job->cancel.load());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (new_job->layers_done.load() < kLayers && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(new_job->layers_done.load(), kLayers);
  EXPECT_LE(worstBlock(*new_job, *f.kept), 1e-5);
}

}  // namespace
}  // namespace attnscope::app
