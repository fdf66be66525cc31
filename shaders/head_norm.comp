// Qwen3's q_norm / k_norm: columns [u_col0, u_col0 + u_dims) of every row of X (u_rows, u_ld) -- one head's q or
// k -- replaced in place by x / sqrt(mean(x^2) + u_eps) * weight, as scene_rope.h's applyHeadNorm does on the CPU.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) buffer BX { float b_x[]; };                  // (u_rows, u_ld): Q or K, heads side by side
layout(std430, binding = 1) readonly buffer BWeight { float b_weight[]; };  // (u_dims)

uniform uint u_rows, u_ld, u_col0, u_dims;
uniform float u_eps;

void main() {
  const uint r = gl_GlobalInvocationID.x;  // one invocation per row: a head's d_k is at most a few hundred
  if (r >= u_rows) return;
  const uint base = r * u_ld + u_col0;
  float sum = 0.0;
  for (uint t = 0u; t < u_dims; ++t) sum += b_x[base + t] * b_x[base + t];
  const float inv = 1.0 / sqrt(sum / float(u_dims) + u_eps);
  for (uint t = 0u; t < u_dims; ++t) b_x[base + t] = b_x[base + t] * inv * b_weight[t];
}
