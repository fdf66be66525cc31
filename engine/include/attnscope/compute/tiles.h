// Weights on demand. A head's weights follow from Q, K, the mask and two numbers per query row (the row's
// largest score m_i and l_i = sum_j exp(s_ij - m_i)): w_ij = exp(s_ij - m_i) / l_i. A result keeps those,
// O(n d) per head, and the full (n_q, n_k) maps only while they fit (mapsLimitBytes); every consumer reads
// weights through a tile, from the map when it is kept and recomputed from Q and K when it is not.
#pragma once

#include <cstddef>
#include <utility>

#include "attnscope/compute/backend.h"
#include "attnscope/compute/result.h"
#include "attnscope/scene/key_mask.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// The most bytes of (n_q, n_k) maps a result keeps under MapPolicy::Auto: 256 MiB, or ATTNSCOPE_MAPS_LIMIT
// (bytes, with suffix K, M or G) when set.
std::size_t mapsLimitBytes();
// Bytes every head's weights (and scores when keep_scores) take for this scene.
std::size_t mapBytes(const Scene& scene, bool keep_scores);
// Whether a compute with these options keeps the maps.
bool keepsMaps(const Scene& scene, const ComputeOptions& options);

enum class Pooling {
  None,  // one value per weight
  Max,   // the largest weight of each block: a sharp head stays visible at any zoom
  Mean,  // the mean of each block's allowed cells, as the figure exporters draw a long map
};

struct TileRequest {
  int head = 0;
  int row0 = 0, row1 = -1;  // query rows [row0, row1); -1 = n_q
  int col0 = 0, col1 = -1;  // keys [col0, col1); -1 = n_k
  Pooling pooling = Pooling::None;
  int out_rows = 0, out_cols = 0;  // with pooling: blocks down and across (block y covers pooledRange(y, ...))
  // (n_k) when set: each weight times its key's scale before pooling (value-norm weighting: norm_j / the largest);
  // masked cells stay masked, an allowed cell of scale 0 is 0. Null: the plain weights. Not owned.
  const RowVector* key_scale = nullptr;
};

struct Tile {
  Matrix values;       // (rows, cols) weights, or (out_rows, out_cols) pooled
  MaskMatrix masked;   // same shape; 1 where the cell (or every cell of the block) is masked
};

// The cells [lo, hi) that block p of `blocks` covers out of n cells: the inverse of a figure's cell edges
// floor(i * blocks / n), i.e. the cells whose first block is p. A block covers at least one cell, so a tile
// pooled to more blocks than cells repeats cells (each block then shows the one cell that covers it). The
// exporters' rasteriser pools pixels by the same rule.
std::pair<int, int> pooledRange(int p, int blocks, int n);

// Throws InputError naming the field for a head or range outside the scene.
Tile weightTile(const Scene& scene, const Result& result, const TileRequest& request);
// `request` with its open ends (-1) resolved; throws InputError naming the field for a head, range or pooled size
// outside the scene, a key_scale not of n_k finite values >= 0, or a head with neither a map nor row statistics.
TileRequest checkedTileRequest(const Scene& scene, const Result& result, const TileRequest& request);

// Output rows [y0, y1) of the Pooling::Max tile `request`, recomputed from Q, K and the row statistics (the head's
// map need not be kept) into `tile`, resized to (out_rows, out_cols) when its shape differs; other rows are left
// as they were. What weightTile gives for a max-pooled tile of a head without its map (a band at a time lets a
// caller stop between bands). Blocked: a GEMM of up to 256 query rows against 512 keys, the largest score per
// pooled column kept, one exp per (row, pooled column); blocks the mask excludes are skipped; bands spread over
// the OpenMP threads.
void maxPooledRows(const Scene& scene, const Result& result, const KeyMask& mask, const TileRequest& request, int y0,
                   int y1, Tile& tile);

// One pass that needs no forward pass before it: output rows [y0, y1) of head `head`'s whole-map max-pooled
// overview (out_rows <= n_q, out_cols) from q (n_q, d_k) and k (n_k, d_k) alone (headQuery / headKey), with the
// row statistics of the query rows those output rows pool written into row_max, row_sum (n_q, resized as
// needed; other rows left as they were). Each band of up to 256 query rows sees every key block once (one GEMM
// per block; blocks the mask excludes skipped), keeping the online row max and sum as flash does and the largest
// score per (row, pooled column); once the band has seen every key, texel = max over its rows of
// exp(score - m_i) / l_i. The same tile (and m, l) as maxPooledRows over a forward pass's result; memory
// O(256 x out_cols) per thread, never (n, n). `key_scale` (n_k, optional) as TileRequest's: the texel is then the
// max of c_j exp(s_ij - m_i) / l_i, kept as the largest s_ij + ln c_j (ln 0 taken as -1e30, finite: the cell is 0,
// not masked); m and l stay those of the plain scores.
void overviewRows(const Scene& scene, int head, const Matrix& q, const Matrix& k, const KeyMask& mask, int out_rows,
                  int out_cols, int y0, int y1, Tile& tile, RowVector& row_max, RowVector& row_sum,
                  const RowVector* key_scale = nullptr);
// Throws InputError naming key_scale unless it is null or n_k finite values >= 0.
void checkKeyScale(const RowVector* key_scale, int n_k);

// The streaming primitive: head `head`'s weights of query rows [row0, row1) over every key into `out`
// (row1 - row0, n_k), resized as needed. Masked weights exactly 0, fully masked rows all 0.
void weightRows(const Scene& scene, const Result& result, int head, int row0, int row1, Matrix& out);
// The same with the scene's mask built once by the caller (a loop over row blocks builds it once, not per block).
void weightRows(const Scene& scene, const Result& result, const KeyMask& mask, int head, int row0, int row1,
                Matrix& out);

}  // namespace attnscope
