// What a forward over any family gives (every layer's per-head attention, maps kept or tiles on demand, the
// layer inputs and the final hidden states) and what it is asked (ForwardOptions); attention rollout over it.
// The forward itself: model/model.h (modelForward) over the one Weights (model/architecture.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/compute/backend.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/scene.h"
#include "attnscope/types.h"

namespace attnscope::model {

struct ForwardOptions {
  bool keep_ln1 = true;  // keep each layer's ln_1 output (the rows a layer scene starts from)
  // Who computes each layer's attention (Q K V, the weights, the heads' outputs and c_proj): null, the
  // forward's own fused CPU loop; else this backend (the GPU engine, say), given the layer as a scene.
  Backend* attention = nullptr;
  // Called after each layer with the layers done (1 .. n_layer), on the forward's thread: a window shows
  // progress and stops a long forward. Returning false stops it: the forward throws ForwardCancelled.
  std::function<bool(int layers_done)> progress{};  // {}: designated initializers may leave it out
  // Whether the forward keeps every (n, n) map: Auto while layers x heads x n^2 floats fit mapsLimitBytes()
  // (compute/tiles.h, ATTNSCOPE_MAPS_LIMIT), else per layer only what tiles are recomputed from (O(n d)).
  MapPolicy maps = MapPolicy::Auto;
  // >= 0: ForwardResult::trace keeps the residual stream at this token (direct logit attribution reads it).
  int trace_position = -1;
  // [SECTION] interventions (model/patching.h)
  // Keep each layer's input residual stream and its heads' outputs before W_O (ForwardResult::residual,
  // head_outputs): what an intervention starts from and patches in.
  bool keep_residual = false;
  // With start_residual: the forward starts at this layer from `start_residual` (n, hidden), the residual stream
  // entering it (a kept run's residual[start_layer], edited or not); the layers before are not run (their maps,
  // statistics and kept matrices left empty) and the embedding's result is replaced.
  int start_layer = 0;
  const Matrix* start_residual = nullptr;
  // Called at each layer run with its heads' outputs (n, n_head head_dim; head h in columns [h hd, (h + 1) hd))
  // before W_O: an ablation zeroes or replaces a head's columns, activation patching copies another run's. Not with
  // `attention` (the backend computes the heads and W_O as one).
  std::function<void(int layer, Matrix& heads)> edit_heads{};
  // Called at each layer run with its MLP's output (n, hidden) before it joins the residual stream (before a branch
  // norm where the layer has one): an ablation or a patch of the MLP. Not with `attention`.
  std::function<void(int layer, Matrix& mlp_out)> edit_mlp{};
  // > 1 (with start_residual, maps dropped): the n rows are `segments` sequences of n / segments tokens run side by
  // side, each attending only within itself with its positions from 0: a batch of interventions on one text shares
  // each layer's weight reads. The ids are the text's, repeated `segments` times.
  int segments = 1;
};

// Thrown by the forward when ForwardOptions::progress returned false; the result is then incomplete.
struct ForwardCancelled : std::runtime_error {
  ForwardCancelled() : std::runtime_error("forward cancelled") {}
};

// The forward's refusal when a stage's activations overflow float32 (finite weights can): names the layer (from 1;
// -1 before the blocks), the stage in the family's words and the first token holding a non-finite value.
InputError stageOverflow(int layer, const std::string& stage, long token);

// Float storage for the forward's maps: one anonymous mapping with transparent huge pages requested, so that
// the first touch of layers x heads x n x n floats (576 MiB for GPT-2 small at 1024 tokens) costs hundreds of
// page faults rather than hundreds of thousands (seen: 5.6 s of a 7.5 s forward on the 2-core build VM).
class MapBuffer {
 public:
  MapBuffer() = default;
  explicit MapBuffer(std::size_t floats);  // throws std::bad_alloc
  ~MapBuffer();
  MapBuffer(MapBuffer&& other) noexcept;
  MapBuffer& operator=(MapBuffer&& other) noexcept;
  MapBuffer(const MapBuffer&) = delete;
  MapBuffer& operator=(const MapBuffer&) = delete;
  float* data() const { return data_; }
  std::size_t size() const { return floats_; }

