// Heatmap textures, and the heatmap shader rendering each head's map into a texture of its on-screen size.
#include "window/maps/heatmap_view.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "attnscope/analysis/value_norms.h"
#include "attnscope/settings.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// Weights uploaded per frame, at most (past the first head): a result of 8 maps of 1024 x 1024 lands over 4
// frames instead of stalling one (issue 14: 300-450 ms on llvmpipe); heads not yet uploaded show their previous
// map, marked stale.
constexpr std::size_t kUploadBudgetWeights = std::size_t{1} << 21;

// GPU flash path: weights recomputed (score cells) per frame, at most, for the overviews and again for a view
// tile (at least one output row each): 2^24 cells of d_k 64 are ~2 GFLOP, a millisecond or two on a desktop GPU,
// so a 32768-token head's overview (2^30 cells) fills over 64 frames and a frame never waits for a whole one.
constexpr std::size_t kGpuTileBudgetCells = std::size_t{1} << 24;

bool covers(const TileRequest& r, const CellView& view) {
  return static_cast<float>(r.col0) <= view.col0 && static_cast<float>(r.row0) <= view.row0 &&
         static_cast<float>(r.col1) >= view.col1 && static_cast<float>(r.row1) >= view.row1;
}

// Each head's revision and the scene's: what a scene's value norms were worked from.
std::vector<unsigned> normRevisions(const AppState& state, int heads) {
  std::vector<unsigned> of(static_cast<std::size_t>(heads));
  for (int h = 0; h < heads; ++h) of[static_cast<std::size_t>(h)] = state.headRevision(h);
  of.push_back(state.fullRevision());
  return of;
}

}  // namespace

Matrix HeatmapRenderer::workValueNorms(const Scene& scene) {
  // The scales are of the double norms: a norm past float32's range (a value row of 3e38s) is inf in
  // value_norms_, yet norm / largest is a finite number in [0, 1].
  const Eigen::MatrixXd norms = sceneValueNormsDouble(scene);
  value_norms_ = norms.cast<float>();
  const double top = norms.size() > 0 ? norms.maxCoeff() : 0.0;
  value_norm_top_ = static_cast<float>(top);
  return top > 0 ? Matrix((norms / top).cast<float>()) : Matrix(Matrix::Zero(norms.rows(), norms.cols()));
}

HeatmapRenderer::HeatmapRenderer(RendererMarks marks) : marks_(marks) { mask_ = gl::makeNearestTexture(); }

HeatmapRenderer::~HeatmapRenderer() {
  for (Rendered& r : rendered_) gl::deleteRenderTarget(r.target);
  gl::deleteRenderTarget(atlas_.target);
  gl::deleteTextures(head_textures_.data(), head_textures_.size());
  for (TiledHead& t : tiled_heads_)
    for (TiledHead::Texture* x : {&t.overview, &t.view, &t.overview_fill, &t.view_fill}) {
      const unsigned textures[] = {x->weights, x->mask};
      gl::deleteTextures(textures, 2);
    }
  gl::deleteTextures(&mask_, 1);
}

