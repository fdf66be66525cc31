// A GPT-2 forward whose attention runs on the GPU engine (each layer as a scene) against the forward's own
// CPU loop, on random weights of GPT-2's layout (the CPU forward is checked against NumPy in
// tests/model/test_model_forward.cpp).
#include <gtest/gtest.h>

#include "attnscope/model/family_configs.h"
#include "attnscope/model/model.h"
#include "gpu_test_support.h"

using namespace attnscope;

namespace {

// GPT-2's description with random weights in its Conv1D layout.
model::Model randomGpt2(int layers, int heads, int d, int vocab, int positions, std::mt19937& rng) {
  model::Model m;
  model::Weights& w = m.weights;
  w.arch = model::describeGpt2({.n_layer = layers, .n_head = heads, .n_embd = d, .n_positions = positions,
                                .vocab_size = vocab});
  m.model_type = w.arch.model_type;
  w.embed = test::randomMatrix(vocab, d, 1.0f, rng);
  w.pos_embed = test::randomMatrix(positions, d, 0.3f, rng);
  const float s = 1.0f / std::sqrt(static_cast<float>(d));
  for (int l = 0; l < layers; ++l) {
    model::LayerWeights b;
    b.attn_norms.in.g = RowVector::Ones(d) + test::randomRow(d, 0.1f, rng);
    b.attn_norms.in.b = test::randomRow(d, 0.1f, rng);
    b.w_qkv = test::randomMatrix(d, 3 * d, 2.0f * s, rng);  // logits of a few units: non-trivial maps
    b.b_qkv = test::randomRow(3 * d, 0.1f, rng);
    b.w_o = test::randomMatrix(d, d, s, rng);
    b.b_o = test::randomRow(d, 0.1f, rng);
    b.mlp_norms.in.g = RowVector::Ones(d) + test::randomRow(d, 0.1f, rng);
    b.mlp_norms.in.b = test::randomRow(d, 0.1f, rng);
    b.w_up = test::randomMatrix(d, 4 * d, s, rng);
    b.b_up = test::randomRow(4 * d, 0.1f, rng);
    b.w_down = test::randomMatrix(4 * d, d, 0.5f * s, rng);
    b.b_down = test::randomRow(d, 0.1f, rng);
    w.layers.push_back(std::move(b));
  }
  w.final_g = RowVector::Ones(d);
  w.final_b = RowVector::Zero(d);
  return m;
}

TEST(GpuModel, ForwardWithGpuAttentionMatchesTheCpuLoop) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  std::mt19937 rng(5);
  const model::Model m = randomGpt2(3, 4, 32, 50, 80, rng);
  std::vector<int> ids;
  for (int i = 0; i < 70; ++i) ids.push_back(static_cast<int>(rng() % 50));
  const model::ForwardResult cpu = model::modelForward(m, ids);
  const model::ForwardResult on_gpu = model::modelForward(m, ids, {.attention = gpu});
  ASSERT_EQ(on_gpu.n, 70);
  // Two float32 orders of summation, carried through three layers of residual stream and MLP: seen 2.0e-06
  // on the maps and 8.4e-06 on the final hidden states, so 1e-5 and 5e-5 (within ~6x of the error seen).
  double worst = 0;
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 4; ++h) {
      const Matrix want = cpu.map(l, h);
      ASSERT_EQ(want.rows(), 70);
      ASSERT_EQ(want.cols(), 70);
      worst = test::worse(worst, test::maxError(on_gpu.map(l, h), want, test::kMixed, "map"));
    }
  EXPECT_LE(worst, 1e-5);
  ASSERT_EQ(cpu.hidden.rows(), 70);
  ASSERT_EQ(cpu.hidden.cols(), 32);
  const double hidden = test::expectClose(on_gpu.hidden, cpu.hidden, 5e-5, "hidden", test::kMixed);
  std::printf("[ model    ] GPU attention vs CPU loop: maps %.2g, hidden %.2g\n", worst, hidden);
}

}  // namespace
