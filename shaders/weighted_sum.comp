// Each head's output O = W V, written straight into its columns of the concatenation (n_q, sum of d_v); the
// dispatch's heads side by side in z.
#define ATTNSCOPE_GEMM
#define ATTNSCOPE_HEADS
#define A_K_CONTIGUOUS
#include "common.glsl"

layout(std430, binding = 0) readonly buffer BW { float b_w[]; };        // weights: (heads, u_n_q, u_n_k)
layout(std430, binding = 1) readonly buffer BV { float b_v[]; };        // V of all heads: (u_n_k, u_ld)
layout(std430, binding = 2) writeonly buffer BC { float b_concat[]; };  // (u_n_q, u_ld)

uniform uint u_n_q, u_n_k;
uniform uint u_ld;  // d_v summed over heads

Head head;

float loadA(uint i, uint k) { return b_w[head.map_base + i * u_n_k + k]; }
float loadB(uint k, uint j) { return b_v[k * u_ld + head.v_col + j]; }
void storeC(uint i, uint j, float acc) { b_concat[i * u_ld + head.v_col + j] = acc; }

void main() {
  head = dispatchHead(u_n_q * u_n_k);
  // The grid is as wide as the widest head: a narrower head's surplus column tiles leave at once (the whole
  // workgroup alike, so no barrier is skipped by some invocations only).
  if (gl_WorkGroupID.x * GEMM_BN >= head.d_v) return;
  gemmTile(u_n_q, head.d_v, u_n_k);
}
