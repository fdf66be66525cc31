// The model's maps through the heatmap shader: a pooled atlas for the grid, one full map for the close view.
#include "window/maps/model_grid_renderer.h"

#include <algorithm>
#include <vector>

namespace attnscope::app {

ModelGridRenderer::ModelGridRenderer() {
  grid_weights_ = gl::makeNearestTexture();
  grid_mask_ = gl::makeNearestTexture();
  map_weights_ = gl::makeNearestTexture();
  map_mask_ = gl::makeNearestTexture();
}

ModelGridRenderer::~ModelGridRenderer() {
  for (Target* t : {&grid_, &map_}) gl::deleteRenderTarget(*t);
  const unsigned textures[] = {grid_weights_, grid_mask_, map_weights_, map_mask_};
  gl::deleteTextures(textures, 4);
}

void ModelGridRenderer::resize(Target& target, int width, int height) {
  if (target.texture && target.width == width && target.height == height) return;
  gl::allocateRenderTarget(target, width, height);
}

void ModelGridRenderer::syncGrid(const std::shared_ptr<const model::ForwardResult>& forward, int layers, int heads,
                                 unsigned revision, int tile_w, int tile_h, const MapContrast& contrast,
                                 const std::shared_ptr<const model::Model>& weighting) {
  tile_w = std::max(1, tile_w), tile_h = std::max(1, tile_h);
  if (revision != grid_revision_ || tile_w != tile_w_ || tile_h != tile_h_ || layers != layers_ || heads != heads_ ||
      weighting.get() != grid_weighting_) {
    grid_revision_ = revision, tile_w_ = tile_w, tile_h_ = tile_h, layers_ = layers, heads_ = heads;
    grid_weighting_ = weighting.get();
    tile_max_.assign(static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads), 0.0f);
    auto job = std::make_shared<GridTilesJob>();
    job->forward = forward;
    job->weighting = weighting;
    job->layers = layers, job->heads = heads;
    job->blocks = std::min(forward->n, std::max(tile_w, tile_h));  // never more texels than pixels on a side
    grid_worker_.start(job);
    grid_job_ = job;
    grid_shown_layers_ = 0;
    const int width = heads * job->blocks, height = layers * job->blocks;
    gl::setWeightTexels(grid_weights_, width, height, nullptr);  // filled layer by layer in showLandedLayers
    gl::setMaskTexels(grid_mask_, width, height, nullptr);
    const bool same_size = grid_.texture && grid_.width == heads * tile_w && grid_.height == layers * tile_h;
    resize(grid_, heads * tile_w, layers * tile_h);
    if (!same_size)  // fresh texels are undefined: a neutral grey until each layer lands
      gl::clearRenderTarget(grid_, 0.25f, 0.25f, 0.28f, 1.0f);
  }
  const bool contrast_changed = contrast != contrast_;
  contrast_ = contrast;
  showLandedLayers();
  // A new contrast, or (Shared) a new largest weight among the landed layers: every landed tile again.
  if (contrast_changed || gridTop() != grid_top_) {
    grid_top_ = gridTop();
    for (int l = 0; l < grid_shown_layers_; ++l)
      for (int h = 0; h < heads_; ++h) renderGridTile(l, h);
  }
}

float ModelGridRenderer::gridTop() const {
  if (contrast_.scale == ColorScale::Shared) {
    float top = 0;
    for (int k = 0; k < grid_shown_layers_ * heads_; ++k) top = std::max(top, tile_max_[static_cast<std::size_t>(k)]);
    return top > 0 ? top : 1.0f;
  }
  return contrast_.scale == ColorScale::PerHead ? 0.0f : 1.0f;
}

float ModelGridRenderer::mapTop() const {
  const bool own = map_contrast_.scale == ColorScale::Shared || map_contrast_.scale == ColorScale::PerHead;
  return own && map_max_ > 0 ? map_max_ : 1.0f;
}

void ModelGridRenderer::renderGridTile(int l, int h) {
  const int b = grid_blocks_;
  const float fb = static_cast<float>(b);
  float top = gridTop();
  if (contrast_.scale == ColorScale::PerHead) {
    const float own = tile_max_[static_cast<std::size_t>(l * heads_ + h)];
    top = own > 0 ? own : 1.0f;
  }
  // GL rows run upwards: layer 1 goes at the top of the target.
  render(grid_, grid_weights_, grid_mask_, h * tile_w_, (layers_ - 1 - l) * tile_h_, tile_w_, tile_h_,
         CellView{static_cast<float>(h) * fb, static_cast<float>(l) * fb, static_cast<float>(h + 1) * fb,
                  static_cast<float>(l + 1) * fb},
         top, h * b, (h + 1) * b);
}

