// Hand-built scenes for the analysis tests, whose weights follow from a formula written out by hand.
#pragma once

#include <cmath>

#include "attnscope/scene/scene.h"

namespace attnscope::test {

// Four tokens with one-hot inputs (X = I, 4 x 4), d_k = d_v = 4, scale 1, so a head's scores are X W_Q (X W_K)^T
// = W_Q W_K^T and its output is its weights (W_V = I):
//   head 0, previous-token: W_Q = s I, W_K[j][j+1] = 1 -> score(i, j) = s when j = i - 1, else 0
//   head 1, current-token:  W_Q = s I, W_K = I        -> score(i, j) = s when j = i
//   head 2, first-token:    W_Q[:, 0] = s, W_K[0][0] = 1 -> score(i, 0) = s
//   head 3, uniform:        W_Q = 0                  -> every weight 1/4
// With E = e^s / (e^s + 3) and F = 1 / (e^s + 3), a row with one key at score s has E there and F elsewhere;
// head 0's row 0 has no such key and is uniform (1/4).
// W_O (16 x 4) = four identity blocks stacked, so the output is the sum of the four heads' weights; b_O = 0.1.
inline constexpr double kPeak = 2.0;  // s
inline double peakE() { return std::exp(kPeak) / (std::exp(kPeak) + 3); }
inline double peakF() { return 1 / (std::exp(kPeak) + 3); }

inline Scene handHeadsScene() {
  const float s = static_cast<float>(kPeak);
  Scene scene;
  scene.d_model = 4;
  scene.query_tokens = {"a", "b", "c", "d"};
  scene.query = Matrix::Identity(4, 4);
  auto head = [](Matrix w_q, Matrix w_k) {
    return HeadParams{std::move(w_q), std::move(w_k), Matrix::Identity(4, 4), std::nullopt, std::nullopt, std::nullopt};
  };
  Matrix shift = Matrix::Zero(4, 4);
  for (int j = 0; j < 3; ++j) shift(j, j + 1) = 1;
  Matrix first_q = Matrix::Zero(4, 4), first_k = Matrix::Zero(4, 4);
  first_q.col(0).setConstant(s);
  first_k(0, 0) = 1;
  scene.heads = {head(s * Matrix::Identity(4, 4), shift), head(s * Matrix::Identity(4, 4), Matrix::Identity(4, 4)),
                 head(first_q, first_k), head(Matrix::Zero(4, 4), Matrix::Identity(4, 4))};
  Matrix w_o(16, 4);
  for (int b = 0; b < 4; ++b) w_o.middleRows(4 * b, 4) = Matrix::Identity(4, 4);
  scene.w_o = w_o;
  scene.b_o = RowVector::Constant(4, 0.1f);
  scene.scale = 1.0f;
  return scene;
}

// The hand weights of handHeadsScene's head `h`, row i, key j.
inline double handWeight(int h, int i, int j) {
  const double e = peakE(), f = peakF();
  switch (h) {
    case 0:
      return i == 0 ? 0.25 : (j == i - 1 ? e : f);
    case 1:
      return j == i ? e : f;
    case 2:
      return j == 0 ? e : f;
    default:
      return 0.25;
  }
}

// The cosine similarity of hand heads a and b: <W_a, W_b> / (|W_a| |W_b|) over the flattened hand weights.
// Distances 1 - cosine: d03 = 0.2650, d13 = d23 = 0.3155, d02 = 0.4493, d12 = 0.5315, d01 = 0.6396, so UPGMA
// by hand merges (0, 3) at d03, then (2, {0, 3}) at (d02 + d23) / 2 = 0.3824 (d(1, {0, 3}) = 0.4776 and d12
// are larger), then (1, {2, 0, 3}) at (d01 + d12 + d13) / 3 = 0.4956: leaf order 1, 2, 0, 3.
inline double handCosine(int a, int b) {
  double dot = 0, norm_a = 0, norm_b = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      dot += handWeight(a, i, j) * handWeight(b, i, j);
      norm_a += handWeight(a, i, j) * handWeight(a, i, j);
      norm_b += handWeight(b, i, j) * handWeight(b, i, j);
    }
  return dot / std::sqrt(norm_a * norm_b);
}

}  // namespace attnscope::test
