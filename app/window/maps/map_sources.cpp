// The tile worker's two sources: a scene's heads from the scene alone, a run's maps from its forward.
#include "window/maps/map_sources.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/compute/sampled_check.h"
#include "attnscope/compute/scene_rope.h"
#include "attnscope/error.h"
#include "attnscope/model/head_finding.h"
#include "attnscope/scene/key_mask.h"
#ifdef ATTNSCOPE_HAS_GPU
#include "attnscope/gpu_backend.h"
#endif

namespace attnscope::app {

SceneTiles::SceneTiles(std::shared_ptr<const Scene> scene) : scene_(std::move(scene)) {
  result_.heads.resize(scene_->heads.size());
}

std::pair<int, int> SceneTiles::overviewSize() const {
  return {std::min(scene_->nQ(), kOverviewSide), std::min(scene_->nK(), kOverviewSide)};
}

void SceneTiles::overviewRows(int map, int y0, int y1, Tile& overview, const RowVector* key_scale) {
  if (y0 == 0) {
    q_ = headQuery(*scene_, map);  // (n_q, d_k), (n_k, d_k): ~0.1 s at 32k tokens, d_model 512
    k_ = headKey(*scene_, map);
  }
  const auto [out_rows, out_cols] = overviewSize();
  attnscope::overviewRows(*scene_, map, q_, k_, KeyMask(*scene_), out_rows, out_cols, y0, y1, overview, m_, l_, key_scale);
}

void SceneTiles::finishOverview(int map) {
  HeadResult& hr = result_.heads[static_cast<std::size_t>(map)];
  hr.q = std::move(q_), hr.ownK() = std::move(k_), hr.row_max = std::move(m_), hr.row_sum = std::move(l_);
}

Tile SceneTiles::viewTile(const TileRequest& request) {
  return weightTile(*scene_, result_, request);  // the head's q, k, m, l: in since its overview finished
}

namespace {
std::uint64_t nextSourceId() {
  static std::atomic<std::uint64_t> made{0};
  return ++made;
}
}  // namespace

RunTiles::RunTiles(std::shared_ptr<const model::ForwardResult> forward, int first, int count, int overview,
                   MapWeighting weighting, bool on_gpu)
    : forward_(std::move(forward)),
      first_(first),
      count_(count),
      overview_(overview),
      on_gpu_(on_gpu),
      id_(nextSourceId()),
      weighting_(std::move(weighting)) {}

#ifdef ATTNSCOPE_HAS_GPU
namespace {

// The worker thread's own GPU engine and the head resident on it (a thread draws one source at a time, but a
// new source on the same thread must not take the old one's head for its own).
struct TileThreadGpu {
  std::unique_ptr<GpuBackend> gpu;
  std::string unavailable;  // why there is none, once tried
  std::uint64_t owner = 0;  // RunTiles::id_
  int layer = -1, head = -1;
};
TileThreadGpu& tileThreadGpu() {
  thread_local TileThreadGpu worker;  // destroyed on its thread, with its context current there
  return worker;
}

// Row statistics found on a GPU against the CPU's on the sampled query rows (compute/sampled_check.h's rows and
// tolerance: |got - cpu| / (1 + |cpu|) within 1e-4 + 32 eps32 (A + sqrt(n)), A the row's largest sum |q_d k_d|
// times the cap's slope, at most 1). Returns the first mismatch as a line, or empty.
std::string checkFoundStatistics(const model::ForwardResult& f, int layer, const Matrix& q, const Matrix& k,
                                 float cap, const RowVector& m, const RowVector& l, std::uint64_t seed) {
  const int n = f.n;
  const Matrix k_abs = k.cwiseAbs();
  for (int i : sampledQueryRows(n, seed)) {
    const RowVector s = q.row(i) * k.transpose();
    const double a = (q.row(i).cwiseAbs() * k_abs.transpose()).maxCoeff();
    double top = -INFINITY;
    std::vector<double> capped(static_cast<std::size_t>(n), -INFINITY);
    for (int j = 0; j < n; ++j) {
      if (!f.layout.keyAllowed(layer, i, j)) continue;
      const double x = cap > 0 ? cap * std::tanh(static_cast<double>(s[j]) / cap) : static_cast<double>(s[j]);
      capped[static_cast<std::size_t>(j)] = x;
      top = std::max(top, x);
    }
    if (top == -INFINITY) continue;  // every key masked: the tiles skip the row
    double sum = 0;
    for (double x : capped) sum += std::exp(x - top);
    const double eps = 1.0 / (1 << 23), t = 1e-4 + 32 * eps * (a + std::sqrt(static_cast<double>(n)));
    const double m_error = std::abs(m[i] - top) / (1 + std::abs(top)), l_error = std::abs(l[i] - sum) / (1 + sum);
    if (!(m_error <= t) || !(l_error <= t)) {
      char line[256];
      std::snprintf(line, sizeof line, "query row %d: m %.7g, l %.7g on the GPU, the CPU's %.7g, %.7g (tolerance %.2g)",
                    i, static_cast<double>(m[i]), static_cast<double>(l[i]), top, sum, t);
      return line;
    }
  }
  return {};
}

}  // namespace
#endif  // ATTNSCOPE_HAS_GPU

void RunTiles::setNotice(std::string text) {
  const std::lock_guard<std::mutex> lock(notice_mutex_);
  notice_ = std::move(text);
}

std::string RunTiles::notice() const {
  const std::lock_guard<std::mutex> lock(notice_mutex_);
  return notice_;
}

bool RunTiles::gpuTile(int layer, const TileRequest& request, Tile& out) {
#ifdef ATTNSCOPE_HAS_GPU
  if (!on_gpu_ || forward_->keepsMaps()) return false;
  TileThreadGpu& worker = tileThreadGpu();
  if (!worker.gpu && worker.unavailable.empty()) {
    try {
      worker.gpu = std::make_unique<GpuBackend>();
    } catch (const std::exception& e) {
      worker.unavailable = e.what();
    }
  }
  if (!worker.gpu) {
    setNotice("GPU tiles unavailable (" + worker.unavailable + "): the maps are drawn on the CPU");
    on_gpu_ = false;
    return false;
  }
  try {
    if (worker.owner != id_ || worker.layer != layer || worker.head != request.head) {
      worker.owner = 0;
      bool known = false;
      const std::shared_ptr<const Result> held = forward_->layerData(layer, request.head, known);
      const HeadResult& hr = held->heads.at(static_cast<std::size_t>(request.head));
      RowVector m, l;
      worker.gpu->residentHead(forward_->tileScene(layer),
                               {.q = &hr.q, .k = &hr.k(), .row_max = known ? &hr.row_max : nullptr,
                                .row_sum = known ? &hr.row_sum : nullptr, .score_cap = held->score_cap},
                               known ? nullptr : &m, known ? nullptr : &l);
      if (!known) {
        const std::string mismatch = checkFoundStatistics(*forward_, layer, hr.q, hr.k(), held->score_cap, m, l,
                                                          static_cast<std::uint64_t>(layer) * 1000003u + request.head);
        if (!mismatch.empty()) {
          setNotice("GPU tiles failed their check (layer " + std::to_string(layer + 1) + ", head " +
                    std::to_string(request.head + 1) + ", " + mismatch + "): the maps are drawn on the CPU");
          on_gpu_ = false;
          return false;
        }
        if (forward_->reader) forward_->reader->setStatistics(layer, request.head, std::move(m), std::move(l));
      }
      worker.owner = id_, worker.layer = layer, worker.head = request.head;
    }
    TileRequest on_gpu = request;
    on_gpu.head = 0;  // the one resident head
    out = worker.gpu->weightTile(on_gpu);
    ++gpu_tiles_;
    return true;
  } catch (const InputError& e) {  // a head the device cannot hold: this source draws on the CPU
    setNotice(std::string("GPU tiles: ") + e.what() + ": the maps are drawn on the CPU");
    on_gpu_ = false;
    return false;
  }
#else
  (void)layer, (void)request, (void)out;
  return false;
#endif
}

Tile RunTiles::tile(int layer, const TileRequest& request) {
  Tile out;
  if (gpuTile(layer, request, out)) return out;
  return forward_->tile(layer, request);
}

TileRequest RunTiles::resolve(TileRequest request, int& layer, RowVector& scales, const RowVector* given) {
  const int heads = std::max(1, forward_->layout.n_head), index = first_ + request.head;
  layer = index / heads;
  request.head = index % heads;
  request.key_scale = given;
  if (weighting_.on) {
    if (layer != scales_layer_)
      layer_scales_ = valueNormScales(weighting_.checkpoint.get(), *forward_, layer), scales_layer_ = layer;
    scales = layer_scales_.row(request.head);
    request.key_scale = &scales;
  }
  return request;
}

void RunTiles::overviewRows(int map, int y0, int y1, Tile& overview, const RowVector* key_scale) {
  int layer = 0;
  RowVector scales;
  const TileRequest request = resolve(overviewRequest(map, rows(), cols(), overview_, overview_), layer, scales,
                                      key_scale);
  Tile whole;  // the step is the whole map: y0 = 0, y1 = overview_
  try {
    whole = tile(layer, request);
  } catch (const std::exception& e) {  // said by the worker over the map view (TileWorker::problem)
    throw std::runtime_error("layer " + std::to_string(layer + 1) + ", head " + std::to_string(request.head + 1) +
                             ": " + e.what());
  }
  overview.values.middleRows(y0, y1 - y0) = whole.values.middleRows(y0, y1 - y0);
  overview.masked.middleRows(y0, y1 - y0) = whole.masked.middleRows(y0, y1 - y0);
}

Tile RunTiles::viewTile(const TileRequest& request) {
  int layer = 0;
  RowVector scales;
  const TileRequest r = resolve(request, layer, scales, request.key_scale);
  return tile(layer, r);
}

Matrix valueNormScales(const model::Model* checkpoint, const model::ForwardResult& forward, int layer) {
  // Over the double norms: norm / largest is finite in [0, 1] even where a norm is past float32's range.
  const Eigen::MatrixXd norms = checkpoint ? model::valueNormsDouble(*checkpoint, forward, layer)
                                           : Eigen::MatrixXd(model::carriedValueNorms(forward, layer).cast<double>());
  const double top = norms.size() > 0 ? norms.maxCoeff() : 0.0;
  return top > 0 ? Matrix((norms / top).cast<float>()) : Matrix(norms.cast<float>());
}

}  // namespace attnscope::app
