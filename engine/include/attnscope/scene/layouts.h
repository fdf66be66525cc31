// Converters from frameworks' weight layouts to the Scene's per-head row-vector projections. Each layout is
// converted in exactly one function here.
#pragma once

#include <optional>
#include <vector>

#include "attnscope/scene/scene.h"

namespace attnscope {

// What the converters produce: per-head projections (biases set only when given) and the output projection.
struct Projections {
  std::vector<HeadParams> heads;
  std::optional<Matrix> w_o;     // (sum of d_v, d_model)
  std::optional<RowVector> b_o;  // (d_model)
};
// Replaces the scene's heads, w_o and b_o (sizes must then match the scene's d_model; validateScene checks).
void applyProjections(Scene& scene, Projections projections);

// How a fused QKV projection's 3d outputs are ordered.
enum class FusedQkvOrder {
  // [q | k | v], each block of d split into heads: GPT-2's c_attn, seed 002 (`qkv.split(n_embd)` then
  // `view(B, T, n_heads, d_h)`), and PyTorch nn.MultiheadAttention's in_proj.
  SplitThenHeads,
  // per head [q_i | k_i | v_i]: seed 003 (`reshape(B, T, heads, 3 * d_h)` then `chunk(3, dim=-1)`).
  HeadsThenSplit,
};

// A PyTorch-style Linear producing q, k and v at once: y = x W^T + b, W (3d, d), b (3d).
Projections fromFusedQkv(const Matrix& weight, const std::optional<RowVector>& bias, int heads,
                         FusedQkvOrder order);

// PyTorch nn.MultiheadAttention (batch_first or not; same weights): in_proj_weight (3E, E), in_proj_bias (3E),
// out_proj.weight (E, E), out_proj.bias (E); y = x W^T + b. Scale 1/sqrt(E / num_heads) is the default.
struct TorchMhaWeights {
  Matrix in_proj_weight;                 // (3E, E)
  std::optional<RowVector> in_proj_bias; // (3E)
  Matrix out_proj_weight;                // (E, E)
  std::optional<RowVector> out_proj_bias;// (E)
  int num_heads = 1;
};
Projections fromTorchMultiheadAttention(const TorchMhaWeights& weights);

// A dense 3-D array in C order, as Keras stores its MultiHeadAttention kernels.
struct Tensor3 {
  int d0 = 0, d1 = 0, d2 = 0;
  std::vector<float> data;  // d0 * d1 * d2, element (i, j, k) at (i * d1 + j) * d2 + k
  float at(int i, int j, int k) const { return data[(static_cast<std::size_t>(i) * d1 + j) * d2 + k]; }
};

// Keras MultiHeadAttention (x W, no transpose): query/key kernels (d_model, heads, key_dim), value kernel
// (d_model, heads, value_dim), biases (heads, dim), output kernel (heads, value_dim, d_model), output bias
// (d_model). Keras scales queries by 1/sqrt(key_dim), the Scene's default.
struct KerasMhaWeights {
  Tensor3 query_kernel, key_kernel, value_kernel, output_kernel;
  std::optional<Matrix> query_bias, key_bias, value_bias;  // (heads, dim)
  std::optional<RowVector> output_bias;                    // (d_model)
};
Projections fromKerasMultiHeadAttention(const KerasMhaWeights& weights);

}  // namespace attnscope
