// The tile worker's loop: view tiles first (they are small and what the user waits for), then each map's overview
// a band of pooled rows at a time, so that a view request or a new source never waits for a whole map.
#include "window/maps/tile_worker.h"

#include <algorithm>
#include <exception>
#include <string>

#include "window/latest_worker.h"  // yieldToTheUiThread

namespace attnscope::app {

int MapSource::overviewStep() const {
  const int out_rows = overviewSize().first;
  return std::max(1, static_cast<int>(static_cast<long long>(out_rows) * 2048 / std::max(1, rows())));
}

TileWorker::TileWorker() : thread_([this] { run(); }) {}

TileWorker::~TileWorker() {
  stop();
  thread_.join();
}

void TileWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  overviews_cv_.notify_all();
}

void TileWorker::clear() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshot_.reset();
    view_.reset();
    landed_.clear();
    overviews_done_ = 0;
  }
  overviews_cv_.notify_all();
}

void TileWorker::replaceSnapshot(std::shared_ptr<MapSource> source, unsigned revision,
                                 std::shared_ptr<const Matrix> key_scales) {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->revision = revision;
  snapshot->tiles_revision = ++tiles_revisions_;
  snapshot->done.assign(static_cast<std::size_t>(source->maps()), 0);
  snapshot->source = std::move(source);
  snapshot->key_scales = std::move(key_scales);
  snapshot_ = std::move(snapshot);
  failed_.clear();
  view_.reset();
  landed_.clear();
  overviews_done_ = 0;
  overview_map_ = 0;
  overview_rows_done_ = 0;
}

std::string TileWorker::problem() const {
  std::shared_ptr<Snapshot> snapshot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_.empty()) return failed_;
    snapshot = snapshot_;
  }
  return snapshot ? snapshot->source->notice() : std::string();
}

void TileWorker::start(std::shared_ptr<MapSource> source, unsigned revision) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replaceSnapshot(std::move(source), revision, nullptr);
  }
  wake_.notify_one();
  overviews_cv_.notify_all();  // a compute waiting for an older revision's overviews: it is stale now
}

void TileWorker::setKeyScales(const MapSource* source, std::shared_ptr<const Matrix> key_scales) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!snapshot_ || snapshot_->source.get() != source || snapshot_->key_scales == key_scales) return;
    // The same source and revision, every overview again (a scene's m, l too: simpler than keeping them, and a
    // switch flipped is rare beside an edit).
    replaceSnapshot(snapshot_->source, snapshot_->revision, std::move(key_scales));
  }
  wake_.notify_one();
}

std::shared_ptr<MapSource> TileWorker::source() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_ ? snapshot_->source : nullptr;
}

void TileWorker::requestView(int map, int row0, int row1, int col0, int col1, int out_rows, int out_cols) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool pooled = out_rows < row1 - row0 || out_cols < col1 - col0;
    view_ = TileRequest{map, row0, row1, col0, col1, pooled ? Pooling::Max : Pooling::None, out_rows, out_cols};
  }
  wake_.notify_one();
}

bool TileWorker::waitOverviews(unsigned revision) const {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto current = [&] { return snapshot_ && snapshot_->revision == revision; };
  overviews_cv_.wait(
      lock, [&] { return stopping_ || !current() || overviews_done_ >= static_cast<int>(snapshot_->done.size()); });
  return !stopping_ && current();
}

std::vector<TileWorker::Landed> TileWorker::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Landed> out = std::move(landed_);
  landed_.clear();
  return out;
}

int TileWorker::overviewsDone() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return overviews_done_;
}

int TileWorker::overviewMap() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return overview_map_;
}

float TileWorker::overviewFraction() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<float>(overview_rows_done_) / static_cast<float>(std::max(1, overview_rows_));
}

unsigned TileWorker::revision() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_ ? snapshot_->revision : ~0u;
}

unsigned TileWorker::tilesRevision() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_ ? snapshot_->tiles_revision : ~0u;
}

