// Rotary position embeddings (RoPE), as Hugging Face's Llama, Mistral and Qwen apply them (`rotate_half`): the
// one definition the model forward and scenes with "rope" share.
#pragma once

#include <string>
#include <vector>

#include "attnscope/scene/rope_scaling.h"
#include "attnscope/types.h"

namespace attnscope {

// The dims/2 inverse frequencies: f_t = theta^(-2t/dims) for t < dims/2, then scaled. Computed in double.
// InputError (field `field`) if theta <= 0 or not finite, dims odd or < 2, or the scaling's numbers are absurd.
std::vector<double> ropeInverseFrequencies(double theta, int dims, const RopeScaling& scaling = {},
                                           const std::string& field = "rope");

// cos and sin of position x f_t for every (row, t), made once and applied to every head of every layer.
class RopeTable {
 public:
  RopeTable() = default;
  RopeTable(const std::vector<int>& positions, const std::vector<double>& inverse_frequencies);

  int rows() const { return rows_; }
  int dims() const { return 2 * half_; }

  // Rotates columns [col0, col0 + dims) of every row of x (rows, *) in place, row r by positions[r]: for t < dims/2,
  //   x[t]        <- x[t] cos - x[t + dims/2] sin
  //   x[t+dims/2] <- x[t + dims/2] cos + x[t] sin        (rotate_half: pairs t and t + dims/2, not 2t and 2t+1)
  // x.rows() must equal rows(); col0 + dims <= x.cols().
  void rotate(Matrix& x, int col0 = 0) const;

  // The table itself, (rows, dims/2) row-major: what the GPU backend uploads, so that both backends rotate by the
  // same rounded cos and sin.
  const std::vector<float>& cosines() const { return cos_; }
  const std::vector<float>& sines() const { return sin_; }

 private:
  int rows_ = 0, half_ = 0;
  std::vector<float> cos_, sin_;  // (rows, half), row-major; the angle is taken in double, then rounded
};

}  // namespace attnscope