void HeatmapRenderer::sync(AppState& state, bool value_norms) {
  const Scene& scene = state.headsScene();
  const int heads = scene.numHeads();
  const bool cpu = !state.resultResident();  // the maps are in result(): ours to upload
  // Else they are on the GPU (GpuBackend's resident result): drawn from its textures, or from tiles it writes.
  ResidentMaps* const resident = cpu ? nullptr : state.backend().residentMaps();
  // A long scene computed off the UI thread (its result keeps no maps, or the edited scene will not): every head
  // is drawn from tiles, its overview computed from the scene before the result lands.
  tiles_ = state.overviews();
  // A long scene computed on the UI thread by a GPU backend (a hardware GPU): its resident result keeps no maps,
  // so every head is drawn from tiles the GPU writes into our textures.
  gpu_tiles_ = resident && !resident->keepsResidentMaps() ? resident : nullptr;
  tiled_ = gpu_tiles_ ||
           (cpu && tiles_ &&
            (state.headsFromOverviews() || (!state.result().heads.empty() && !state.result().heads[0].hasMap())));
  n_q_ = scene.nQ(), n_k_ = scene.nK();
  tile_revisions_.resize(static_cast<std::size_t>(heads));
  if (gpu_tiles_) {
    // Each head's tiles follow its own revision: a one-head edit restarts only that head's overview.
    tiled_heads_.resize(static_cast<std::size_t>(heads));
    // Value-norm weighting: the tiles' key scales, worked once per edit; they enter each head's tile revision
    // (the high bits: how many times they were made, 0 when off), so a switch or a new largest norm refills.
    unsigned scales_mark = 0;
    if (value_norms) {
      std::vector<unsigned> of = normRevisions(state, heads);
      if (gpu_key_scales_.size() != static_cast<std::size_t>(heads) || of != gpu_scales_of_) {
        const Matrix scales = workValueNorms(scene);
        gpu_key_scales_.resize(static_cast<std::size_t>(heads));
        for (int h = 0; h < heads; ++h) gpu_key_scales_[static_cast<std::size_t>(h)] = scales.row(h);
        gpu_scales_of_ = std::move(of);
        ++gpu_scales_made_;
      }
      scales_mark = ((gpu_scales_made_ & 0x7ffu) + 1u) << 20;
    } else if (!gpu_key_scales_.empty()) {
      gpu_key_scales_.clear(), gpu_scales_of_.clear();
      value_norms_.resize(0, 0), value_norm_top_ = 0;
    }
    for (int h = 0; h < heads; ++h) tile_revisions_[static_cast<std::size_t>(h)] = state.headRevision(h) ^ scales_mark;
    fillGpuOverviews();
  } else if (tiled_) {
    const bool log = flagSetting("ATTNSCOPE_TILE_LOG");
    if (full_revision_ != tiles_->revision()) {
      full_revision_ = tiles_->revision();
      tiles_reset_at_ = std::chrono::steady_clock::now();
      if (log)
        std::fprintf(stderr, "tiles: scene %u: overviews started (%d x %d, %d heads)\n", full_revision_, scene.nQ(),
                     scene.nK(), heads);
    }
    if (log && result_revision_ != state.fullRevision() && !state.weightsPending()) {
      result_revision_ = state.fullRevision();  // measurement aid: when the result (outputs, m, l) lands
      std::fprintf(
          stderr, "tiles: result %u landed after %.0f ms (computed in %.0f ms)\n", result_revision_,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tiles_reset_at_).count(),
          state.computeMs());
    }
    // Value-norm weighting: the tiles' key scales, worked once per scene (O(heads n d)) on the scene drawn.
    const std::shared_ptr<SceneTiles>& drawn = state.overviewSource();
    if (value_norms && drawn) {
      if (tile_scales_of_.lock() != drawn) {
        tile_scales_ = std::make_shared<const Matrix>(workValueNorms(*drawn->scene()));
        tile_scales_of_ = drawn;
      }
      tiles_->setKeyScales(drawn.get(), tile_scales_);
    } else if (drawn) {
      tiles_->setKeyScales(drawn.get(), nullptr);
      if (tile_scales_) value_norms_.resize(0, 0), value_norm_top_ = 0;
      tile_scales_.reset(), tile_scales_of_.reset();
    }
    uploadLanded(heads, log);
  } else if (state.fullRevision() != mask_revision_) {
    mask_revision_ = state.fullRevision();
    // mask: (n_q, n_k) bytes, 255 = may attend (maps kept: a scene small enough for its (n, n) bytes)
    MaskMatrix allowed = allowedMask(scene);
    for (Eigen::Index i = 0; i < allowed.size(); ++i) allowed.data()[i] = allowed.data()[i] ? 255 : 0;
    gl::setMaskTexels(mask_, scene.nK(), scene.nQ(), allowed.data());
  }
  sizeFor(heads);
  // Weighted maps are ours to upload from the CPU result (kept maps), whichever backend computed them; a change of
  // the switch or of the scales re-uploads every head.
  const bool weighted = value_norms && !tiled_;
  if (weighted) {
    std::vector<unsigned> of = normRevisions(state, heads);
    if (!weighted_ || of != scales_of_) {
      workValueNorms(scene);  // the kept maps are scaled as uploaded, below
      scales_of_ = std::move(of);
      std::fill(head_revisions_.begin(), head_revisions_.end(), ~0u);
    }
  } else if (weighted_) {
    std::fill(head_revisions_.begin(), head_revisions_.end(), ~0u);
    if (!(tiled_ && value_norms)) value_norms_.resize(0, 0), value_norm_top_ = 0;  // a long scene's are its tiles'
  }
  weighted_ = weighted;
  const bool own = cpu || weighted;
  std::size_t uploaded = 0;
  for (int h = 0; h < heads; ++h) {
    const std::size_t at = static_cast<std::size_t>(h);
    if (own && !tiled_ && head_revisions_[at] != state.headRevision(h)) {
      // weights: (n_q, n_k) row-major -> texture n_k wide, n_q tall, row i = query i
      const Matrix& kept = state.result().heads[at].weights;
      Matrix scaled;
      // Every value norm 0 (no value reaches the output): every weighted cell is 0.
      if (weighted)
        scaled = value_norm_top_ > 0 ? Matrix(kept.array().rowwise() * (value_norms_.row(h).array() / value_norm_top_))
                                     : Matrix(Matrix::Zero(kept.rows(), kept.cols()));
      const Matrix& w = weighted ? scaled : kept;
      if (uploaded > 0 && uploaded + static_cast<std::size_t>(w.size()) > kUploadBudgetWeights) {
        upload_pending_[at] = true;  // next frame; the previous map stays on show, marked stale
      } else {
        if (!head_textures_[at]) head_textures_[at] = gl::makeNearestTexture();
        gl::setWeightTexels(head_textures_[at], static_cast<int>(w.cols()), static_cast<int>(w.rows()), w.data());
        head_revisions_[at] = state.headRevision(h);
        head_uploads_[at] = ++uploads_;
        uploaded += static_cast<std::size_t>(w.size());
      }
    }
    // tiled: tiledSource picks a tile's texture
    sources_[at] = tiled_ ? 0 : (!weighted && resident) ? resident->weightsTexture(h) : head_textures_[at];
    source_revisions_[at] = own ? head_uploads_[at] : state.headRevision(h);
  }
}

