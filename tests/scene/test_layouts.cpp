// Layout converters against hand-built cases, and against the frameworks' own forward formulas written out
// literally in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/scene/layouts.h"
#include "compare.h"

using namespace attnscope;

namespace {

// A (rows, cols) matrix with entry (r, c) = 10 r + c: every entry names its own position.
Matrix positional(int rows, int cols) {
  Matrix m(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m(r, c) = static_cast<float>(10 * r + c);
  return m;
}

Matrix randomMatrix(int rows, int cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.5f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

// Softmax attention of one head in double: q (n, d_h), k (n, d_h), v (n, d_h).
Eigen::MatrixXd attend(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k, const Eigen::MatrixXd& v) {
  Eigen::MatrixXd s = q * k.transpose() / std::sqrt(static_cast<double>(q.cols()));
  for (int i = 0; i < s.rows(); ++i) {
    s.row(i).array() = (s.row(i).array() - s.row(i).maxCoeff()).exp();
    s.row(i) /= s.row(i).sum();
  }
  return s * v;
}

}  // namespace

TEST(Layouts, FusedSplitThenHeadsPicksRowsByHand) {
  // d = 4, 2 heads of 2. Outputs [q0 q1 q2 q3 | k0..k3 | v0..v3]; head 1's q are outputs 2, 3, its k are
  // outputs 6, 7 and its v outputs 10, 11. W_Q[1](c, j) = W(2 + j, c) = 10 (2 + j) + c.
  const Projections p = fromFusedQkv(positional(12, 4), std::nullopt, 2, FusedQkvOrder::SplitThenHeads);
  ASSERT_EQ(p.heads.size(), 2u);
  EXPECT_EQ(p.heads[1].w_q.rows(), 4);
  EXPECT_EQ(p.heads[1].w_q.cols(), 2);
  EXPECT_EQ(p.heads[1].w_q(0, 0), 20.0f);
  EXPECT_EQ(p.heads[1].w_q(0, 1), 30.0f);
  EXPECT_EQ(p.heads[1].w_q(3, 1), 33.0f);
  EXPECT_EQ(p.heads[1].w_k(1, 0), 61.0f);
  EXPECT_EQ(p.heads[1].w_v(2, 1), 112.0f);
  EXPECT_EQ(p.heads[0].w_k(0, 0), 40.0f);
  EXPECT_FALSE(p.heads[0].b_q.has_value());
}

TEST(Layouts, FusedHeadsThenSplitPicksRowsByHand) {
  // Seed 003: per head [q | k | v] of 2 each. Head 1's q are outputs 6, 7; k 8, 9; v 10, 11.
  RowVector bias(12);
  for (int i = 0; i < 12; ++i) bias[i] = static_cast<float>(100 + i);
  const Projections p = fromFusedQkv(positional(12, 4), bias, 2, FusedQkvOrder::HeadsThenSplit);
  EXPECT_EQ(p.heads[1].w_q(0, 0), 60.0f);
  EXPECT_EQ(p.heads[1].w_k(3, 1), 93.0f);
  EXPECT_EQ(p.heads[1].w_v(0, 0), 100.0f);
  EXPECT_EQ(p.heads[0].w_v(1, 1), 51.0f);  // head 0's v are outputs 4, 5: W(5, 1) = 51
  EXPECT_EQ((*p.heads[1].b_k)[0], 108.0f);
  EXPECT_EQ((*p.heads[0].b_v)[1], 105.0f);
}

TEST(Layouts, TorchMultiheadAttentionMatchesTheTorchFormula) {
  // PyTorch's forward written out: qkv = x W_in^T + b_in; q, k, v = split(E); head i = columns i*hd..;
  // out = concat W_out^T + b_out. In double; the backend runs in float32: tolerance 1e-5, seen ~1e-6.
  std::mt19937 rng(1);
  const int n = 5, e = 6, heads = 3, hd = 2;
  TorchMhaWeights w;
  w.in_proj_weight = randomMatrix(3 * e, e, rng);
  w.in_proj_bias = RowVector(randomMatrix(1, 3 * e, rng));
  w.out_proj_weight = randomMatrix(e, e, rng);
  w.out_proj_bias = RowVector(randomMatrix(1, e, rng));
  w.num_heads = heads;
  const Matrix x = randomMatrix(n, e, rng);

  const Eigen::MatrixXd xd = x.cast<double>();
  Eigen::MatrixXd qkv = xd * w.in_proj_weight.cast<double>().transpose();
  qkv.rowwise() += w.in_proj_bias->cast<double>();
  Eigen::MatrixXd concat(n, e);
  for (int i = 0; i < heads; ++i)
    concat.middleCols(i * hd, hd) = attend(qkv.middleCols(i * hd, hd), qkv.middleCols(e + i * hd, hd),
                                           qkv.middleCols(2 * e + i * hd, hd));
  Eigen::MatrixXd expected = concat * w.out_proj_weight.cast<double>().transpose();
  expected.rowwise() += w.out_proj_bias->cast<double>();

  Scene scene;
  scene.d_model = e;
  scene.query = x;
  for (int i = 0; i < n; ++i) scene.query_tokens.push_back("t" + std::to_string(i));
  applyProjections(scene, fromTorchMultiheadAttention(w));
  const Result r = CpuBackend(1).compute(scene);
  test::expectClose(r.output, expected, 1e-5, "output");
}

TEST(Layouts, Seed003FusedLayoutMatchesItsReshapeAndChunk) {
  // Seed 003: qkv.reshape(n, heads, 3 hd), chunk(3, -1), einsum; no output projection here (concat).
  std::mt19937 rng(2);
  const int n = 4, d = 6, heads = 2, hd = 3;
  const Matrix weight = randomMatrix(3 * d, d, rng), x = randomMatrix(n, d, rng);
  const Eigen::MatrixXd qkv = x.cast<double>() * weight.cast<double>().transpose();  // (n, 3d)
  Eigen::MatrixXd concat(n, d);
  for (int i = 0; i < heads; ++i) {
    const Eigen::MatrixXd per_head = qkv.middleCols(i * 3 * hd, 3 * hd);  // reshape(n, heads, 3 hd)[:, i, :]
    concat.middleCols(i * hd, hd) =
        attend(per_head.middleCols(0, hd), per_head.middleCols(hd, hd), per_head.middleCols(2 * hd, hd));
  }
  Scene scene;
  scene.d_model = d;
  scene.query = x;
  scene.query_tokens = {"a", "b", "c", "d"};
  applyProjections(scene, fromFusedQkv(weight, std::nullopt, heads, FusedQkvOrder::HeadsThenSplit));
  const Result r = CpuBackend(1).compute(scene);
  test::expectClose(r.output, concat, 1e-5, "output");
}

TEST(Layouts, KerasKernelsSliceByHand) {
  // Kernels filled with 0, 1, 2, ... in C order. query kernel (3, 2, 2): element (r, h, c) = (2 r + h) 2 + c,
  // so head 1's W_Q rows are [2, 3], [6, 7], [10, 11]. Output kernel (2, 2, 3) = 0..11: row h*2 + j of W_O is
  // kernel[h, j, :], so W_O is that data as a 4 x 3 matrix and row 3 = [9, 10, 11].
  auto counting = [](int a, int b, int c) {
    Tensor3 t{a, b, c, {}};
    for (int i = 0; i < a * b * c; ++i) t.data.push_back(static_cast<float>(i));
    return t;
  };
  KerasMhaWeights w;
  w.query_kernel = w.key_kernel = w.value_kernel = counting(3, 2, 2);
  w.output_kernel = counting(2, 2, 3);
  Matrix qb(2, 2);
  qb << 1, 2, 3, 4;
  w.query_bias = qb;
  const Projections p = fromKerasMultiHeadAttention(w);
  ASSERT_EQ(p.heads.size(), 2u);
  EXPECT_EQ(p.heads[1].w_q(0, 0), 2.0f);
  EXPECT_EQ(p.heads[1].w_q(1, 1), 7.0f);
  EXPECT_EQ(p.heads[1].w_q(2, 0), 10.0f);
  EXPECT_EQ(p.heads[0].w_v(2, 1), 9.0f);
  EXPECT_EQ((*p.heads[1].b_q)[1], 4.0f);
  EXPECT_FALSE(p.heads[1].b_k.has_value());
  ASSERT_TRUE(p.w_o.has_value());
  EXPECT_EQ((*p.w_o)(3, 0), 9.0f);
  EXPECT_EQ((*p.w_o)(3, 2), 11.0f);
  EXPECT_EQ((*p.w_o)(1, 1), 4.0f);
}

TEST(Layouts, WrongShapesNameTheField) {
  try {
    fromFusedQkv(Matrix::Zero(11, 4), std::nullopt, 2, FusedQkvOrder::SplitThenHeads);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "qkv weight: expected 12 x 4 (3d x d), got 11 x 4");
  }
  try {
    fromFusedQkv(Matrix::Zero(12, 4), std::nullopt, 3, FusedQkvOrder::SplitThenHeads);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "num_heads: expected a divisor of d = 4, got 3");
  }
  KerasMhaWeights w;
  w.query_kernel = w.key_kernel = w.value_kernel = Tensor3{3, 2, 2, std::vector<float>(12)};
  w.output_kernel = Tensor3{2, 2, 4, std::vector<float>(16)};
  try {
    fromKerasMultiHeadAttention(w);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "output_kernel: expected [2, 2, 3], got [2, 2, 4]");
  }
}