void ModelGridRenderer::showLandedLayers() {
  const int done = grid_job_ ? grid_job_->layers_done.load(std::memory_order_acquire) : 0;
  if (done <= grid_shown_layers_) return;
  const GridTilesJob& job = *grid_job_;
  const int blocks = job.blocks, first = grid_shown_layers_;
  const std::size_t width = static_cast<std::size_t>(heads_ * blocks);
  const std::size_t row0 = static_cast<std::size_t>(first * blocks);
  const int rows = (done - first) * blocks;
  gl::updateWeightRows(grid_weights_, static_cast<int>(row0), static_cast<int>(width), rows,
                       job.values.data() + row0 * width);
  gl::updateMaskRows(grid_mask_, static_cast<int>(row0), static_cast<int>(width), rows,
                     job.allowed.data() + row0 * width);
  grid_blocks_ = blocks;
  for (int l = first; l < done; ++l)
    for (int h = 0; h < heads_; ++h) {
      float top = 0;  // the tile's largest allowed block (max-pooled: its map's largest allowed weight)
      for (int p = 0; p < blocks; ++p)
        for (int q = 0; q < blocks; ++q) {
          const std::size_t at =
              static_cast<std::size_t>(l * blocks + p) * width + static_cast<std::size_t>(h * blocks + q);
          if (job.allowed[at]) top = std::max(top, job.values[at]);
        }
      tile_max_[static_cast<std::size_t>(l * heads_ + h)] = top;
    }
  grid_shown_layers_ = done;
  grid_top_ = gridTop();
  for (int l = first; l < done; ++l)
    for (int h = 0; h < heads_; ++h) renderGridTile(l, h);
  // All on show: the worker is done with the job, so its atlas and its hold on the forward (which a newer
  // forward may have replaced in the session) can go.
  if (done == layers_) grid_job_.reset();
}

void ModelGridRenderer::drawTile(ImDrawList* list, int layer, int head, ImVec2 p0) const {
  const float w = static_cast<float>(grid_.width), h = static_cast<float>(grid_.height);
  const float tw = static_cast<float>(tile_w_), th = static_cast<float>(tile_h_);
  const float u0 = static_cast<float>(head) * tw / w, u1 = static_cast<float>(head + 1) * tw / w;
  const float v_top = static_cast<float>(layers_ - layer) * th / h,
              v_bottom = static_cast<float>(layers_ - 1 - layer) * th / h;
  list->AddImage(gl::imguiTexture(grid_.texture), p0, ImVec2(p0.x + tw, p0.y + th), ImVec2(u0, v_top),
                 ImVec2(u1, v_bottom));
}

ModelGridRenderer::MapReply ModelGridRenderer::fetchMap(const MapRequest& request) {
  const model::ForwardResult& forward = *request.forward;
  const int n = forward.n, layer = request.index / std::max(1, forward.layout.n_head);
  MapReply reply;
  reply.weights = forward.map(request.index);  // kept (a copy), or recomputed
  if (request.weighting)
    reply.weights.array().rowwise() *=
        valueNormScales(*request.weighting, forward, layer).row(request.index % forward.layout.n_head).array();
  reply.allowed.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (forward.layout.keyAllowed(layer, i, j))
        reply.allowed[static_cast<std::size_t>(i) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)] = 255;
  return reply;
}

void ModelGridRenderer::drawMap(ImDrawList* list, const std::shared_ptr<const model::ForwardResult>& forward, int index,
                                unsigned revision, ImVec2 p0, ImVec2 p1, const CellView& view,
                                const MapContrast& contrast, const std::shared_ptr<const model::Model>& weighting) {
  const int n = forward->n;
  if (index != map_index_ || revision != map_revision_ || weighting.get() != map_weighting_) {
    map_index_ = index, map_revision_ = revision, map_weighting_ = weighting.get();
    map_wanted_ = map_worker_.request(MapRequest{forward, index, weighting});
    map_pending_ = true;
  }
  if (auto landed = map_worker_.take(); landed && landed->first == map_wanted_) {  // older replies: dropped
    const MapReply& r = landed->second;
    gl::setWeightTexels(map_weights_, n, n, r.weights.data());
    gl::setMaskTexels(map_mask_, n, n, r.allowed.data());
    map_pending_ = false;
    map_stale_ = true;  // render again below
    map_max_ = 0;
    for (std::size_t k = 0; k < r.allowed.size(); ++k)
      if (r.allowed[k]) map_max_ = std::max(map_max_, r.weights.data()[k]);
  }
  if (map_pending_) {
    list->AddRectFilled(p0, p1, IM_COL32(64, 64, 71, 255));
    return;
  }
  const int width = std::max(1, static_cast<int>(p1.x - p0.x)), height = std::max(1, static_cast<int>(p1.y - p0.y));
  const bool same_view = map_view_.col0 == view.col0 && map_view_.row0 == view.row0 && map_view_.col1 == view.col1 &&
                         map_view_.row1 == view.row1;
  if (map_stale_ || map_.width != width || map_.height != height || !same_view || contrast != map_contrast_) {
    map_stale_ = false;
    resize(map_, width, height);
    map_view_ = view;
    map_contrast_ = contrast;
    render(map_, map_weights_, map_mask_, 0, 0, width, height, view, mapTop(), 0, n);
  }
  list->AddImage(gl::imguiTexture(map_.texture), p0,
                 ImVec2(p0.x + static_cast<float>(width), p0.y + static_cast<float>(height)), ImVec2(0, 1),
                 ImVec2(1, 0));
}

void ModelGridRenderer::render(const Target& target, unsigned weights, unsigned mask, int x, int y, int w, int h,
                               const CellView& view, float top, int row_x0, int row_x1) {
  gl::HeatmapCells cells;
  cells.weights = weights, cells.mask = mask, cells.view = view, cells.lo = 0.0f, cells.hi = top;
  cells.contrast = &target == &map_ ? map_contrast_ : contrast_;
  cells.row_x0 = row_x0, cells.row_x1 = row_x1;
  program_.draw(target, x, y, w, h, cells);
}

}  // namespace attnscope::app
