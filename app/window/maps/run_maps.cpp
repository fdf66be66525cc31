// A run's grid and full-size map: RunTiles sources on the one tile worker, drawn by the one renderer.
#include "window/maps/run_maps.h"

#include <algorithm>

#include "window/maps/map_sources.h"

namespace attnscope::app {

namespace {
// Not landed yet: the grid's neutral grey, no text (a tile is a few pixels), no "stale" (the grid dims the
// layers not in yet itself).
RendererMarks runMarks() {
  RendererMarks marks;
  marks.probe = "model";
  marks.placeholder = IM_COL32(64, 64, 71, 255);
  marks.placeholder_text = nullptr;
  marks.stale = false;
  return marks;
}
}  // namespace

RunMaps::RunMaps() : grid_(runMarks()), map_(runMarks()) {}

void RunMaps::syncGrid(const std::shared_ptr<const model::ForwardResult>& forward, int layers, int heads,
                       unsigned revision, int tile_w, int tile_h, const MapWeighting& weighting, bool on_gpu) {
  tile_w = std::max(1, tile_w), tile_h = std::max(1, tile_h);
  if (revision != grid_revision_ || tile_w != tile_w_ || tile_h != tile_h_ || layers != layers_ || heads != heads_ ||
      !(weighting == grid_weighting_) || on_gpu != grid_gpu_) {
    grid_revision_ = revision, tile_w_ = tile_w, tile_h_ = tile_h, layers_ = layers, heads_ = heads, n_ = forward->n;
    grid_weighting_ = weighting, grid_gpu_ = on_gpu;
    const int blocks = std::min(forward->n, std::max(tile_w, tile_h));  // never more texels than pixels on a side
    grid_tiles_.start(std::make_shared<RunTiles>(forward, 0, layers * heads, blocks, weighting, on_gpu), ++starts_);
  }
  grid_.syncTiles(grid_tiles_);
  grid_.useAtlas(heads_, layers_, tile_w_, tile_h_);
  shown_layers_ = 0;
  while (shown_layers_ < layers_) {
    bool all = true;
    for (int h = 0; h < heads_ && all; ++h) all = grid_.overviewLanded(shown_layers_ * heads_ + h);
    if (!all) break;
    ++shown_layers_;
  }
  shown_max_ = 0;  // once a frame here, not once a tile in gridTop
  for (int k = 0; k < shown_layers_ * heads_; ++k) shown_max_ = std::max(shown_max_, grid_.overviewMax(k));
}

float RunMaps::gridTop(const MapContrast& contrast) const {
  if (contrast.scale == ColorScale::Shared) return shown_max_ > 0 ? shown_max_ : 1.0f;
  return contrast.scale == ColorScale::PerHead ? 0.0f : 1.0f;
}

float RunMaps::mapTop(const MapContrast& contrast) const {
  const bool own = contrast.scale == ColorScale::Shared || contrast.scale == ColorScale::PerHead;
  const float max = map_.overviewMax(0);
  return own && max > 0 ? max : 1.0f;
}

void RunMaps::drawTile(ImDrawList* list, int layer, int head, ImVec2 p0, const MapContrast& contrast) {
  const int map = layer * heads_ + head;
  float top = gridTop(contrast);
  if (contrast.scale == ColorScale::PerHead) top = grid_.overviewMax(map) > 0 ? grid_.overviewMax(map) : 1.0f;
  const float all = static_cast<float>(n_);
  grid_.draw(list, map, p0, ImVec2(p0.x + static_cast<float>(tile_w_), p0.y + static_cast<float>(tile_h_)),
             CellView{0, 0, all, all}, 0.0f, top, contrast);
}

void RunMaps::drawMap(ImDrawList* list, const std::shared_ptr<const model::ForwardResult>& forward, int index,
                      unsigned revision, ImVec2 p0, ImVec2 p1, const CellView& view, const MapContrast& contrast,
                      const MapWeighting& weighting, bool on_gpu) {
  if (index != map_index_ || revision != map_revision_ || !(weighting == map_weighting_) || on_gpu != map_gpu_) {
    map_index_ = index, map_revision_ = revision, map_weighting_ = weighting, map_gpu_ = on_gpu;
    map_tiles_.start(
        std::make_shared<RunTiles>(forward, index, 1, std::min(forward->n, kOverviewSide), weighting, on_gpu),
        ++starts_);
  }
  map_.syncTiles(map_tiles_);
  if (mapPending(index, revision)) {
    list->AddRectFilled(p0, p1, IM_COL32(64, 64, 71, 255));
    return;
  }
  map_.draw(list, 0, p0, p1, view, 0.0f, mapTop(contrast), contrast);
}

}  // namespace attnscope::app