void HeatmapRenderer::sizeFor(int maps) {
  // A map's own texture (a scene's kept map, uploaded) is made when first needed: a run's maps are all tiles.
  head_textures_.resize(std::max(head_textures_.size(), static_cast<std::size_t>(maps)), 0);
  head_revisions_.resize(head_textures_.size(), ~0u);
  head_uploads_.resize(head_textures_.size(), 0);
  if (rendered_.size() < static_cast<std::size_t>(maps)) rendered_.resize(static_cast<std::size_t>(maps));
  sources_.resize(static_cast<std::size_t>(maps));
  source_revisions_.resize(static_cast<std::size_t>(maps));
  upload_pending_.assign(static_cast<std::size_t>(maps), false);
  tile_revisions_.resize(static_cast<std::size_t>(maps));
}

void HeatmapRenderer::uploadLanded(int maps, bool log) {
  std::fill(tile_revisions_.begin(), tile_revisions_.end(), tiles_->tilesRevision());
  tiled_heads_.resize(static_cast<std::size_t>(maps));
  for (const TileWorker::Landed& landed : tiles_->take()) {
    if (landed.map >= maps) continue;
    TiledHead& t = tiled_heads_[static_cast<std::size_t>(landed.map)];
    upload(landed.overview ? t.overview : t.view, landed);
    // Measurement aid (docs/window.md, long scenes): when each overview lands, counted from the edit that started it.
    if (landed.overview && log)
      std::fprintf(
          stderr, "tiles: head %d overview after %.0f ms\n", landed.map + 1,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tiles_reset_at_).count());
  }
}

void HeatmapRenderer::syncTiles(TileWorker& tiles) {
  const std::shared_ptr<MapSource> source = tiles.source();
  if (!source) return;
  const int maps = source->maps();
  tiles_ = &tiles, gpu_tiles_ = nullptr, tiled_ = true;
  n_q_ = source->rows(), n_k_ = source->cols();
  full_revision_ = tiles.revision();
  sizeFor(maps);
  uploadLanded(maps, false);
  for (std::size_t m = 0; m < sources_.size(); ++m) sources_[m] = 0, source_revisions_[m] = 0;
}

