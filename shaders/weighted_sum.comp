// One head's output O = W V, written straight into its columns of the concatenation (n_q, sum of d_v).
#define ATTNSCOPE_GEMM
#define A_K_CONTIGUOUS
#include "common.glsl"

layout(std430, binding = 0) readonly buffer BW { float b_w[]; };       // weights: (u_n_q, u_n_k)
layout(std430, binding = 1) readonly buffer BV { float b_v[]; };       // V of all heads: (u_n_k, u_ld)
layout(std430, binding = 2) writeonly buffer BC { float b_concat[]; };  // (u_n_q, u_ld)

uniform uint u_n_q, u_n_k, u_d_v;
uniform uint u_ld;    // d_v summed over heads
uniform uint u_col0;  // this head's first column in V and the concat

float loadA(uint i, uint k) { return b_w[i * u_n_k + k]; }
float loadB(uint k, uint j) { return b_v[k * u_ld + u_col0 + j]; }
void storeC(uint i, uint j, float acc) { b_concat[i * u_ld + u_col0 + j] = acc; }

void main() { gemmTile(u_n_q, u_d_v, u_n_k); }