 private:
  float* data_ = nullptr;
  std::size_t floats_ = 0, bytes_ = 0;
};

// The heads a forward keeps maps of: layers x query heads, and the key/value head each query head reads
// (grouped-query attention: query head h reads kv head h / (n_head / n_kv_head); GPT-2's heads read their own).
struct HeadLayout {
  int n_layer = 0, n_head = 0, n_kv_head = 0;
  HeadLayout() = default;
  HeadLayout(int layers, int heads, int kv_heads) : n_layer(layers), n_head(heads), n_kv_head(kv_heads) {}
  int kvHead(int head) const { return n_kv_head > 0 && n_head >= n_kv_head ? head / (n_head / n_kv_head) : head; }
  // Per layer, a sliding window W (query i sees keys i - W < j <= i) or 0 (every earlier key); empty = none.
  std::vector<int> window;
  // Keys after the query are masked (a decoder's forward); false for a saved tensor, whose every cell is shown.
  bool causal = true;
  // Per key, 1 = padding, never attended (a capture of a padded batch row); empty = none.
  std::vector<std::uint8_t> key_padding;
  int windowOf(int layer) const {
    return layer >= 0 && layer < static_cast<int>(window.size()) ? window[static_cast<std::size_t>(layer)] : 0;
  }
  // Whether query i of `layer` reads key j: not after it (causal), nor at or before i - W (a sliding window W), nor
  // a padded key.
  bool keyAllowed(int layer, int i, int j) const {
    const int w = windowOf(layer);
    return !(causal && j > i) && !(w > 0 && j <= i - w) &&
           !(!key_padding.empty() && key_padding[static_cast<std::size_t>(j)]);
  }
};

// A forward's layers read when asked rather than held (a capture: arrays/capture.h). layer(l, h) gives layer l's
// statistics (a Result: each head's q, k() and row statistics, as ForwardResult::stats holds them) with head h's
// row statistics present (every head's for h < 0): the layer read through `read` on its first use, a head's
// statistics worked out through `row_statistics` on its first use when the read gave none (a capture without
// log-sum-exp: one pass over the keys, O(n^2 d), so never up front). At most `resident` layers are held, the least
// recently asked dropped (a caller's pointer keeps its layer alive while it works), so memory is O(n d) for a
// layer however many layers there are. Thread-safe: the window's tile workers and its analysis ask from their own
// threads; one layer is read at a time.
class LayerReader {
 public:
  using Read = std::function<Result(int layer)>;
  using RowStatistics = std::function<void(int layer, HeadResult& head)>;  // fills head.row_max, head.row_sum
  LayerReader(Read read, RowStatistics row_statistics, int resident = 2);
  // `statistics` false: the layer as read, no row statistics worked out (a GPU finds its own: check ready()
  // before reading a head's, which another thread may be writing until then).
  std::shared_ptr<const Result> layer(int layer, int head = -1, bool statistics = true) const;
  // Head `head`'s row statistics found elsewhere (the GPU's flash pass): kept for the CPU's use when the layer is
  // held and the head has none yet; else nothing. Never waits for a layer read.
  void setStatistics(int layer, int head, RowVector row_max, RowVector row_sum) const;
  // Whether layer(layer, head) would answer at once: the layer held and the head's row statistics in (the window's
  // hover asks before it reads a weight on the UI thread; a layer read at 128k tokens takes seconds). Never waits.
  bool ready(int layer, int head) const;

