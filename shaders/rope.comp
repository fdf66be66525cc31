// Rotary positions: columns [u_col0, u_col0 + 2 u_half) of every row of X (u_rows, u_ld) rotated in place as
// compute/rope.h's RopeTable::rotate does (rotate_half: entry t pairs with t + u_half), by the cos and sin the
// CPU made from the same inverse frequencies, so both backends rotate by the same rounded numbers.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) buffer BX { float b_x[]; };               // (u_rows, u_ld): Q or K, heads side by side
layout(std430, binding = 1) readonly buffer BCos { float b_cos[]; };  // (u_rows, u_half)
layout(std430, binding = 2) readonly buffer BSin { float b_sin[]; };  // (u_rows, u_half)

uniform uint u_rows, u_ld, u_col0, u_half;

void main() {
  const uint t = gl_GlobalInvocationID.x;
  if (t >= u_half) return;
  for (uint r = gl_WorkGroupID.y; r < u_rows; r += gl_NumWorkGroups.y) {
    const uint i = r * u_ld + u_col0 + t;
    const float a = b_x[i], b = b_x[i + u_half];
    const float c = b_cos[r * u_half + t], s = b_sin[r * u_half + t];
    b_x[i] = a * c - b * s;
    b_x[i + u_half] = b * c + a * s;
  }
}