bool TileWorker::viewReady() const {
  const int map = view_->head;
  if (map < 0 || map >= static_cast<int>(snapshot_->done.size())) return false;
  return !snapshot_->source->viewsNeedOverview() || snapshot_->done[static_cast<std::size_t>(map)];
}

void TileWorker::run() {
  yieldToTheUiThread();
  // The overview being built: map `building_map` of `building_for`, (out_rows, out_cols) filled a band of pooled
  // rows per step.
  Tile overview;
  RowVector key_scale;  // (n_k) the building map's scales, when the snapshot has them
  std::shared_ptr<Snapshot> building_for;
  int building_map = -1;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] {
      return stopping_ ||
             (snapshot_ && ((view_ && viewReady()) || overviews_done_ < static_cast<int>(snapshot_->done.size())));
    });
    if (stopping_) return;
    std::shared_ptr<Snapshot> snapshot = snapshot_;
    if (view_ && (view_->head < 0 || view_->head >= static_cast<int>(snapshot->done.size())))
      view_.reset();  // a map the source no longer has
    if (view_ && viewReady()) {
      TileRequest request = *view_;
      view_.reset();
      lock.unlock();
      Landed landed;
      landed.map = request.head, landed.overview = false, landed.request = request;
      landed.revision = snapshot->revision, landed.tiles_revision = snapshot->tiles_revision;
      RowVector view_scale;
      if (snapshot->key_scales) {
        view_scale = snapshot->key_scales->row(request.head);
        request.key_scale = &view_scale;
      }
      bool ok = true;
      try {
        landed.tile = snapshot->source->viewTile(request);
      } catch (const std::exception&) {
        ok = false;  // a view outside this source (asked for the previous one): the next frame asks again
      }
      lock.lock();
      if (ok && snapshot_ == snapshot) landed_.push_back(std::move(landed));
      continue;
    }
    MapSource& source = *snapshot->source;
    const auto [out_rows, out_cols] = source.overviewSize();
    if (building_for != snapshot || building_map < 0) {
      // The next map: the one a view waits for, else the first not done.
      int map = 0;
      while (snapshot->done[static_cast<std::size_t>(map)]) ++map;
      if (view_) map = view_->head;
      building_for = snapshot, building_map = map;
      overview_map_ = map, overview_rows_ = out_rows, overview_rows_done_ = 0;
      if (snapshot->key_scales) key_scale = snapshot->key_scales->row(map);
      overview.values.resize(out_rows, out_cols);
      overview.masked.resize(out_rows, out_cols);
    }
    const int map = building_map;
    const int y0 = overview_rows_done_, y1 = std::min(out_rows, y0 + source.overviewStep());
    lock.unlock();
    std::string failed;
    try {
      source.overviewRows(map, y0, y1, overview, snapshot->key_scales ? &key_scale : nullptr);
    } catch (const std::exception& e) {
      // A layer that could not be read (a capture's file changed since it was opened): masked grey, and said.
      overview.values.middleRows(y0, y1 - y0).setZero();
      overview.masked.middleRows(y0, y1 - y0).setOnes();
      failed = e.what();  // the source names the map (RunTiles: "layer L, head H: ...")
    }
    lock.lock();
    if (!failed.empty() && snapshot_ == snapshot && failed_.empty()) failed_ = std::move(failed);
    if (snapshot_ != snapshot) continue;  // a new source: start over
    overview_rows_done_ = y1;
    if (overview_rows_done_ < out_rows) continue;
    source.finishOverview(map);  // (a scene: moves the head's q, k, m, l in: cheap)
    Landed landed;
    landed.map = map;
    landed.request = overviewRequest(map, source.rows(), source.cols(), out_rows, out_cols);
    landed.tile = overview;
    landed.revision = snapshot->revision, landed.tiles_revision = snapshot->tiles_revision;
    landed_.push_back(std::move(landed));
    snapshot->done[static_cast<std::size_t>(map)] = 1;
    ++overviews_done_;
    overview_rows_done_ = 0;
    building_map = -1;
    overviews_cv_.notify_all();
  }
}

}  // namespace attnscope::app
