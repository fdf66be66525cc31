// dst[:, u_col0 : u_col0 + u_width] = src, (u_rows, u_width): writes one head's block into a stacked matrix
// (every head's W side by side) on the GPU, so that an edit of one head uploads that head's numbers alone.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BSrc { float b_src[]; };   // (u_rows, u_width)
layout(std430, binding = 1) writeonly buffer BDst { float b_dst[]; };  // (u_rows, u_ld)

uniform uint u_rows, u_width, u_ld, u_col0;

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= u_width) return;
  for (uint r = gl_WorkGroupID.y; r < u_rows; r += gl_NumWorkGroups.y)
    b_dst[r * u_ld + u_col0 + c] = b_src[r * u_width + c];
}
