// Head similarity, first pass: workgroup (g, p) takes u_rows_per_group query rows of pair p = (a, b), a <= b, and
// writes one partial (dot of the flattened maps, Jensen-Shannon terms summed over its rows). The pair (a, a)
// gives the squared norm of a. A fully masked row is all 0 in every head (the mask is shared), so it adds
// nothing to either sum; the finish pass divides by the rows that attend something.
#include "common.glsl"

#define SIM_THREADS 256u
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BA { float b_wa[]; };       // head a's weights at a * u_head_stride
layout(std430, binding = 1) readonly buffer BB { float b_wb[]; };       // head b's weights at b * u_head_stride
layout(std430, binding = 2) writeonly buffer BP { vec2 b_partial[]; };  // (dot, js sum) per pair and group
layout(std430, binding = 3) readonly buffer BPairs { uvec4 b_pairs[]; }; // (a, b, first partial, unused)

uniform uint u_n_q, u_n_k, u_rows_per_group;
uniform uint u_head_stride;  // floats between heads when all heads share one buffer; 0 when a and b are bound alone
uniform uint u_first_pair;   // pair p = b_pairs[u_first_pair + gl_WorkGroupID.y]

shared vec2 s_red[SIM_THREADS];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uvec4 pair = b_pairs[u_first_pair + gl_WorkGroupID.y];
  const uint base_a = pair.x * u_head_stride, base_b = pair.y * u_head_stride;
  const uint row_begin = gl_WorkGroupID.x * u_rows_per_group;
  const uint begin = row_begin * u_n_k, end = min(row_begin + u_rows_per_group, u_n_q) * u_n_k;
  // JS(p, q) = 1/2 sum p log(p/m) + 1/2 sum q log(q/m), m = (p + q) / 2; a zero p or q contributes 0.
  float dot_ab = 0.0, js = 0.0;
  for (uint e = begin + t; e < end; e += SIM_THREADS) {
    const float p = b_wa[base_a + e], q = b_wb[base_b + e];
    dot_ab = fma(p, q, dot_ab);
    // p log(p / m) as p log(2 p / (p + q)): m = (p + q) / 2 of a normal p next to q = 0 can be subnormal, which
    // GPUs flush to 0 (seen on an H100: JS = inf). A term whose weight or ratio is subnormal adds under 1e-36 and
    // is left out.
    const float ra = 2.0 * (p / (p + q)), rb = 2.0 * (q / (p + q));
    if (p >= FLT_MIN_NORMAL && ra >= FLT_MIN_NORMAL) js += p * log(ra);
    if (q >= FLT_MIN_NORMAL && rb >= FLT_MIN_NORMAL) js += q * log(rb);
  }
  // Tree sum in shared memory: memoryBarrierShared() makes each write visible, barrier() waits for all (GLSL
  // 4.30 asks for both).
  s_red[t] = vec2(dot_ab, 0.5 * js);
  memoryBarrierShared();
  barrier();
  for (uint s = SIM_THREADS / 2u; s > 0u; s >>= 1u) {
    if (t < s) s_red[t] += s_red[t + s];
    memoryBarrierShared();
    barrier();
  }
  if (t == 0u) b_partial[pair.z + gl_WorkGroupID.x] = s_red[0];
}
