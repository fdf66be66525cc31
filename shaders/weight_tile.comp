// One tile of a head's weights, recomputed from Q, K and the row statistics: w_ij = exp(s_ij - m_i) / l_i,
// masked cells excluded (compute/tiles.h, the CPU's weightTile). Invocation (x, y) makes output cell (y, x):
// the largest weight (u_max_pool) or the mean over the allowed cells of its block, query rows b_ranges[y] and
// keys b_ranges[u_out_rows + x] (the host's pooledRange; an unpooled tile has one cell per block). Each
// invocation reads only inputs and its own cell: no shared memory, so no barrier is needed in a dispatch.
// A large block is walked in passes, one dispatch each (rows [u_pass_row0, + u_pass_rows) and keys
// [u_pass_col0, + u_pass_cols) of every block): llvmpipe ends a loop nest past 65535 iterations and a hardware
// watchdog ends long dispatches. Between passes a cell's (sum, peak, count) waits in b_acc, read by the same
// cell's invocation of the next pass (the host's glMemoryBarrier between dispatches makes it visible).
// With TILE_TO_IMAGE the value goes into texel (x, y) of an R32F image (masked cells 0), for drawing, and when
// u_write_mask into texel (x, y) of an R8 image: 1 when some cell of the block may attend, 0 when every cell is
// masked (the heatmap shader's mask: a masked block is told from a weight 0). A dispatch may cover a band of
// output rows only: invocation row y makes output row u_y0 + y (of u_band_rows), its block the whole request's
// b_ranges[u_y0 + y]; b_acc holds the band's cells. Each invocation writes only its own texels.
// With u_key_scaled each weight is times its key's scale b_key_scale[j] before pooling (value-norm weighting,
// TileRequest::key_scale): exp(s - m) / l * c_j, as the CPU's weightTile multiplies.
#define ATTNSCOPE_KEY_MASK
#include "common.glsl"

#ifndef FLASH_D
#define FLASH_D 64u  // the host sets it: the widest d_k, rounded up to 8
#endif
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BQ { float b_q[]; };          // Q of all heads: (u_n_q, u_ld)
layout(std430, binding = 1) readonly buffer BK { float b_k[]; };          // K of all heads: (u_n_k, u_ld)
layout(std430, binding = 3) readonly buffer BRanges { uvec2 b_ranges[]; }; // (out_rows + out_cols) [lo, hi)
layout(std430, binding = 7) readonly buffer BStats { vec2 b_stats[]; };    // (heads, u_n_q): (m, l)
// (u_n_k) when u_key_scaled; uploaded by glBufferSubData before the dispatch (no shader writes it)
layout(std430, binding = 5) readonly buffer BKeyScale { float b_key_scale[]; };
// (u_out_rows, u_out_cols): between passes (bits of sum, bits of peak, count, 0); after the last, unless
// TILE_TO_IMAGE, (bits of the value, 0, 0, 1 when every cell of the block is masked). Uints, so that no
// float conversion touches a count.
layout(std430, binding = 4) buffer BAcc { uvec4 b_acc[]; };
#ifdef TILE_TO_IMAGE
layout(r32f, binding = 0) writeonly uniform image2D u_image;
layout(r8, binding = 1) writeonly uniform image2D u_mask_image;
uniform bool u_write_mask;
#endif

uniform uint u_n_q, u_n_k, u_ld;
uniform uint u_head, u_k_col, u_d_k;
uniform float u_scale;
uniform uint u_row0, u_col0;  // the tile's first query row and key
uniform uint u_out_rows, u_out_cols;
uniform uint u_y0, u_band_rows;  // the output rows [u_y0, u_y0 + u_band_rows) this dispatch makes
uniform bool u_max_pool;
uniform bool u_key_scaled;
uniform uint u_pass_row0, u_pass_rows, u_pass_col0, u_pass_cols;
uniform bool u_first_pass, u_last_pass;

#define FLASH_D4 (FLASH_D / 4u)

// Four floats of a row of Q or K from column c on, zero past the head's d_k.
#define load4(buffer, base, c) vec4((c) < u_d_k ? buffer[(base) + (c)] : 0.0, (c) + 1u < u_d_k ? buffer[(base) + (c) + 1u] : 0.0, \
                                    (c) + 2u < u_d_k ? buffer[(base) + (c) + 2u] : 0.0, (c) + 3u < u_d_k ? buffer[(base) + (c) + 3u] : 0.0)

void main() {
  const uint x = gl_GlobalInvocationID.x, band_y = gl_GlobalInvocationID.y, y = u_y0 + band_y;
  if (x >= u_out_cols || band_y >= u_band_rows || y >= u_out_rows) return;
  const uvec2 block_rows = b_ranges[y], block_cols = b_ranges[u_out_rows + x];
  const uvec2 rows = uvec2(min(block_rows.x + u_pass_row0, block_rows.y),
                           min(block_rows.x + u_pass_row0 + u_pass_rows, block_rows.y));
  const uvec2 cols = uvec2(min(block_cols.x + u_pass_col0, block_cols.y),
                           min(block_cols.x + u_pass_col0 + u_pass_cols, block_cols.y));
  const uint cell = band_y * u_out_cols + x;
  const uvec4 acc = u_first_pass ? uvec4(0u) : b_acc[cell];
  float sum = u_first_pass ? 0.0 : uintBitsToFloat(acc.x), peak = u_first_pass ? 0.0 : uintBitsToFloat(acc.y);
  uint count = acc.z;
  // q and k as vec4s summed by dot() in the order flash_forward.comp sums them, so that a tile's scores are the
  // ones that set m (a row's top weight exp(s - m) is then 1, not 1 + an ulp of s).
  vec4 q[FLASH_D4];
  const uint d4 = (u_d_k + 3u) / 4u;
  for (uint r = rows.x; r < rows.y; ++r) {
    const uint i = u_row0 + r;
    const vec2 stats = b_stats[u_head * u_n_q + i];
    if (!(stats.y > 0.0)) continue;  // every key of this row is masked
    for (uint c4 = 0u; c4 < d4; ++c4) q[c4] = load4(b_q, i * u_ld + u_k_col, 4u * c4);
    for (uint t = cols.x; t < cols.y; ++t) {
      const uint j = u_col0 + t;
      if (!keyAllowed(i, j)) continue;
      float dot_qk = 0.0;
      for (uint c4 = 0u; c4 < d4; ++c4) dot_qk += dot(q[c4], load4(b_k, j * u_ld + u_k_col, 4u * c4));
      const float w = exp(softCap(dot_qk * u_scale) - stats.x) / stats.y * (u_key_scaled ? b_key_scale[j] : 1.0);
      sum += w;
      peak = max(peak, w);
      ++count;
    }
  }
  if (!u_last_pass) {
    b_acc[cell] = uvec4(floatBitsToUint(sum), floatBitsToUint(peak), count, 0u);
    return;
  }
  const float value = count == 0u ? 0.0 : u_max_pool ? peak : sum / float(count);
#ifdef TILE_TO_IMAGE
  imageStore(u_image, ivec2(x, y), vec4(value, 0.0, 0.0, 1.0));
  if (u_write_mask) imageStore(u_mask_image, ivec2(x, y), vec4(count == 0u ? 0.0 : 1.0, 0.0, 0.0, 1.0));
#else
  b_acc[cell] = uvec4(floatBitsToUint(value), 0u, 0u, count == 0u ? 1u : 0u);
#endif
}
