// Head similarity, first pass, for one pair of heads (a, b): each workgroup takes u_rows_per_group query rows
// and writes one partial (dot of the flattened maps, sum over rows of the Jensen-Shannon divergence, rows
// where both heads attend something). The pair (a, a) gives the squared norm of a.
#include "common.glsl"

#define SIM_THREADS 256u
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BA { float b_wa[]; };        // weights of head a: (u_n_q, u_n_k)
layout(std430, binding = 1) readonly buffer BB { float b_wb[]; };        // weights of head b: (u_n_q, u_n_k)
layout(std430, binding = 2) writeonly buffer BP { vec4 b_partial[]; };  // (dot, js sum, rows, 0) per group

uniform uint u_n_q, u_n_k, u_rows_per_group;
uniform uint u_first_partial;  // where this pair's partials start

shared float s_x[SIM_THREADS], s_y[SIM_THREADS], s_z[SIM_THREADS];

void reduce3(uint t) {
  for (uint s = SIM_THREADS / 2u; s > 0u; s >>= 1u) {
    if (t < s) {
      s_x[t] += s_x[t + s];
      s_y[t] += s_y[t + s];
      s_z[t] += s_z[t + s];
    }
    barrier();
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint row_begin = gl_WorkGroupID.x * u_rows_per_group;
  const uint row_end = min(row_begin + u_rows_per_group, u_n_q);
  float dot_ab = 0.0, js_sum = 0.0, rows = 0.0;
  for (uint i = row_begin; i < row_end; ++i) {
    // JS(p, q) = 1/2 sum p log(p/m) + 1/2 sum q log(q/m), m = (p + q) / 2; a zero p or q contributes 0.
    float js = 0.0, sum_a = 0.0, sum_b = 0.0;
    for (uint j = t; j < u_n_k; j += SIM_THREADS) {
      const float p = b_wa[i * u_n_k + j], q = b_wb[i * u_n_k + j];
      const float m = 0.5 * (p + q);
      dot_ab = fma(p, q, dot_ab);
      sum_a += p;
      sum_b += q;
      if (p > 0.0) js += p * log(p / m);
      if (q > 0.0) js += q * log(q / m);
    }
    s_x[t] = js;
    s_y[t] = sum_a;
    s_z[t] = sum_b;
    barrier();
    reduce3(t);
    if (t == 0u && s_y[0] > 0.0 && s_z[0] > 0.0) {  // a fully masked row has no distribution to compare
      js_sum += 0.5 * s_x[0];
      rows += 1.0;
    }
    barrier();
  }
  s_x[t] = dot_ab;
  s_y[t] = 0.0;
  s_z[t] = 0.0;
  barrier();
  reduce3(t);
  if (t == 0u) b_partial[u_first_partial + gl_WorkGroupID.x] = vec4(s_x[0], js_sum, rows, 0.0);
}