void HeatmapRenderer::useAtlas(int columns, int rows, int tile_w, int tile_h) {
  Atlas& a = atlas_;
  if (a.target.texture && a.columns == columns && a.rows == rows && a.tile_w == tile_w && a.tile_h == tile_h) return;
  a.columns = columns, a.rows = rows, a.tile_w = tile_w, a.tile_h = tile_h;
  gl::allocateRenderTarget(a.target, columns * tile_w, rows * tile_h);
  gl::clearRenderTarget(a.target, 0.25f, 0.25f, 0.28f, 1.0f);  // fresh texels are undefined
  ++atlas_made_;
}

bool HeatmapRenderer::overviewLanded(int map) const {
  const std::size_t m = static_cast<std::size_t>(map);
  return m < tiled_heads_.size() && m < tile_revisions_.size() && overviewCurrent(m);
}

float HeatmapRenderer::overviewMax(int map) const {
  const std::size_t m = static_cast<std::size_t>(map);
  return m < tiled_heads_.size() && tiled_heads_[m].overview.ready ? tiled_heads_[m].overview.max : 0.0f;
}

void HeatmapRenderer::upload(TiledHead::Texture& texture, const TileWorker::Landed& landed) {
  if (!texture.weights) texture.weights = gl::makeNearestTexture(), texture.mask = gl::makeNearestTexture();
  const Matrix& values = landed.tile.values;  // (rows, cols) row-major: a texture cols wide, rows tall
  const int cols = static_cast<int>(values.cols()), rows = static_cast<int>(values.rows());
  gl::setWeightTexels(texture.weights, cols, rows, values.data());
  // The tile's mask (1 = masked, evaluated from indices by the engine) as the shader's 255 = may attend.
  std::vector<std::uint8_t> allowed(static_cast<std::size_t>(landed.tile.masked.size()));
  texture.max = 0;
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    allowed[i] = landed.tile.masked.data()[i] ? 0 : 255;
    if (allowed[i]) texture.max = std::max(texture.max, values.data()[i]);
  }
  gl::setMaskTexels(texture.mask, cols, rows, allowed.data());
  texture.request = landed.request;
  texture.request.out_rows = rows, texture.request.out_cols = cols;
  texture.revision = landed.tiles_revision;
  texture.stamp = ++stamps_;
  texture.ready = true;
}

