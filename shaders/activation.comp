// A checkpoint MLP's activation (model/arch/forward.cpp's activate()): GELU's tanh form, GELU's erf form or SiLU.
// Plain (u_gated false): x = act(x) in place on (u_rows, u_cols). Gated: out = act(gate) * up, the input rows
// (u_rows, 2 u_cols) gate columns then up columns (a Llama-style gate_up, or a Mixtral expert's w1 | w3).
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) buffer BX { float b_x[]; };        // plain: (u_rows, u_cols); gated: (u_rows, 2 u_cols)
layout(std430, binding = 1) buffer BOut { float b_out[]; };    // gated: (u_rows, u_cols)

uniform uint u_rows, u_cols;
uniform uint u_activation;  // 0 GELU tanh, 1 GELU erf, 2 SiLU (model::Activation's order)
uniform bool u_gated;

// erf from Numerical Recipes' erfc (a Chebyshev fit, fractional error below 1.2e-7 everywhere): GLSL has none.
float erfApprox(float x) {
  const float z = abs(x), t = 1.0 / (1.0 + 0.5 * z);
  const float r = t * exp(-z * z - 1.26551223 +
                          t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
                          t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 +
                          t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

// tanh taken as +-1 past |x| = 10, where it is 1 in float (a tanh written as a ratio of exponentials is inf / inf).
float tanhSafe(float x) { return abs(x) >= 10.0 ? sign(x) : tanh(x); }

float activate(float z) {
  if (u_activation == 0u) return 0.5 * z * (1.0 + tanhSafe(0.7978845608028654 * (z + 0.044715 * z * z * z)));
  if (u_activation == 1u) return 0.5 * z * (1.0 + erfApprox(z * 0.70710678118654752));
  return z / (1.0 + exp(-z));
}

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= u_cols) return;
  for (uint r = gl_WorkGroupID.y; r < u_rows; r += gl_NumWorkGroups.y) {
    if (u_gated) {
      const uint in_row = r * 2u * u_cols;
      b_out[r * u_cols + c] = activate(b_x[in_row + c]) * b_x[in_row + u_cols + c];
    } else {
      b_x[r * u_cols + c] = activate(b_x[r * u_cols + c]);
    }
  }
}
