// The weights W = softmax_rows(scale Q K^T, masked) of the dispatch's heads (z) in one dispatch: workgroup
// (y, z) takes query rows [64 y, 64 y + 64) of head z and walks every key tile twice. Pass 1 writes the scaled, masked scores (-inf where masked)
// into W and keeps each row's running maximum and sum of exp (the online softmax); the workgroup then combines
// its invocations' partial maxima and sums in shared memory; pass 2 turns each score into exp(s - max) / sum.
// Each invocation re-reads in pass 2 only the elements it wrote itself in pass 1, so the hand-off is program
// order within one invocation: no other dispatch and no other invocation ever sees an unfinished score.
#define ATTNSCOPE_GEMM
#define ATTNSCOPE_HEADS
#define GEMM_ACCUMULATE_ONLY
#define A_K_CONTIGUOUS
#define B_K_CONTIGUOUS
#include "common.glsl"

layout(std430, binding = 0) readonly buffer BQ { float b_q[]; };       // Q of all heads: (u_n_q, u_ld)
layout(std430, binding = 1) readonly buffer BK { float b_k[]; };       // K of all heads: (u_n_k, u_ld)
layout(std430, binding = 2) readonly buffer BMask { uint b_mask[]; };  // (u_n_q, u_mask_words) bits
layout(std430, binding = 3) buffer BW { float b_w[]; };                // weights: (heads, u_n_q, u_n_k)
layout(std430, binding = 7) writeonly buffer BStats { vec2 b_stats[]; };  // (heads, u_n_q): (m, l), for tiles

uniform uint u_n_q, u_n_k;
uniform uint u_ld;  // d_k summed over heads
uniform bool u_has_mask;
uniform uint u_mask_words;

Head head;

float loadA(uint i, uint k) { return b_q[i * u_ld + head.k_col + k]; }
float loadB(uint k, uint j) { return b_k[j * u_ld + head.k_col + k]; }  // K^T (k, j) = K (j, k)

bool allowedAt(uint i, uint j) {
  return !u_has_mask || ((b_mask[i * u_mask_words + (j >> 5u)] >> (j & 31u)) & 1u) != 0u;
}

// Each row's partial (max, sum of exp(s - max)) from each of the GEMM_SIDE invocations that share it:
// (GEMM_BM rows, GEMM_SIDE). They reuse the GEMM's staging arrays, free once its last slice is read
// (gemmAccumulate ends with a barrier): OpenGL 4.3 promises only 32 KiB of shared memory (llvmpipe has no
// more), and 128 x 128 tiles with separate arrays take 32.9 KiB. s_a and s_b each hold
// GEMM_BK (GEMM_BM + 1) floats, at least GEMM_BM GEMM_SIDE while GEMM_SIDE <= GEMM_BK.
#define s_row_max s_a
#define s_row_sum s_b

void main() {
  head = dispatchHead(u_n_q * u_n_k);
  const uint tx = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.y * GEMM_BM;
  float row_max[GEMM_T], row_sum[GEMM_T];  // over the keys this invocation has seen, for rows gemmRow(i)
  for (uint i = 0u; i < GEMM_T; ++i) {
    row_max[i] = negInf();
    row_sum[i] = 0.0;
  }

  // Pass 1: scores into W, running (max, sum) per row. Masked and out-of-range entries count as -inf.
  for (uint col0 = 0u; col0 < u_n_k; col0 += GEMM_BN) {
    gemmAccumulate(row0, col0, u_n_q, u_n_k, head.d_k);
    for (uint i = 0u; i < GEMM_T; ++i) {
      const uint gi = row0 + gemmRow(i);
      float tile_max = negInf();
      for (uint j = 0u; j < GEMM_T; ++j) {
        const uint gj = col0 + gemmCol(j);
        float s = negInf();
        if (gi < u_n_q && gj < u_n_k) {
          if (allowedAt(gi, gj)) s = gemm_acc[i][j] * head.scale;
          b_w[head.map_base + gi * u_n_k + gj] = s;
        }
        gemm_acc[i][j] = s;
        if (!isNegInf(s)) tile_max = max(tile_max, s);
      }
      if (isNegInf(tile_max)) continue;
      if (tile_max > row_max[i]) {  // rescale the sum so far to the new maximum
        row_sum[i] = isNegInf(row_max[i]) ? 0.0 : row_sum[i] * exp(row_max[i] - tile_max);
        row_max[i] = tile_max;
      }
      for (uint j = 0u; j < GEMM_T; ++j)
        if (!isNegInf(gemm_acc[i][j])) row_sum[i] += exp(gemm_acc[i][j] - row_max[i]);
    }
  }

  // The row's maximum and sum over the GEMM_SIDE invocations that share it.
  for (uint i = 0u; i < GEMM_T; ++i) {
    const uint r = gemmRow(i) * GEMM_SIDE + tx;
    s_row_max[r] = row_max[i];
    s_row_sum[r] = row_sum[i];
  }
  memoryBarrierShared();
  barrier();
  for (uint i = 0u; i < GEMM_T; ++i) {
    const uint first = gemmRow(i) * GEMM_SIDE;
    float m = negInf();
    for (uint t = 0u; t < GEMM_SIDE; ++t)
      if (!isNegInf(s_row_max[first + t])) m = max(m, s_row_max[first + t]);
    float sum = 0.0;
    if (!isNegInf(m))
      for (uint t = 0u; t < GEMM_SIDE; ++t)
        if (!isNegInf(s_row_max[first + t])) sum += s_row_sum[first + t] * exp(s_row_max[first + t] - m);
    row_max[i] = m;
    row_sum[i] = sum;  // >= 1 whenever m is finite (the maximum's own term is exp(0))
    // Every invocation of the row holds the same (m, l): the first one stores them (-inf, 0 when all masked).
    const uint gi = row0 + gemmRow(i);
    if (tx == 0u && gi < u_n_q) b_stats[(u_head0 + gl_WorkGroupID.z) * u_n_q + gi] = vec2(m, sum);
  }

  // Pass 2: this invocation's own scores -> weights. Masked (-inf) entries, and every entry of a fully masked
  // row, become exactly 0.
  for (uint col0 = 0u; col0 < u_n_k; col0 += GEMM_BN)
    for (uint i = 0u; i < GEMM_T; ++i) {
      const uint gi = row0 + gemmRow(i);
      if (gi >= u_n_q) continue;
      for (uint j = 0u; j < GEMM_T; ++j) {
        const uint gj = col0 + gemmCol(j);
        if (gj >= u_n_k) continue;
        const uint at = head.map_base + gi * u_n_k + gj;
        const float s = b_w[at];
        b_w[at] = isNegInf(s) ? 0.0 : exp(s - row_max[i]) / row_sum[i];
      }
    }
}