bool HeatmapRenderer::tiledSource(int head, const CellView& view, int width, int height, unsigned& weights,
                                  unsigned& mask, CellView& texel_view, unsigned& stamp, bool& stale) {
  TiledHead& t = tiled_heads_[static_cast<std::size_t>(head)];
  const unsigned revision = tile_revisions_[static_cast<std::size_t>(head)];
  const bool whole = view.col0 <= 0 && view.row0 <= 0 && view.col1 >= static_cast<float>(n_k_) &&
                     view.row1 >= static_cast<float>(n_q_);
  // Texels of `texture` for the cells of `view`: [request's cells) -> [0, out).
  const auto use = [&](const TiledHead::Texture& texture) {
    const TileRequest& r = texture.request;
    const float sx = static_cast<float>(r.out_cols) / static_cast<float>(r.col1 - r.col0);
    const float sy = static_cast<float>(r.out_rows) / static_cast<float>(r.row1 - r.row0);
    texel_view = CellView{(view.col0 - static_cast<float>(r.col0)) * sx, (view.row0 - static_cast<float>(r.row0)) * sy,
                          (view.col1 - static_cast<float>(r.col0)) * sx, (view.row1 - static_cast<float>(r.row0)) * sy};
    weights = texture.weights, mask = texture.mask, stamp = texture.stamp;
    stale = stale || texture.revision != revision;
  };
  if (!whole) {
    // The visible cells at screen resolution: texels per cell min(1, pixels per cell). At deep zoom (a cell per
    // several pixels) the tile is exact weights and reaches half a view past each side, so that a pan stays
    // inside the last tile for a while (it is tiny: a few thousand cells).
    const float cells_x = view.col1 - view.col0, cells_y = view.row1 - view.row0;
    const bool exact = cells_x <= static_cast<float>(width) && cells_y <= static_cast<float>(height);
    const float pad_x = exact ? cells_x * 0.5f : 0.0f, pad_y = exact ? cells_y * 0.5f : 0.0f;
    const TileRequest& asked = t.asked;
    const bool asked_fits = asked.head == head && t.asked_revision == revision && covers(asked, view) &&
                            (exact ? asked.pooling == Pooling::None
                                   : asked.pooling == Pooling::Max &&
                                         std::abs(static_cast<float>(asked.out_cols) -
                                                  static_cast<float>(asked.col1 - asked.col0) / cells_x * width) < 2);
    if (!asked_fits) {
      const int r0 = std::clamp(static_cast<int>(std::floor(view.row0 - pad_y)), 0, n_q_ - 1);
      const int r1 = std::clamp(static_cast<int>(std::ceil(view.row1 + pad_y)), r0 + 1, n_q_);
      const int c0 = std::clamp(static_cast<int>(std::floor(view.col0 - pad_x)), 0, n_k_ - 1);
      const int c1 = std::clamp(static_cast<int>(std::ceil(view.col1 + pad_x)), c0 + 1, n_k_);
      const int out_rows = exact ? r1 - r0 : std::min(r1 - r0, height);
      const int out_cols = exact ? c1 - c0 : std::min(c1 - c0, width);
      t.asked = TileRequest{head, r0, r1, c0, c1, exact ? Pooling::None : Pooling::Max, out_rows, out_cols};
      t.asked_revision = revision;
      if (gpu_tiles_)
        startFill(t.view_fill, withKeyScale(t.asked), revision);  // written below, a band per frame
      else
        tiles_->requestView(head, r0, r1, c0, c1, out_rows, out_cols);
    }
    // GPU path: the view tile asked for, a bounded band of it per frame (the overview shows until it is in).
    if (gpu_tiles_ && t.view_fill.revision == revision && t.view_fill.request.head == head &&
        t.view_fill.rows_done < t.view_fill.request.out_rows)
      fillBand(t.view_fill, t.view, kGpuTileBudgetCells);
    if (t.view.ready && t.view.request.head == head && t.view.revision == revision && covers(t.view.request, view)) {
      use(t.view);
      return true;
    }
    view_pending_ = true;
  }
  if (!t.overview.ready) return false;
  use(t.overview);
  return true;
}

std::string HeatmapRenderer::progress(const AppState& state, bool& stale) const {
  stale = std::any_of(upload_pending_.begin(), upload_pending_.end(), [](bool b) { return b; });
  if (!tiled_) return "";
  if (!gpu_tiles_ && (!tiles_ || tiles_->revision() == ~0u)) return "";  // ~0u: no long scene being computed
  const int heads = state.headsScene().numHeads();
  for (std::size_t h = 0; h < tiled_heads_.size() && h < tile_revisions_.size(); ++h)
    stale = stale || (tiled_heads_[h].overview.ready && tiled_heads_[h].overview.revision != tile_revisions_[h]);
  int done = 0, head = 0;
  float fraction = 0;
  if (gpu_tiles_) {  // the overviews this renderer fills on the GPU, in head order
    for (std::size_t h = 0; h < tiled_heads_.size(); ++h) {
      const TiledHead& t = tiled_heads_[h];
      if (overviewCurrent(h)) {
        ++done;
      } else if (done == static_cast<int>(h)) {
        head = static_cast<int>(h);
        const bool filling = t.overview_fill.revision == tile_revisions_[h];
        fraction = filling ? static_cast<float>(t.overview_fill.rows_done) /
                                 static_cast<float>(std::max(1, t.overview_fill.request.out_rows))
                           : 0.0f;
      }
    }
  } else {
    done = tiles_->revision() == full_revision_ ? tiles_->overviewsDone() : 0;
    head = tiles_->overviewMap(), fraction = tiles_->overviewFraction();
  }
  if (done >= heads) return "";
  char text[64];
  std::snprintf(text, sizeof text, "overviews %d/%d (head %d: %.0f%%)", done, heads, head + 1, 100.0 * fraction);
  return text;
}

bool HeatmapRenderer::overviewCurrent(std::size_t head) const {
  const TiledHead::Texture& overview = tiled_heads_[head].overview;
  return overview.ready && overview.revision == tile_revisions_[head];
}

