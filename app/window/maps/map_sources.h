// What the tile worker (tile_worker.h) reads: a long scene's heads, from the scene alone, and a run's maps, from
// its forward. Each is made on the UI thread and then read by the worker only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/model/forward.h"
#include "attnscope/model/model.h"
#include "window/maps/tile_worker.h"

namespace attnscope::app {

// A scene's heads, each overview at kOverviewSide a side at most, from q, k projected here (headQuery, headKey)
// with each query row's m, l found on the way (overviewRows): no forward pass needed. A head's view tiles need
// its overview first (its m, l).
class SceneTiles final : public MapSource {
 public:
  // `scene` is shared with the window's compute request, not copied (64 MB at 32k tokens, d_model 512).
  explicit SceneTiles(std::shared_ptr<const Scene> scene);
  const std::shared_ptr<const Scene>& scene() const { return scene_; }
  int maps() const override { return scene_->numHeads(); }
  int rows() const override { return scene_->nQ(); }
  int cols() const override { return scene_->nK(); }
  std::pair<int, int> overviewSize() const override;
  bool viewsNeedOverview() const override { return true; }
  void overviewRows(int map, int y0, int y1, Tile& overview, const RowVector* key_scale) override;
  void finishOverview(int map) override;
  Tile viewTile(const TileRequest& request) override;

 private:
  std::shared_ptr<const Scene> scene_;
  Result result_;  // per head q, k, row_max, row_sum only, once its overview is in
  Matrix q_, k_;   // the head being built
  RowVector m_, l_;
};

// Value-norm weighting of a run's maps: off, or on with the checkpoint the norms are worked from (valueNorms of
// its weights and the forward's ln_1), or on with none: the norms the forward carries (a capture storing v and
// W_O's rows, carriedValueNorms).
struct MapWeighting {
  bool on = false;
  std::shared_ptr<const model::Model> checkpoint;
  bool operator==(const MapWeighting& other) const { return on == other.on && checkpoint == other.checkpoint; }
};

// A run's maps, numbered layer * heads + head (`first`, `count`: a range of them, renumbered from 0: the
// full-size map is one), from its forward: kept maps pooled, or recomputed from Q, K and the row statistics
// (ForwardResult::tile). `overview`: the blocks a side each overview gets. `weighting` on: each map's columns times
// valueNormScales (worked per layer on the worker).
// `on_gpu` (the window's GPU backend chosen): maps not kept are recomputed by the worker thread's own GPU engine
// (a headless context of its own, made on first use and kept for the thread's life): each head's q, k and row
// statistics uploaded once (GpuBackend::residentHead), a head without statistics (a capture without lse) having
// them found on the GPU and handed to the forward's reader for the CPU's use. Found statistics are checked on
// sampled query rows against the CPU; a failed check, or no GPU, draws on the CPU from then on, said in notice().
class RunTiles final : public MapSource {
 public:
  RunTiles(std::shared_ptr<const model::ForwardResult> forward, int first, int count, int overview,
           MapWeighting weighting, bool on_gpu = false);
  int maps() const override { return count_; }
  int rows() const override { return forward_->n; }
  int cols() const override { return forward_->n; }
  std::pair<int, int> overviewSize() const override { return {overview_, overview_}; }
  int overviewStep() const override { return overview_; }  // a map at a time: ForwardResult::tile pools whole maps
  void overviewRows(int map, int y0, int y1, Tile& overview, const RowVector* key_scale) override;
  Tile viewTile(const TileRequest& request) override;
  std::string notice() const override;
  int gpuTiles() const override { return gpu_tiles_; }

 private:
  // The map's layer and head, and its key scales when weighted (else `given`).
  TileRequest resolve(TileRequest request, int& layer, RowVector& scales, const RowVector* given);
  // `request` (head: of `layer`) on the worker's GPU; false where the CPU must draw it (maps kept, no GPU, a
  // failed check or a head the device refused).
  bool gpuTile(int layer, const TileRequest& request, Tile& out);
  Tile tile(int layer, const TileRequest& request);  // on the GPU when it can, else ForwardResult::tile
  void setNotice(std::string text);
  std::shared_ptr<const model::ForwardResult> forward_;
  int first_ = 0, count_ = 0, overview_ = 1;
  bool on_gpu_ = false;
  std::uint64_t id_;  // this source among all made: which one's head the worker's GPU holds
  mutable std::mutex notice_mutex_;
  std::string notice_;  // why the GPU does not draw (empty: it does, or was not asked)
  std::atomic<int> gpu_tiles_{0};
  MapWeighting weighting_;
  int scales_layer_ = -1;
  Matrix layer_scales_;  // (heads, n) of scales_layer_
};

// Value-norm weighting (Kobayashi et al. 2020) for the window's maps of `layer`: (heads, n), head h's value norm
// for key j (head_finding.h's valueNorms: ||(x_j W_V + b_V) W_O^h||, of `checkpoint`, or with none the norms the
// forward carries) over the layer's largest, so that a weighted map alpha_ij * scale(h, j) lies in 0..1 like the
// weights, and heads of one layer compare.
Matrix valueNormScales(const model::Model* checkpoint, const model::ForwardResult& forward, int layer);

}  // namespace attnscope::app
