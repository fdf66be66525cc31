// Row-vector projection C = A B + bias: Q, K, V of every head at once (B is the heads' W side by side), and
// the output projection (A the concat, B = W_O). A column window [u_col0, u_col0 + u_n) restricts it to a head.
#define ATTNSCOPE_GEMM
#define A_K_CONTIGUOUS
#include "common.glsl"

layout(std430, binding = 0) readonly buffer BA { float b_a[]; };        // A: (u_m, u_k), row stride u_k
layout(std430, binding = 1) readonly buffer BB { float b_b[]; };        // B: (u_k, u_ld), row stride u_ld
layout(std430, binding = 2) readonly buffer BBias { float b_bias[]; };  // bias: (u_ld), when u_has_bias
layout(std430, binding = 3) writeonly buffer BC { float b_c[]; };       // C: (u_m, u_ld), row stride u_ld

uniform uint u_m, u_n, u_k;  // the window computed: C[:, u_col0 : u_col0 + u_n]
uniform uint u_ld;           // columns of B, bias and C
uniform uint u_col0;
uniform bool u_has_bias;

float loadA(uint i, uint k) { return b_a[i * u_k + k]; }
float loadB(uint k, uint j) { return b_b[k * u_ld + u_col0 + j]; }
void storeC(uint i, uint j, float acc) {
  const uint col = u_col0 + j;
  b_c[i * u_ld + col] = u_has_bias ? acc + b_bias[col] : acc;
}

void main() { gemmTile(u_m, u_n, u_k); }
