// The window's one heatmap renderer, for every map view: a scene's heads, a run's grid and its full-size map.
// Heatmaps drawn on the GPU: each head's weights live in an R32F texture (uploaded from the CPU result, or the
// GPU backend's own resident texture) and a small shader maps them through the colour map texture made from
// colorMapTable(ColorMap::Viridis) into a texture that ImGui shows as an image. A head whose map the result does
// not keep (a long scene, and every map of a run) is drawn from tiles: its max-pooled overview, and when zoomed the
// visible cells at screen resolution. On the CPU (and a software-rendered GPU) they come from the tile worker
// (tile_worker.h) and are uploaded; from a GPU backend's resident result on the flash path (a hardware GPU) the tile shader writes them
// straight into the textures drawn (GpuBackend::weightTileRowsToTexture), a bounded band of rows per frame.
#pragma once

#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/export/contrast.h"
#include "window/app_state.h"
#include "window/cell_view.h"
#include "window/gl/heatmap_program.h"
#include "window/gl/textures.h"
#include "window/maps/map_sources.h"
#include "window/maps/tile_worker.h"

namespace attnscope::app {

// How weights become colours (MapContrast, contrastT: attnscope/export/contrast.h, shared with the exports): one
// setting for every map view (heads grid, model grid, full-size map: the window's one `contrast`, view_state.h).

// How a renderer marks what is not on show yet: the probes' prefix ("heads": heads.view_pending, heads.stale_map),
// the placeholder's colour and text, and whether an older map on show says "stale".
struct RendererMarks {
  const char* probe = "heads";
  ImU32 placeholder = IM_COL32(50, 50, 55, 255);
  const char* placeholder_text = "computing overview...";  // null: none
  bool stale = true;
};

class HeatmapRenderer {
 public:
  // Needs a current GL 4.3 context; throws std::runtime_error on a shader error.
  explicit HeatmapRenderer(RendererMarks marks = {});
  ~HeatmapRenderer();
  HeatmapRenderer(const HeatmapRenderer&) = delete;
  HeatmapRenderer& operator=(const HeatmapRenderer&) = delete;

  // Call before drawing (after this frame's edits): uploads what changed since the last call, and on the GPU
  // flash path fills the next band of an overview (state's backend writes it). `value_norms`: each head's map
  // with column j times key j's value norm through head h over the scene's largest (analysis/value_norms.h's
  // sceneValueNorms, computed here once per edit): uploaded so from the CPU result when the maps are kept, and a
  // long scene's tiles (CPU, the tile worker) computed with those key scales.
  void sync(AppState& state, bool value_norms = false);
  // Instead of sync: every map of `tiles`' source (maps() of (rows(), cols()) cells) drawn from its tiles; what
  // landed since the last call is uploaded. Maps are then numbered as the source numbers them.
  void syncTiles(TileWorker& tiles);
  // Map `map`'s overview of the current tiles is on show (syncTiles, sync's long scenes), and its largest allowed
  // weight (0 before it lands).
  bool overviewLanded(int map) const;
  float overviewMax(int map) const;
  // Maps drawn at (tile_w, tile_h) become tiles of one atlas texture, map m at column m % columns, row
  // m / columns, so that ImGui draws them all in one call (a run's grid of 448 maps, each its own texture, took
  // llvmpipe ~80 ms a frame; one texture ~10). A new shape starts a fresh atlas (grey until each is rendered).
  void useAtlas(int columns, int rows, int tile_w, int tile_h);
  // The value norms (heads, n_k) and their largest that the weighted maps were last uploaded with (the cells'
  // tooltips read them rather than computing them again each frame); empty while the switch is off.
  const Matrix& valueNorms() const { return value_norms_; }
  float valueNormTop() const { return value_norm_top_; }
  // Adds head `head`'s heatmap over the screen rectangle [p0, p1) (whole pixels); weights from `lo` to `hi` span
  // the colour map (with `contrast.scale` RowMax each weight is first divided by its row's max; `contrast.log`:
  // a log scale). The map is rendered by the heatmap shader into a texture of exactly that many pixels (level
  // of detail: never larger than what can be shown), and only when the weights, the view or the size changed;
  // every other frame just draws that texture.
  void draw(ImDrawList* list, int head, ImVec2 p0, ImVec2 p1, const CellView& view, float lo, float hi,
            const MapContrast& contrast);
  // Long scenes: overview progress ("overviews 3/8") or "" when every head's overview is in; `stale` is true while
  // some map on show predates the result.
  std::string progress(const AppState& state, bool& stale) const;
  // GPU flash path: an overview or a view tile is still being written, a band of rows per frame; the window
  // draws frames unpaced meanwhile (each frame is what moves the work on).
  bool fillsPending() const;

