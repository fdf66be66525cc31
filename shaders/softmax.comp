// Row softmax in place, one workgroup per query row: scores (n_q, n_k) -> weights. Numerically stable (the
// row maximum is subtracted first); masked (-inf) entries become exactly 0; a fully masked row becomes all 0.
#include "common.glsl"

#define SOFTMAX_THREADS 64u
layout(local_size_x = SOFTMAX_THREADS, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) buffer BW { float b_w[]; };  // (n_q, u_n_k): scores in, weights out

uniform uint u_n_k;

shared float s_red[SOFTMAX_THREADS];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint base = gl_WorkGroupID.x * u_n_k;

  float row_max = negInf();
  for (uint j = t; j < u_n_k; j += SOFTMAX_THREADS) row_max = max(row_max, b_w[base + j]);
  s_red[t] = row_max;
  barrier();
  for (uint s = SOFTMAX_THREADS / 2u; s > 0u; s >>= 1u) {
    if (t < s) s_red[t] = max(s_red[t], s_red[t + s]);
    barrier();
  }
  row_max = s_red[0];
  barrier();

  if (isNegInf(row_max)) {  // every key masked: no distribution, all 0 (uniform across the workgroup)
    for (uint j = t; j < u_n_k; j += SOFTMAX_THREADS) b_w[base + j] = 0.0;
    return;
  }

  float sum = 0.0;
  for (uint j = t; j < u_n_k; j += SOFTMAX_THREADS) {
    const float x = b_w[base + j];
    const float e = isNegInf(x) ? 0.0 : exp(x - row_max);
    b_w[base + j] = e;
    sum += e;
  }
  s_red[t] = sum;
  barrier();
  for (uint s = SOFTMAX_THREADS / 2u; s > 0u; s >>= 1u) {
    if (t < s) s_red[t] += s_red[t + s];
    barrier();
  }
  sum = s_red[0];

  for (uint j = t; j < u_n_k; j += SOFTMAX_THREADS) b_w[base + j] = b_w[base + j] / sum;
}
