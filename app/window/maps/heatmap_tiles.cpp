// The worker behind HeatmapTileSource: view tiles first (they are small and what the user waits for), then each
// head's overview from the scene a band of pooled rows at a time (overviewRows: q, k projected here, m and l
// found on the way), so that a view request or a new scene never waits for a whole head.
#include "window/maps/heatmap_tiles.h"

#include <algorithm>
#include <exception>

#include "attnscope/compute/scene_rope.h"
#include "attnscope/scene/key_mask.h"
#include "window/latest_worker.h"  // yieldToTheUiThread

namespace attnscope::app {

namespace {
// Pooled rows per overview step: about 2048 query rows (1/16 of a 32k-token head, ~0.3 s on 2 cores), so a view
// request or a new scene waits for one step at most.
int overviewStep(int n_q, int out_rows) {
  return std::max(1, static_cast<int>(static_cast<long long>(out_rows) * 2048 / std::max(1, n_q)));
}
}  // namespace

HeatmapTileSource::HeatmapTileSource() : thread_([this] { run(); }) {}

HeatmapTileSource::~HeatmapTileSource() {
  stop();
  thread_.join();
}

void HeatmapTileSource::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  overviews_cv_.notify_all();
}

void HeatmapTileSource::clear() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshot_.reset();
    view_.reset();
    landed_.clear();
    overviews_done_ = 0;
  }
  overviews_cv_.notify_all();
}

void HeatmapTileSource::replaceSnapshot(std::shared_ptr<const Scene> scene, unsigned revision,
                                        std::shared_ptr<const Matrix> key_scales) {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->revision = revision;
  snapshot->tiles_revision = ++tiles_revisions_;
  snapshot->result.heads.resize(scene->heads.size());
  snapshot->done.assign(scene->heads.size(), 0);
  snapshot->scene = std::move(scene);
  snapshot->key_scales = std::move(key_scales);
  snapshot_ = std::move(snapshot);
  view_.reset();
  landed_.clear();
  overviews_done_ = 0;
  overview_head_ = 0;
  overview_rows_done_ = 0;
}

void HeatmapTileSource::start(std::shared_ptr<const Scene> scene, unsigned revision) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replaceSnapshot(std::move(scene), revision, nullptr);
  }
  wake_.notify_one();
  overviews_cv_.notify_all();  // a compute waiting for an older revision's overviews: it is stale now
}

void HeatmapTileSource::setKeyScales(const std::shared_ptr<const Scene>& scene,
                                     std::shared_ptr<const Matrix> key_scales) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!snapshot_ || snapshot_->scene != scene || snapshot_->key_scales == key_scales) return;
    // The same scene and revision, every overview again (m, l too: simpler than keeping the heads' q, k, m, l,
    // and a switch flipped is rare beside an edit).
    replaceSnapshot(scene, snapshot_->revision, std::move(key_scales));
  }
  wake_.notify_one();
}

std::shared_ptr<const Scene> HeatmapTileSource::scene() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_ ? snapshot_->scene : nullptr;
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

bool HeatmapTileSource::waitOverviews(unsigned revision) const {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto current = [&] { return snapshot_ && snapshot_->revision == revision; };
  overviews_cv_.wait(
      lock, [&] { return stopping_ || !current() || overviews_done_ >= static_cast<int>(snapshot_->done.size()); });
  return !stopping_ && current();
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

int HeatmapTileSource::overviewHead() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return overview_head_;
}

float HeatmapTileSource::overviewFraction() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<float>(overview_rows_done_) / static_cast<float>(std::max(1, overview_rows_));
}

unsigned HeatmapTileSource::revision() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_ ? snapshot_->revision : ~0u;
}

unsigned HeatmapTileSource::tilesRevision() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_ ? snapshot_->tiles_revision : ~0u;
}

bool HeatmapTileSource::viewReady() const {
  const int head = view_->request.head;
  return head >= 0 && head < static_cast<int>(snapshot_->done.size()) &&
         snapshot_->done[static_cast<std::size_t>(head)];
}

