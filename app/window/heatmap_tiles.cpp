// The worker behind HeatmapTileSource: view tiles first (they are small and what the user waits for), then each
// head's overview a band of pooled rows at a time, so that a view request or a new result never waits for a whole
// head.
#include "window/heatmap_tiles.h"

#include <algorithm>
#include <exception>

#include "attnscope/scene/key_mask.h"

namespace attnscope::app {

namespace {
// Pooled rows per overview step: about 2048 query rows (1/16 of a 32k-token head, ~0.2 s on 2 cores), so a view
// request or a new result waits for one step at most.
int overviewStep(int n_q, int out_rows) {
  return std::max(1, static_cast<int>(static_cast<long long>(out_rows) * 2048 / std::max(1, n_q)));
}
}  // namespace

HeatmapTileSource::HeatmapTileSource() : thread_([this] { run(); }) {}

HeatmapTileSource::~HeatmapTileSource() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void HeatmapTileSource::reset(const Scene& scene, const Result& result, unsigned revision) {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->scene = scene;
  snapshot->revision = revision;
  snapshot->result.heads.resize(result.heads.size());
  for (std::size_t h = 0; h < result.heads.size(); ++h) {
    const HeadResult& from = result.heads[h];
    HeadResult& to = snapshot->result.heads[h];
    to.q = from.q, to.shareKeyValues(from), to.row_max = from.row_max, to.row_sum = from.row_sum;
    if (from.hasMap()) to.weights = from.weights;  // not expected (kept maps are drawn directly), but exact
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshot_ = std::move(snapshot);
    view_.reset();
    landed_.clear();
    overviews_done_ = 0;
    overview_rows_done_ = 0;
  }
  wake_.notify_one();
}

void HeatmapTileSource::requestView(int head, int row0, int row1, int col0, int col1, int out_rows, int out_cols) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ViewRequest v;
    v.request.head = head;
    v.request.row0 = row0, v.request.row1 = row1, v.request.col0 = col0, v.request.col1 = col1;
    const bool pooled = out_rows < row1 - row0 || out_cols < col1 - col0;
    v.request.pooling = pooled ? Pooling::Max : Pooling::None;
    v.request.out_rows = out_rows, v.request.out_cols = out_cols;
    view_ = v;
  }
  wake_.notify_one();
}

std::vector<HeatmapTileSource::Landed> HeatmapTileSource::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Landed> out = std::move(landed_);
  landed_.clear();
  return out;
}

int HeatmapTileSource::overviewsDone() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return overviews_done_;
}

float HeatmapTileSource::overviewFraction() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<float>(overview_rows_done_) / static_cast<float>(std::max(1, overview_rows_));
}

unsigned HeatmapTileSource::revision() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_ ? snapshot_->revision : ~0u;
}

void HeatmapTileSource::run() {
  // The overview being built: (out_rows, out_cols), filled a band of pooled rows per step.
  Tile overview;
  std::shared_ptr<const Snapshot> building_for;
  int building_head = -1;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] {
      return stopping_ || view_.has_value() ||
             (snapshot_ && overviews_done_ < static_cast<int>(snapshot_->result.heads.size()));
    });
    if (stopping_) return;
    std::shared_ptr<const Snapshot> snapshot = snapshot_;
    if (view_) {
      const TileRequest request = view_->request;
      view_.reset();
      lock.unlock();
      Landed landed;
      landed.head = request.head, landed.overview = false, landed.request = request;
      landed.revision = snapshot->revision;
      bool ok = true;
      try {
        landed.tile = weightTile(snapshot->scene, snapshot->result, request);
      } catch (const std::exception&) {
        ok = false;  // a view of a result that has just been replaced (other shapes): the next frame asks again
      }
      lock.lock();
      if (ok && snapshot_ == snapshot) landed_.push_back(std::move(landed));
      continue;
    }
    // One pooled row of head overviews_done_'s overview.
    const Scene& scene = snapshot->scene;
    const int head = overviews_done_;
    const int out_rows = std::min(scene.nQ(), kOverviewSide), out_cols = std::min(scene.nK(), kOverviewSide);
    if (building_for != snapshot || building_head != head) {
      building_for = snapshot, building_head = head;
      overview.values.resize(out_rows, out_cols);
      overview.masked.resize(out_rows, out_cols);
      overview_rows_ = out_rows;
      overview_rows_done_ = 0;
    }
    const int y0 = overview_rows_done_, y1 = std::min(out_rows, y0 + overviewStep(scene.nQ(), out_rows));
    lock.unlock();
    // Output rows [y0, y1) of the whole-map pooled tile, recomputed in blocks (maxPooledRows): each texel pools
    // exactly the cells a whole-map pooled tile would, and a view request waits for one step at most.
    TileRequest request;
    request.head = head, request.pooling = Pooling::Max, request.out_rows = out_rows, request.out_cols = out_cols;
    try {
      maxPooledRows(scene, snapshot->result, KeyMask(scene), request, y0, y1, overview);
    } catch (const std::exception&) {
      overview.values.middleRows(y0, y1 - y0).setZero();  // not expected on a validated scene: shown as masked
      overview.masked.middleRows(y0, y1 - y0).setOnes();
    }
    lock.lock();
    if (snapshot_ != snapshot) continue;  // a new result: start over
    overview_rows_done_ = y1;
    if (overview_rows_done_ < out_rows) continue;
    Landed landed;
    landed.head = head;
    landed.request.head = head, landed.request.row1 = scene.nQ(), landed.request.col1 = scene.nK();
    landed.request.pooling = Pooling::Max, landed.request.out_rows = out_rows, landed.request.out_cols = out_cols;
    landed.tile = overview;
    landed.revision = snapshot->revision;
    landed_.push_back(std::move(landed));
    ++overviews_done_;
    overview_rows_done_ = 0;
    building_head = -1;
  }
}

}  // namespace attnscope::app
