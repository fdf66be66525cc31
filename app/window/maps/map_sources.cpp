// The tile worker's two sources: a scene's heads from the scene alone, a run's maps from its forward.
#include "window/maps/map_sources.h"

#include <algorithm>

#include "attnscope/compute/scene_rope.h"
#include "attnscope/model/head_finding.h"
#include "attnscope/scene/key_mask.h"

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

RunTiles::RunTiles(std::shared_ptr<const model::ForwardResult> forward, int first, int count, int overview,
                   MapWeighting weighting)
    : forward_(std::move(forward)), first_(first), count_(count), overview_(overview), weighting_(std::move(weighting)) {}

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
  const Tile whole = forward_->tile(layer, request);  // the step is the whole map: y0 = 0, y1 = overview_
  overview.values.middleRows(y0, y1 - y0) = whole.values.middleRows(y0, y1 - y0);
  overview.masked.middleRows(y0, y1 - y0) = whole.masked.middleRows(y0, y1 - y0);
}

Tile RunTiles::viewTile(const TileRequest& request) {
  int layer = 0;
  RowVector scales;
  const TileRequest r = resolve(request, layer, scales, request.key_scale);
  return forward_->tile(layer, r);
}

Matrix valueNormScales(const model::Model* checkpoint, const model::ForwardResult& forward, int layer) {
  // Over the double norms: norm / largest is finite in [0, 1] even where a norm is past float32's range.
  const Eigen::MatrixXd norms = checkpoint ? model::valueNormsDouble(*checkpoint, forward, layer)
                                           : Eigen::MatrixXd(model::carriedValueNorms(forward, layer).cast<double>());
  const double top = norms.size() > 0 ? norms.maxCoeff() : 0.0;
  return top > 0 ? Matrix((norms / top).cast<float>()) : Matrix(norms.cast<float>());
}

}  // namespace attnscope::app
