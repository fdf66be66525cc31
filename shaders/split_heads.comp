// A layer's projected q | k | v (u_rows, q_dim + 2 kv_dim), after q/k norms and RoPE, into the attention stages'
// layout (gpu_backend_impl.h): Q (u_rows, q_dim) times the score scale (as the CPU forward scales Q once), and K
// and V per query head (u_rows, q_dim), query head h reading kv head h / u_group (grouped-query attention).
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BQkv { float b_qkv[]; };  // (u_rows, u_q_dim + 2 u_kv_dim)
layout(std430, binding = 1) writeonly buffer BQ { float b_q[]; };     // (u_rows, u_q_dim)
layout(std430, binding = 2) writeonly buffer BK { float b_k[]; };     // (u_rows, u_q_dim)
layout(std430, binding = 3) writeonly buffer BV { float b_v[]; };     // (u_rows, u_q_dim)

uniform uint u_rows, u_q_dim, u_kv_dim, u_head_dim, u_group;
uniform float u_scale;

void main() {
  const uint c = gl_GlobalInvocationID.x;  // a column of Q
  if (c >= u_q_dim) return;
  const uint h = c / u_head_dim, kv = (h / u_group) * u_head_dim + c % u_head_dim;
  const uint ld = u_q_dim + 2u * u_kv_dim;
  for (uint r = gl_WorkGroupID.y; r < u_rows; r += gl_NumWorkGroups.y) {
    b_q[r * u_q_dim + c] = b_qkv[r * ld + c] * u_scale;
    b_k[r * u_q_dim + c] = b_qkv[r * ld + u_q_dim + kv];
    b_v[r * u_q_dim + c] = b_qkv[r * ld + u_q_dim + u_kv_dim + kv];
  }
}
