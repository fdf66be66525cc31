// One head's scaled, masked scores S = scale Q K^T, masked entries -inf (the softmax turns them into exact 0).
// The mask is allowedMask(scene) packed 32 keys to a word, bit set = may attend.
#define ATTNSCOPE_GEMM
#define A_K_CONTIGUOUS
#define B_K_CONTIGUOUS
#include "common.glsl"

layout(std430, binding = 0) readonly buffer BQ { float b_q[]; };       // Q of all heads: (u_n_q, u_ld)
layout(std430, binding = 1) readonly buffer BK { float b_k[]; };       // K of all heads: (u_n_k, u_ld)
layout(std430, binding = 2) readonly buffer BMask { uint b_mask[]; };  // (u_n_q, u_mask_words) bits
layout(std430, binding = 3) writeonly buffer BS { float b_s[]; };      // scores: (u_n_q, u_n_k)

uniform uint u_n_q, u_n_k, u_d_k;
uniform uint u_ld;    // d_k summed over heads
uniform uint u_col0;  // this head's first column in Q and K
uniform float u_scale;
uniform bool u_has_mask;
uniform uint u_mask_words;

float loadA(uint i, uint k) { return b_q[i * u_ld + u_col0 + k]; }
float loadB(uint k, uint j) { return b_k[j * u_ld + u_col0 + k]; }  // K^T (k, j) = K (j, k)
void storeC(uint i, uint j, float acc) {
  bool allowed = true;
  if (u_has_mask) allowed = ((b_mask[i * u_mask_words + (j >> 5u)] >> (j & 31u)) & 1u) != 0u;
  b_s[i * u_n_k + j] = allowed ? acc * u_scale : negInf();
}

void main() { gemmTile(u_n_q, u_n_k, u_d_k); }
