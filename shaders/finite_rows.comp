// The forward's overflow check on the GPU (forward_shared.h's checkStage): the first row of X (u_rows, u_cols)
// holding a NaN or an infinity, as atomicMin into b_flags[u_slot] (initialised to 0xffffffff: none). One slot per
// stage of each layer; the host reads the slots once, after the last layer, and names the first stage that
// overflowed. By bit pattern: an optimising compiler may assume no NaN or infinity in isnan() / isinf().
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BX { float b_x[]; };  // (u_rows, u_cols)
layout(std430, binding = 1) buffer BFlags { uint b_flags[]; };

uniform uint u_rows, u_cols, u_slot;

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= u_cols) return;
  for (uint r = gl_WorkGroupID.y; r < u_rows; r += gl_NumWorkGroups.y)
    if ((floatBitsToUint(b_x[r * u_cols + c]) & 0x7f800000u) == 0x7f800000u) {  // exponent all ones
      atomicMin(b_flags[u_slot], r);
      return;  // later rows of this column cannot be first
    }
}
