// Heads' kept maps from what the flash pass left, w_ij = exp(cap(q_i . k_j) - m_i) / l_i (compute/tiles.h), masked
// cells exactly 0: the forward's (n, n) maps on the GPU for read-back, one head per workgroup z (from u_head0),
// each invocation one cell. Q carries the score scale; Q and K per query head (u_n, u_ld), head h at columns
// [h u_d, (h + 1) u_d).
#define ATTNSCOPE_KEY_MASK
#include "common.glsl"
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BQ { float b_q[]; };
layout(std430, binding = 1) readonly buffer BK { float b_k[]; };
layout(std430, binding = 3) writeonly buffer BMaps { float b_maps[]; };  // (heads of the dispatch, u_n, u_n)
layout(std430, binding = 7) readonly buffer BStats { vec2 b_stats[]; };  // (heads, u_n): (m, l)

uniform uint u_n, u_ld, u_d, u_head0;

void main() {
  const uint j = gl_GlobalInvocationID.x, i = gl_GlobalInvocationID.y, z = gl_WorkGroupID.z, h = u_head0 + z;
  if (i >= u_n || j >= u_n) return;
  float w = 0.0;
  if (keyAllowed(i, j)) {
    float s = 0.0;
    for (uint c = 0u; c < u_d; ++c) s += b_q[i * u_ld + h * u_d + c] * b_k[j * u_ld + h * u_d + c];
    const vec2 ml = b_stats[h * u_n + i];
    w = exp(softCap(s) - ml.x) / ml.y;
  }
  b_maps[(z * u_n + i) * u_n + j] = w;
}