 private:
  struct Held;
  Read read_;
  RowStatistics row_statistics_;
  std::size_t resident_;
  mutable std::mutex mutex_;
  mutable std::list<std::shared_ptr<Held>> held_;  // the most recently asked first
};

// Whether a forward of `layers` x `heads` maps of (n, n) keeps them under `policy` (Auto: within mapsLimitBytes()).
bool forwardKeepsMaps(int layers, int heads, int n, MapPolicy policy);

struct ForwardResult {
  int n = 0;                // tokens
  int maps = 0;             // layers * heads
  HeadLayout layout;        // which (layer, head) each map is, and its kv head
  MapBuffer buffer;         // kept maps: maps x (n, n), index layer * n_head + head, row-major; empty when not kept
  // Maps not kept: per layer what any weight is recomputed from (w_ij = exp(s_ij - m_i) / l_i, compute/tiles.h):
  // heads[h].q (n, dh) as the scores use it (after RoPE and q_norm, the scale folded in), heads[h].k() (n, dh)
  // held once per kv head (the query heads of a group share it), row_max m and row_sum l (n). No V, no maps.
  std::vector<Result> stats;
  // Non-null (stats then empty): the layers' statistics read when asked, a few held at a time (a capture).
  std::shared_ptr<const LayerReader> reader;
  std::vector<Matrix> ln1;  // per layer, (n, d): ln_1's output (empty unless keep_ln1)
  Matrix hidden;            // (n, d): ln_f's output
  // (2 n_layer + 1, d) at ForwardOptions::trace_position, else empty: the residual stream after the embedding,
  // then after each layer's attention is added (row 1 + 2 l) and after its MLP is added (row 2 + 2 l); the last
  // row is the final norm's input.
  Matrix trace;
  // With ForwardOptions::keep_residual, per layer: the residual stream entering it (n, hidden), its heads' outputs
  // before W_O (n, n_head head_dim) as edited by edit_heads, and its MLP's output (n, hidden) as edit_mlp left it.
  // Empty otherwise.
  std::vector<Matrix> residual, head_outputs, mlp_outputs;

  bool keepsMaps() const { return stats.empty() && !reader; }
  // Maps not kept: layer `layer`'s statistics with head `head`'s row statistics present (every head's for -1),
  // from stats or read through the reader; hold the pointer while using the layer.
  std::shared_ptr<const Result> layerStats(int layer, int head = -1) const;
  // The same without working out missing row statistics (a reader's layer; `known` says whether head `head`'s are
  // in and safe to read). For a GPU that finds them itself.
  std::shared_ptr<const Result> layerData(int layer, int head, bool& known) const;
  // Head `head` of `layer`'s (n, n) map by value: the kept one copied, or recomputed from the layer's stats (one
  // map's memory at a time). Masked cells exactly 0. The index form: index = layer * n_head + head.
  Matrix map(int layer, int head) const;
  Matrix map(int index) const;
  // One weight (query i, key j): a kept map's, or a 1 x 1 tile.
  float weight(int layer, int head, int i, int j) const;
  // A tile of it, plain or pooled, through the scene tile engine (weightTile); request.head is the query head.
  Tile tile(int layer, const TileRequest& request) const;
  // The shape and mask of `layer` as a scene for the tile engine: n queries and keys (no rows: Q and K are in
  // stats), scale 1 (Q is scaled), causal with the layer's sliding window (Scene::sliding_window, O(1) a cell); a
  // window without the causal rule as an explicit (n, n) mask built on demand (`with_window` false: none, for
  // cells known to be inside the window).
  Scene tileScene(int layer, bool with_window = true) const;
  // Kept maps only: a view of map `index` (what the forward writes and a loaded tensor fills).
  Eigen::Map<const Matrix> keptMap(int index) const {
    return {buffer.data() + static_cast<std::size_t>(index) * static_cast<std::size_t>(n) * n, n, n};
  }
  Eigen::Map<Matrix> mutableMap(int index) {
    return {buffer.data() + static_cast<std::size_t>(index) * static_cast<std::size_t>(n) * n, n, n};
  }
  // `count` maps of (tokens, tokens) kept; the buffer is kept when it already has that size. keep = false: no
  // buffer, `count` / layout.n_head layers of stats to fill.
  void resize(int tokens, int count, bool keep = true);
};

// Attention rollout (Abnar and Zuidema, 2020): per layer A_l = 0.5 * mean over heads of W + 0.5 * I (the
// identity for the residual; each row of the mean sums to 1, so A_l's rows sum to 1 with no further
// renormalisation, which is still applied to absorb rounding), then R = A_{L-1} ... A_1 A_0. (n, n). Reads one
// map at a time (ForwardResult::map), so a forward without kept maps needs (n, n) x 3 here, not all maps.
Matrix attentionRollout(const ForwardResult& forward, const HeadLayout& layout);

}  // namespace attnscope::model
