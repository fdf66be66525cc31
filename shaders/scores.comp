// Scaled, masked scores S = scale Q K^T of the dispatch's heads, masked entries -inf: for a read-back that asks
// for the scores (the weights stage keeps none). The mask is allowedMask(scene) packed 32 keys to a word, bit
// set = may attend.
#define ATTNSCOPE_GEMM
#define ATTNSCOPE_HEADS
#define A_K_CONTIGUOUS
#define B_K_CONTIGUOUS
#include "common.glsl"

layout(std430, binding = 0) readonly buffer BQ { float b_q[]; };       // Q of all heads: (u_n_q, u_ld)
layout(std430, binding = 1) readonly buffer BK { float b_k[]; };       // K of all heads: (u_n_k, u_ld)
layout(std430, binding = 2) readonly buffer BMask { uint b_mask[]; };  // (u_n_q, u_mask_words) bits
layout(std430, binding = 3) writeonly buffer BS { float b_s[]; };      // scores: (heads, u_n_q, u_n_k)

uniform uint u_n_q, u_n_k;
uniform uint u_ld;  // d_k summed over heads
uniform bool u_has_mask;
uniform uint u_mask_words;

Head head;

float loadA(uint i, uint k) { return b_q[i * u_ld + head.k_col + k]; }
float loadB(uint k, uint j) { return b_k[j * u_ld + head.k_col + k]; }  // K^T (k, j) = K (j, k)
void storeC(uint i, uint j, float acc) {
  bool allowed = true;
  if (u_has_mask) allowed = ((b_mask[i * u_mask_words + (j >> 5u)] >> (j & 31u)) & 1u) != 0u;
  b_s[head.map_base + i * u_n_k + j] = allowed ? acc * head.scale : negInf();
}

void main() {
  head = dispatchHead(u_n_q * u_n_k);
  gemmTile(u_n_q, u_n_k, head.d_k);
}
