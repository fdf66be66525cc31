// The forward's first stage: each token's row of the embedding table, as the checkpoint stores it (common.glsl's
// weightAt), plus its learned position's row and the token-type row when the family has them, times the scale
// (Gemma's sqrt(hidden)), as model/arch/forward.cpp's embedTokens adds them. An encoder's norm follows
// (row_norm.comp).
#define ATTNSCOPE_WEIGHTS
#include "common.glsl"
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BTokens { uvec2 b_tokens[]; };    // (n): (id, position row)
layout(std430, binding = 2) readonly buffer BPositions { float b_pos[]; };    // (positions, u_d) when u_positions
layout(std430, binding = 3) readonly buffer BType { float b_type[]; };        // (u_d) when u_type
layout(std430, binding = 4) writeonly buffer BX { float b_x[]; };             // (n, u_d)

uniform uint u_rows, u_d;
uniform bool u_positions, u_type;
uniform float u_scale;

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= u_d) return;
  for (uint r = gl_WorkGroupID.y; r < u_rows; r += gl_NumWorkGroups.y) {
    const uvec2 token = b_tokens[r];
    float x = weightAt(token.x * u_d + c);
    if (u_positions) x += b_pos[token.y * u_d + c];
    if (u_type) x += b_type[c];
    b_x[r * u_d + c] = u_scale != 1.0 ? x * u_scale : x;
  }
}
