// A checkpoint's norm, row by row: LayerNorm (x - mean) / sqrt(var + eps) * g + b (population variance, as
// torch.nn.LayerNorm) or RMSNorm x / sqrt(mean(x^2) + eps) * g (Gemma's 1 + w is folded into g when loaded), as
// model/arch/forward.cpp's norm(). One workgroup per row (rows strided by the grid); the sums are shared through
// shared memory. u_add: out += the normed row (a branch norm's output joining the residual stream), else out =.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BX { float b_x[]; };     // (u_rows, u_d)
layout(std430, binding = 1) readonly buffer BG { float b_g[]; };     // (u_d)
layout(std430, binding = 2) readonly buffer BB { float b_b[]; };     // (u_d) when u_has_bias
layout(std430, binding = 3) buffer BOut { float b_out[]; };          // (u_rows, u_d); not b_x

uniform uint u_rows, u_d;
uniform float u_eps;
uniform bool u_rms, u_has_bias, u_add;

shared float s_sum[64];

// The workgroup's sum of v (every invocation passes its part; all must call it: it holds barriers). Each invocation
// adds the 64 parts in the same order, so all hold the same total, bit for bit, whatever the device; a halving tree
// (s[t] += s[t + w] for w = 32, 16, ...) came out wrong on llvmpipe and was dropped.
float groupSum(float v) {
  const uint t = gl_LocalInvocationID.x;
  s_sum[t] = v;
  memoryBarrierShared();
  barrier();
  float total = 0.0;
  for (uint i = 0u; i < 64u; ++i) total += s_sum[i];
  barrier();  // every invocation has read the sums before the next call overwrites them
  return total;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const float inv_d = 1.0 / float(u_d);
  for (uint r = gl_WorkGroupID.x; r < u_rows; r += gl_NumWorkGroups.x) {
    const uint base = r * u_d;
    float mean = 0.0;
    if (!u_rms) {
      float part = 0.0;
      for (uint c = t; c < u_d; c += 64u) part += b_x[base + c];
      mean = groupSum(part) * inv_d;
    }
    float part = 0.0;
    for (uint c = t; c < u_d; c += 64u) {
      const float centred = b_x[base + c] - mean;
      part += centred * centred;
    }
    const float inv = 1.0 / sqrt(groupSum(part) * inv_d + u_eps);
    for (uint c = t; c < u_d; c += 64u) {
      float y = (b_x[base + c] - mean) * inv * b_g[c];
      if (u_has_bias) y += b_b[c];
      b_out[base + c] = u_add ? b_out[base + c] + y : y;
    }
  }
}