bool HeatmapRenderer::fillsPending() const {
  if (!gpu_tiles_) return false;
  for (std::size_t h = 0; h < tiled_heads_.size() && h < tile_revisions_.size(); ++h) {
    const TiledHead& t = tiled_heads_[h];
    if (!overviewCurrent(h)) return true;
    if (t.view_fill.revision == tile_revisions_[h] && t.view_fill.rows_done < t.view_fill.request.out_rows) return true;
  }
  return false;
}

TileRequest HeatmapRenderer::withKeyScale(TileRequest request) const {
  const std::size_t h = static_cast<std::size_t>(request.head);
  if (h < gpu_key_scales_.size() && gpu_key_scales_[h].size() == n_k_) request.key_scale = &gpu_key_scales_[h];
  return request;
}

void HeatmapRenderer::startFill(TiledHead::Texture& fill, const TileRequest& request, unsigned revision) {
  if (!fill.weights) fill.weights = gl::makeNearestTexture(), fill.mask = gl::makeNearestTexture();
  const bool pooled = request.pooling != Pooling::None;
  fill.request = request;
  if (!pooled) fill.request.out_rows = request.row1 - request.row0, fill.request.out_cols = request.col1 - request.col0;
  // Fresh storage each time: no store of this fill can touch texels an earlier draw still samples.
  gl::setWeightTexels(fill.weights, fill.request.out_cols, fill.request.out_rows, nullptr);
  gl::setMaskTexels(fill.mask, fill.request.out_cols, fill.request.out_rows, nullptr);
  fill.revision = revision;
  fill.rows_done = 0;
  fill.ready = false;
}

bool HeatmapRenderer::fillBand(TiledHead::Texture& fill, TiledHead::Texture& shown, std::size_t budget) {
  const TileRequest& r = fill.request;
  // Weights one output row recomputes: the query rows its blocks pool (about rows / out_rows) times every key.
  const std::size_t per_row = static_cast<std::size_t>(std::max(1, (r.row1 - r.row0 + r.out_rows - 1) / r.out_rows)) *
                              static_cast<std::size_t>(r.col1 - r.col0);
  const int band = static_cast<int>(std::clamp<std::size_t>(budget / per_row, 1, static_cast<std::size_t>(r.out_rows)));
  const int y1 = std::min(r.out_rows, fill.rows_done + band);
  gpu_tiles_->weightTileRowsToTexture(r, fill.rows_done, y1, fill.weights, fill.mask);
  fill.rows_done = y1;
  if (fill.rows_done < r.out_rows) return false;
  std::swap(fill, shown);  // the full tile is drawn from now on; the older one's textures are filled next time
  shown.ready = true;
  shown.stamp = ++stamps_;
  fill.ready = false;
  fill.revision = ~0u;
  return true;
}

void HeatmapRenderer::fillGpuOverviews() {
  // The first head (in order) whose overview is not current gets the next band: heads land one after another,
  // as on the CPU path, and the progress reads "overviews 3/8 (head 4: 40%)".
  for (std::size_t h = 0; h < tiled_heads_.size(); ++h) {
    TiledHead& t = tiled_heads_[h];
    const unsigned revision = tile_revisions_[h];
    if (overviewCurrent(h)) continue;
    const TileRequest request = withKeyScale(overviewRequest(static_cast<int>(h), n_q_, n_k_));
    const TileRequest& f = t.overview_fill.request;
    if (t.overview_fill.revision != revision || f.row1 != request.row1 || f.col1 != request.col1 ||
        f.head != request.head)
      startFill(t.overview_fill, request, revision);  // a recomputed result restarts the head's overview
    fillBand(t.overview_fill, t.overview, kGpuTileBudgetCells);
    return;
  }
}