void HeatmapTileSource::run() {
  yieldToTheUiThread();
  // The overview being built: head `building_head` of `building_for`, (out_rows, out_cols) filled a band of pooled
  // rows per step, with its q, k and the row statistics found so far.
  Tile overview;
  Matrix q, k;
  RowVector m, l;
  RowVector key_scale;  // (n_k) the building head's scales, when the snapshot has them
  std::shared_ptr<Snapshot> building_for;
  int building_head = -1;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] {
      return stopping_ ||
             (snapshot_ && ((view_ && viewReady()) || overviews_done_ < static_cast<int>(snapshot_->done.size())));
    });
    if (stopping_) return;
    std::shared_ptr<Snapshot> snapshot = snapshot_;
    if (view_ && (view_->request.head < 0 || view_->request.head >= static_cast<int>(snapshot->done.size())))
      view_.reset();  // a head the scene no longer has
    if (view_ && viewReady()) {
      TileRequest request = view_->request;
      view_.reset();
      lock.unlock();
      Landed landed;
      landed.head = request.head, landed.overview = false, landed.request = request;
      landed.revision = snapshot->revision, landed.tiles_revision = snapshot->tiles_revision;
      RowVector view_scale;
      if (snapshot->key_scales) {
        view_scale = snapshot->key_scales->row(request.head);
        request.key_scale = &view_scale;
      }
      bool ok = true;
      try {  // the head's q, k, m, l are in snapshot->result: only this thread writes them, before `done`
        landed.tile = weightTile(*snapshot->scene, snapshot->result, request);
      } catch (const std::exception&) {
        ok = false;  // a view outside this scene (asked for the previous one): the next frame asks again
      }
      lock.lock();
      if (ok && snapshot_ == snapshot) landed_.push_back(std::move(landed));
      continue;
    }
    const Scene& scene = *snapshot->scene;
    const int out_rows = std::min(scene.nQ(), kOverviewSide), out_cols = std::min(scene.nK(), kOverviewSide);
    if (building_for != snapshot || building_head < 0) {
      // The next head: the one a view waits for, else the first not done.
      int head = 0;
      while (snapshot->done[static_cast<std::size_t>(head)]) ++head;
      if (view_) head = view_->request.head;
      building_for = snapshot, building_head = head;
      overview_head_ = head, overview_rows_ = out_rows, overview_rows_done_ = 0;
      lock.unlock();
      q = headQuery(scene, head);  // (n_q, d_k), (n_k, d_k): ~0.1 s at 32k tokens, d_model 512
      k = headKey(scene, head);
      if (snapshot->key_scales) key_scale = snapshot->key_scales->row(head);
      overview.values.resize(out_rows, out_cols);
      overview.masked.resize(out_rows, out_cols);
      lock.lock();
      continue;  // a view or a new scene may have come meanwhile
    }
    const int head = building_head;
    const int y0 = overview_rows_done_, y1 = std::min(out_rows, y0 + overviewStep(scene.nQ(), out_rows));
    lock.unlock();
    try {
      overviewRows(scene, head, q, k, KeyMask(scene), out_rows, out_cols, y0, y1, overview, m, l,
                   snapshot->key_scales ? &key_scale : nullptr);
    } catch (const std::exception&) {
      overview.values.middleRows(y0, y1 - y0).setZero();  // not expected on a validated scene: shown as masked
      overview.masked.middleRows(y0, y1 - y0).setOnes();
    }
    lock.lock();
    if (snapshot_ != snapshot) continue;  // a new scene: start over
    overview_rows_done_ = y1;
    if (overview_rows_done_ < out_rows) continue;
    HeadResult& hr = snapshot->result.heads[static_cast<std::size_t>(head)];
    hr.q = std::move(q), hr.ownK() = std::move(k), hr.row_max = std::move(m), hr.row_sum = std::move(l);
    Landed landed;
    landed.head = head;
    landed.request = overviewRequest(head, scene.nQ(), scene.nK());  // (out_rows, out_cols) blocks, as built
    landed.tile = overview;
    landed.revision = snapshot->revision, landed.tiles_revision = snapshot->tiles_revision;
    landed_.push_back(std::move(landed));
    snapshot->done[static_cast<std::size_t>(head)] = 1;
    ++overviews_done_;
    overview_rows_done_ = 0;
    building_head = -1;
    overviews_cv_.notify_all();
  }
}

}  // namespace attnscope::app
