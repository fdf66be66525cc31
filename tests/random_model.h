// Random weights for tests and benchmarks that need a model but no file: normal draws of a chosen deviation, and a
// GPT-2 (its description, weights in its Conv1D layout (in, out)) whose attention logits span a few units, so its
// maps are neither uniform nor one-hot. One builder for the GPU forward test, the grid tiles' test and the forward
// benchmark.
#pragma once

#include <cmath>
#include <random>

#include "attnscope/model/family_configs.h"
#include "attnscope/model/model.h"
#include "attnscope/types.h"

namespace attnscope::test {

// (rows, cols) of N(0, stddev^2) draws, in storage order.
inline Matrix randomMatrix(int rows, int cols, float stddev, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, stddev);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

inline RowVector randomRow(int cols, float stddev, std::mt19937& rng) { return randomMatrix(1, cols, stddev, rng); }

struct Gpt2Shape {
  int layers, heads, d, vocab, positions;
  // LayerNorm gains 1 + N(0, 0.01), shifts and every bias N(0, 0.01); otherwise gains 1, shifts and biases 0.
  bool random_norms_and_biases = false;
};

// W_QK of deviation 2/sqrt(d): logits of a few units; W_O, W_up of 1/sqrt(d), W_down of 0.5/sqrt(d): a residual
// stream that stays of order 1 over the layers.
inline model::Model randomGpt2(const Gpt2Shape& shape, std::mt19937& rng) {
  const int d = shape.d;
  model::Model m;
  model::Weights& w = m.weights;
  w.arch = model::describeGpt2({.n_layer = shape.layers, .n_head = shape.heads, .n_embd = d,
                                .n_positions = shape.positions, .vocab_size = shape.vocab});
  m.model_type = w.arch.model_type;
  w.embed = randomMatrix(shape.vocab, d, 1.0f, rng);
  w.pos_embed = randomMatrix(shape.positions, d, 0.3f, rng);
  const float s = 1.0f / std::sqrt(static_cast<float>(d));
  const auto shift = [&](int cols) {
    return shape.random_norms_and_biases ? randomRow(cols, 0.1f, rng) : RowVector(RowVector::Zero(cols));
  };
  const auto norm = [&]() -> model::NormWeights {
    const RowVector g = RowVector::Ones(d) + shift(d);
    return {g, shift(d)};
  };
  for (int l = 0; l < shape.layers; ++l) {
    model::LayerWeights b;
    b.attn_norms.in = norm();
    b.w_qkv = randomMatrix(d, 3 * d, 2.0f * s, rng);
    b.b_qkv = shift(3 * d);
    b.w_o = randomMatrix(d, d, s, rng);
    b.b_o = shift(d);
    b.mlp_norms.in = norm();
    b.w_up = randomMatrix(d, 4 * d, s, rng);
    b.b_up = shift(4 * d);
    b.w_down = randomMatrix(4 * d, d, 0.5f * s, rng);
    b.b_down = shift(d);
    w.layers.push_back(std::move(b));
  }
  w.final_g = RowVector::Ones(d);
  w.final_b = RowVector::Zero(d);
  return m;
}

}  // namespace attnscope::test