void HeatmapRenderer::draw(ImDrawList* list, int head, ImVec2 p0, ImVec2 p1, const CellView& view, float lo, float hi,
                           const MapContrast& contrast) {
  Rendered& r = rendered_[static_cast<std::size_t>(head)];
  const int width = std::max(1, static_cast<int>(p1.x - p0.x)), height = std::max(1, static_cast<int>(p1.y - p0.y));
  const std::size_t at = static_cast<std::size_t>(head);
  unsigned weights = sources_[at], mask = mask_, source_revision = source_revisions_[at],
           mask_revision = mask_revision_;
  CellView texel_view = view;
  bool stale = upload_pending_[at];
  if (tiled_) {
    unsigned stamp = 0;
    if (!tiledSource(head, view, width, height, weights, mask, texel_view, stamp, stale)) {
      // Nothing landed yet for this map: a placeholder, never a wait.
      list->AddRectFilled(p0, p1, marks_.placeholder);
      if (marks_.placeholder_text)
        list->AddText(ImVec2(p0.x + 4, p0.y + 4), IM_COL32(220, 220, 220, 255), marks_.placeholder_text);
      probeRect(std::string(marks_.probe) + ".view_pending", p0, p1);
      return;
    }
    source_revision = mask_revision = stamp;
  }
  if (view_pending_) probeRect(std::string(marks_.probe) + ".view_pending", p0, p1), view_pending_ = false;
  const bool same_view = r.view.col0 == texel_view.col0 && r.view.row0 == texel_view.row0 &&
                         r.view.col1 == texel_view.col1 && r.view.row1 == texel_view.row1;
  const Atlas& a = atlas_;
  const bool in_atlas = a.target.texture && head < a.columns * a.rows && width == a.tile_w && height == a.tile_h;
  const bool same_place = in_atlas ? r.atlas == atlas_made_ : r.atlas == 0 && r.target.width == width &&
                                                                  r.target.height == height;
  if (!same_place || !same_view || r.lo != lo || r.hi != hi || r.contrast != contrast || r.source != weights ||
      r.mask != mask || r.source_revision != source_revision || r.mask_revision != mask_revision) {
    r.view = texel_view, r.lo = lo, r.hi = hi, r.contrast = contrast;
    r.source = weights, r.mask = mask, r.source_revision = source_revision, r.mask_revision = mask_revision;
    render(r, width, height, head, in_atlas);
  }
  // The texture's first row is the bottom of the map (GL), so v runs from 1 at the top to 0; an atlas' tile row
  // k (from the top) is its GL rows [(rows - 1 - k) tile_h, (rows - k) tile_h).
  const ImVec2 p1_drawn(p0.x + static_cast<float>(width), p0.y + static_cast<float>(height));
  if (in_atlas) {
    const float cols = static_cast<float>(a.columns), rows = static_cast<float>(a.rows);
    const float col = static_cast<float>(head % a.columns), row = static_cast<float>(head / a.columns);
    list->AddImage(gl::imguiTexture(a.target.texture), p0, p1_drawn, ImVec2(col / cols, (rows - row) / rows),
                   ImVec2((col + 1) / cols, (rows - 1 - row) / rows));
  } else {
    list->AddImage(gl::imguiTexture(r.target.texture), p0, p1_drawn, ImVec2(0, 1), ImVec2(1, 0));
  }
  if (stale && marks_.stale) {  // an older result (or a map not uploaded yet) is on show
    const ImVec2 size = ImGui::CalcTextSize("stale");
    list->AddRectFilled(ImVec2(p0.x + 2, p0.y + 2), ImVec2(p0.x + size.x + 8, p0.y + size.y + 4),
                        IM_COL32(0, 0, 0, 170));
    list->AddText(ImVec2(p0.x + 5, p0.y + 3), IM_COL32(255, 190, 80, 255), "stale");
    probeRect(std::string(marks_.probe) + ".stale_map", p0, p1);
  }
}

void HeatmapRenderer::render(Rendered& rendered, int width, int height, int map, bool in_atlas) {
  // Its own target: fresh storage each time, as drawn whole. An atlas tile: drawn over in place.
  if (!in_atlas) gl::allocateRenderTarget(rendered.target, width, height);
  rendered.atlas = in_atlas ? atlas_made_ : 0;
  // A row's max over the whole source texture's row (a head's map, or its overview; a zoomed view tile holds
  // the columns in view only, so there the max is of those): HeatmapCells' default row span.
  gl::HeatmapCells cells;
  cells.weights = rendered.source, cells.mask = rendered.mask, cells.view = rendered.view;
  cells.lo = rendered.lo, cells.hi = rendered.hi, cells.contrast = rendered.contrast;
  if (in_atlas)
    program_.draw(atlas_.target, (map % atlas_.columns) * width,
                  (atlas_.rows - 1 - map / atlas_.columns) * height, width, height, cells);
  else
    program_.draw(rendered.target, 0, 0, width, height, cells);
}

}  // namespace attnscope::app
