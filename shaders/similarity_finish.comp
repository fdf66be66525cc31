// Head similarity, second pass: sums each pair's partials into the (h, h) cosine and Jensen-Shannon matrices.
// cosine(a, b) = dot(a, b) / (|a| |b|), unit diagonal; js(a, b) = JS summed over rows / rows that attend
// something (u_valid_rows), zero diagonal.
#include "common.glsl"

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BP { vec2 b_partial[]; };     // (h * h pairs, u_groups)
layout(std430, binding = 1) writeonly buffer BCos { float b_cosine[]; };  // (h, h)
layout(std430, binding = 2) writeonly buffer BJs { float b_js[]; };       // (h, h)

uniform uint u_heads, u_groups, u_valid_rows;

vec2 pairTotal(uint a, uint b) {  // pairs are stored once, with a <= b
  const uint first = (min(a, b) * u_heads + max(a, b)) * u_groups;
  vec2 total = vec2(0.0);
  for (uint g = 0u; g < u_groups; ++g) total += b_partial[first + g];
  return total;
}

void main() {
  const uint index = gl_GlobalInvocationID.x;
  if (index >= u_heads * u_heads) return;
  const uint a = index / u_heads, b = index % u_heads;
  if (a == b) {
    b_cosine[index] = 1.0;
    b_js[index] = 0.0;
    return;
  }
  const vec2 ab = pairTotal(a, b);
  const float denom = sqrt(pairTotal(a, a).x) * sqrt(pairTotal(b, b).x);
  b_cosine[index] = denom > 0.0 ? ab.x / denom : 0.0;
  b_js[index] = u_valid_rows > 0u ? ab.y / float(u_valid_rows) : 0.0;
}