 private:
  // value_norms_ and value_norm_top_ of `scene`; returns its key scales (heads, n_k): each head's norms over the
  // largest, all 0 where every norm is 0 (no value reaches the output, so every weighted cell is 0).
  Matrix workValueNorms(const Scene& scene);
  // One head's rendered map: an RGBA8 texture the size of its place on screen, and what it shows (`view` in
  // the source texture's texels).
  struct Rendered {
    gl::RenderTarget target;
    CellView view;
    float lo = 0, hi = 0;
    MapContrast contrast;
    unsigned source = 0, mask = 0, source_revision = ~0u, mask_revision = ~0u;
    unsigned atlas = 0;  // the atlas (atlas_made_) its tile was rendered into; 0: its own target
  };
  // A head drawn from tiles: its overview and its last view tile, each an R32F weights texture with an R8 mask
  // texture of the same (rows, cols), covering `request`'s cells. On the GPU path the *_fill textures are being
  // written a band of rows per frame (rows_done of request.out_rows); once full they swap with the drawn ones, so
  // an older overview stays on show (stale) meanwhile.
  struct TiledHead {
    struct Texture {
      unsigned weights = 0, mask = 0, stamp = 0, revision = ~0u;
      float max = 0;  // its largest allowed weight (CPU tiles)
      TileRequest request;
      bool ready = false;
      int rows_done = 0;
    } overview, view, overview_fill, view_fill;
    TileRequest asked{-1};  // the view last requested (head -1: none)
    unsigned asked_revision = ~0u;
  };
  // Its view, range and contrast, at that size: into its own target, or into map `map`'s tile of the atlas.
  void render(Rendered& rendered, int width, int height, int map, bool in_atlas);
  void upload(TiledHead::Texture& texture, const TileWorker::Landed& landed);
  void uploadLanded(int maps, bool log);  // tiles_' tiles landed since the last call
  void sizeFor(int maps);                 // per-map slots for `maps` maps (at least)
  // GPU path: starts filling `fill` with `request` (fresh texture storage, no rows yet).
  void startFill(TiledHead::Texture& fill, const TileRequest& request, unsigned revision);
  TileRequest withKeyScale(TileRequest request) const;  // the GPU path's value-norm scales of its head, when on
  // GPU path: writes the next band of `fill`'s rows, at most `budget` weights recomputed (at least one row);
  // on the last row swaps it with `shown`, which becomes ready. Returns true once swapped.
  bool fillBand(TiledHead::Texture& fill, TiledHead::Texture& shown, std::size_t budget);
  void fillGpuOverviews();
  bool overviewCurrent(std::size_t head) const;  // tiled head `head`'s overview is drawn and of its revision  // GPU
                                                 // path: the next band of the first head whose overview is not current
  // Chooses what head `head` (drawn from tiles) shows of `view` in a (width, height) map; requests the view
  // tile when zoomed. Returns false when nothing has landed yet.
  bool tiledSource(int head, const CellView& view, int width, int height, unsigned& weights, unsigned& mask,
                   CellView& texel_view, unsigned& stamp, bool& stale);

  RendererMarks marks_;
  gl::HeatmapProgram program_;
  unsigned mask_ = 0;  // the scene's mask while the maps are kept: (n_q, n_k), 255 = may attend
  std::vector<unsigned> head_textures_;  // our own R32F copies of the CPU result, one per head
  std::vector<unsigned> head_revisions_;
  std::vector<unsigned> head_uploads_;  // per head: the upload its texture holds (uploads_ when made)
  unsigned uploads_ = 0;
  // Value-norm weighting: on or off as last uploaded, the norms (heads, n_k) and their largest, and the
  // revisions they are of (every head's, then the full one: an edit of any head's W_V may move the largest norm).
  bool weighted_ = false;
  Matrix value_norms_;
  float value_norm_top_ = 0;
  std::vector<unsigned> scales_of_;
  // A long scene's (CPU tiles): the source the norms are of, and norm / largest, (heads, n_k), handed to tiles_.
  std::weak_ptr<SceneTiles> tile_scales_of_;
  std::shared_ptr<const Matrix> tile_scales_;
  // The GPU flash path's: one row of norm / largest per head (the fills' requests point at them), the revisions
  // they are of, and a count of their recomputes that the heads' tile revisions carry (a change refills them).
  std::vector<RowVector> gpu_key_scales_;
  std::vector<unsigned> gpu_scales_of_;
  unsigned gpu_scales_made_ = 0;
  std::vector<unsigned> sources_;  // the weights texture each head is drawn from this frame
  std::vector<unsigned> source_revisions_;
  std::vector<Rendered> rendered_;
  struct Atlas {
    gl::RenderTarget target;
    int columns = 0, rows = 0, tile_w = 0, tile_h = 0;
  } atlas_;
  unsigned atlas_made_ = 0;  // counts the atlases made: a Rendered of an older one is rendered again
  unsigned mask_revision_ = ~0u;
  // Long scenes (the result keeps no maps).
  bool tiled_ = false;
  int n_q_ = 0, n_k_ = 0;
  unsigned full_revision_ = ~0u, stamps_ = 0;             // full_revision_: the overviews' revision (AppState's)
  unsigned result_revision_ = ~0u;                        // the last result logged (ATTNSCOPE_TILE_LOG)
  std::chrono::steady_clock::time_point tiles_reset_at_;  // when the overviews started (ATTNSCOPE_TILE_LOG)
  TileWorker* tiles_ = nullptr;  // AppState's (overviews()) or syncTiles': null before the first long scene
  // The state's GPU backend while its resident result keeps no maps (the flash path): it writes the tiles. Else null.
  ResidentMaps* gpu_tiles_ = nullptr;
  std::vector<unsigned> tile_revisions_;  // per head: the revision its tiles must have to be current
  std::vector<TiledHead> tiled_heads_;
  std::vector<bool> upload_pending_;  // per head: its new map waits for a later frame's upload budget
  bool view_pending_ = false;         // the zoomed view's tile has not landed (probed for the scripted tests)
};

}  // namespace attnscope::app
