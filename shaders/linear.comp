// A checkpoint's linear layer, C [+]= A W^T + bias (or A W for a Conv1D layer stored (in, out)), the weights read
// as the checkpoint stores them: float32, or bfloat16 / float16 packed two to a uint and widened (common.glsl's
// weightAt); float32 accumulation (common.glsl's tiled product). The host builds one program per storage (W_BF16, W_F16, else
// float) and layout (W_OUT_IN: W is (out, in), row j holds output j's weights, contiguous in k).
//   rows:    A's rows i, or with u_gather_a A's rows b_rows[i] (the tokens routed to a Mixtral expert)
//   output:  C (u_m, u_ldc) at columns [u_c_col0, + u_n); u_accumulate adds into it (the residual stream);
//            u_scatter_c adds b_row_scale[i] times the row into row b_rows[i] instead (an expert's weighted output)
#define ATTNSCOPE_GEMM
#define ATTNSCOPE_WEIGHTS
#define A_K_CONTIGUOUS
#ifdef W_OUT_IN
#define B_K_CONTIGUOUS
#endif
#include "common.glsl"

layout(std430, binding = 0) readonly buffer BA { float b_a[]; };        // A: rows of u_k floats, row stride u_lda
// W at binding 1 (common.glsl's weightAt): (u_n, u_k) with W_OUT_IN, else (u_k, u_n)
layout(std430, binding = 2) readonly buffer BBias { float b_bias[]; };  // (u_n), when u_has_bias
layout(std430, binding = 3) buffer BC { float b_c[]; };                 // C: (rows, u_ldc)
layout(std430, binding = 4) readonly buffer BRows { uint b_rows[]; };   // (u_m) with u_gather_a or u_scatter_c
layout(std430, binding = 5) readonly buffer BRowScale { float b_row_scale[]; };  // (u_m) with u_scatter_c

uniform uint u_m, u_n, u_k, u_lda, u_ldc, u_c_col0;
uniform bool u_has_bias, u_accumulate, u_gather_a, u_scatter_c;

float loadA(uint i, uint k) { return b_a[(u_gather_a ? b_rows[i] : i) * u_lda + k]; }

#ifdef W_OUT_IN
float loadB(uint k, uint j) { return weightAt(j * u_k + k); }
#else
float loadB(uint k, uint j) { return weightAt(k * u_n + j); }
#endif

void storeC(uint i, uint j, float acc) {
  const float y = u_has_bias ? acc + b_bias[j] : acc;
  if (u_scatter_c) {
    const uint at = b_rows[i] * u_ldc + u_c_col0 + j;
    b_c[at] += b_row_scale[i] * y;
  } else {
    const uint at = i * u_ldc + u_c_col0 + j;
    b_c[at] = u_accumulate ? b_c[at] + y : y;
  }
}

void main() { gemmTile(u_m, u_n, u_k); }
