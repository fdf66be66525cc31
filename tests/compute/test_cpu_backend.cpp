// CPU backend properties: rows sum to 1, causal zeros, permutation equivariance, single-head equivalence,
// naive per-head loop equal to the batched form, masks, fully masked rows.
#include <gtest/gtest.h>

#include <cmath>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/scene/presets.h"
#include "attnscope/compute/similarity.h"

using namespace attnscope;

namespace {

// The seed 001 "naive" formulation, written independently of the backend: per head, in double.
struct Naive {
  std::vector<Eigen::MatrixXd> weights;
  Eigen::MatrixXd output;
};
Naive naiveAttention(const Scene& s) {
  Naive r;
  const Eigen::MatrixXd x = s.query.cast<double>();
  std::vector<Eigen::MatrixXd> heads;
  int width = 0;
  for (const HeadParams& p : s.heads) {
    const Eigen::MatrixXd q = x * p.w_q.cast<double>(), k = x * p.w_k.cast<double>(), v = x * p.w_v.cast<double>();
    Eigen::MatrixXd sc = q * k.transpose() / std::sqrt(static_cast<double>(p.dK()));
    if (s.mask == MaskKind::Causal)
      for (int i = 0; i < sc.rows(); ++i)
        for (int j = i + 1; j < sc.cols(); ++j) sc(i, j) = -INFINITY;
    for (int i = 0; i < sc.rows(); ++i) {
      const double m = sc.row(i).maxCoeff();
      double sum = 0;
      for (int j = 0; j < sc.cols(); ++j) sum += (sc(i, j) = std::exp(sc(i, j) - m));
      sc.row(i) /= sum;
    }
    r.weights.push_back(sc);
    heads.push_back(sc * v);
    width += p.dV();
  }
  Eigen::MatrixXd concat(x.rows(), width);
  int col = 0;
  for (const auto& h : heads) {
    concat.middleCols(col, h.cols()) = h;
    col += static_cast<int>(h.cols());
  }
  r.output = s.w_o ? Eigen::MatrixXd(concat * s.w_o->cast<double>()) : concat;
  return r;
}

}  // namespace

TEST(CpuBackend, MatchesNaivePerHeadLoop) {
  // Tolerance 1e-5 absolute: float32 against double; seen up to ~1e-6 on these sizes.
  for (bool causal : {false, true}) {
    const Scene s = makeRandomScene({.n = 13, .heads = 3, .d_model = 12, .d_k = 5, .d_v = 3, .causal = causal, .seed = 7});
    const Result r = CpuBackend(2).compute(s);
    const Naive n = naiveAttention(s);
    for (int h = 0; h < 3; ++h) {
      EXPECT_LT((r.heads[h].weights.cast<double>() - n.weights[h]).cwiseAbs().maxCoeff(), 1e-5);
    }
    EXPECT_LT((r.output.cast<double>() - n.output).cwiseAbs().maxCoeff(), 1e-5);
  }
}

TEST(CpuBackend, RowsSumToOneAndCausalUpperTriangleIsExactlyZero) {
  const Scene s = makeRandomScene({.n = 17, .heads = 4, .d_model = 16, .causal = true, .seed = 3});
  const Result r = CpuBackend().compute(s);
  for (const HeadResult& h : r.heads) {
    for (int i = 0; i < 17; ++i) {
      EXPECT_NEAR(h.weights.row(i).sum(), 1.0f, 1e-6f);
      for (int j = i + 1; j < 17; ++j) {
        EXPECT_EQ(h.weights(i, j), 0.0f);
        EXPECT_EQ(h.scores(i, j), -INFINITY);
      }
    }
  }
  EXPECT_TRUE(r.warnings.empty());
}

TEST(CpuBackend, PermutingTokensPermutesEverythingWithoutAMask) {
  // Self-attention without a mask is permutation equivariant: permuting the input rows by P permutes the
  // weights as P W P^T and the output as P Y. Tolerance 1e-6 (float; seen ~1e-7).
  Scene s = makeRandomScene({.n = 9, .heads = 2, .d_model = 8, .seed = 11});
  const Result r = CpuBackend(1).compute(s);
  const std::vector<int> perm = {3, 0, 8, 1, 7, 2, 6, 4, 5};  // new row i = old row perm[i]
  Scene p = s;
  for (int i = 0; i < 9; ++i) p.query.row(i) = s.query.row(perm[i]);
  const Result rp = CpuBackend(1).compute(p);
  for (int i = 0; i < 9; ++i) {
    EXPECT_LT((rp.output.row(i) - r.output.row(perm[i])).cwiseAbs().maxCoeff(), 1e-6f);
    for (int j = 0; j < 9; ++j)
      EXPECT_NEAR(rp.heads[1].weights(i, j), r.heads[1].weights(perm[i], perm[j]), 1e-6f);
  }
}

TEST(CpuBackend, OneHeadOfSizeDIsSingleHeadAttention) {
  // h = 1, d_k = d_v = d: softmax(Q K^T / sqrt(d)) V W_O, the single-head formula, evaluated here in double.
  const Scene s = makeRandomScene({.n = 6, .heads = 1, .d_model = 5, .d_k = 5, .d_v = 5, .seed = 5});
  const Result r = CpuBackend(1).compute(s);
  const Eigen::MatrixXd x = s.query.cast<double>();
  const Eigen::MatrixXd q = x * s.heads[0].w_q.cast<double>(), k = x * s.heads[0].w_k.cast<double>(),
                        v = x * s.heads[0].w_v.cast<double>();
  Eigen::MatrixXd w = (q * k.transpose() / std::sqrt(5.0)).array().exp().matrix();
  for (int i = 0; i < 6; ++i) w.row(i) /= w.row(i).sum();
  const Eigen::MatrixXd y = w * v * s.w_o->cast<double>();
  EXPECT_LT((r.output.cast<double>() - y).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_EQ(r.concat.cols(), 5);
}

TEST(CpuBackend, SimilarityIsSymmetricWithUnitDiagonal) {
  const Scene s = makeRandomScene({.n = 10, .heads = 5, .d_model = 10, .seed = 2});
  const Result r = CpuBackend().compute(s);
  ASSERT_EQ(r.similarity.cosine.rows(), 5);
  for (int a = 0; a < 5; ++a) {
    EXPECT_FLOAT_EQ(r.similarity.cosine(a, a), 1.0f);
    EXPECT_EQ(r.similarity.js(a, a), 0.0f);
    for (int b = 0; b < 5; ++b) {
      EXPECT_EQ(r.similarity.cosine(a, b), r.similarity.cosine(b, a));
      EXPECT_EQ(r.similarity.js(a, b), r.similarity.js(b, a));
      EXPECT_GE(r.similarity.js(a, b), 0.0f);
      EXPECT_LE(r.similarity.js(a, b), std::log(2.0f) + 1e-6f);
    }
  }
}

TEST(CpuBackend, SimilarityAndStatsOfHandMadeMaps) {
  // Two 2x2 maps: A = [[1, 0], [0.5, 0.5]], B = [[0, 1], [0.5, 0.5]].
  // cosine = (1*0 + 0*1 + .25 + .25) / (sqrt(1 + .5) sqrt(1 + .5)) = 0.5 / 1.5 = 1/3.
  // JS row 0: p = (1, 0), q = (0, 1), m = (.5, .5): 1/2 (1 ln 2) + 1/2 (1 ln 2) = ln 2; row 1: 0. Mean ln2 / 2.
  Matrix a(2, 2), b(2, 2);
  a << 1, 0, 0.5f, 0.5f;
  b << 0, 1, 0.5f, 0.5f;
  const Similarity s = headSimilarity({&a, &b});
  EXPECT_NEAR(s.cosine(0, 1), 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(s.js(0, 1), std::log(2.0) / 2.0, 1e-6);
  // Stats of B: entropy rows 0 and ln 2 -> mean ln2 / 2; distance row 0: 1 * |0 - 1| = 1, row 1: .5 * 1 = .5
  // -> 0.75; max weight 1.
  const HeadStats st = headStats(b);
  EXPECT_NEAR(st.entropy, std::log(2.0) / 2.0, 1e-6);
  EXPECT_NEAR(st.mean_distance, 0.75, 1e-6);
  EXPECT_EQ(st.max_weight, 1.0f);
}

TEST(CpuBackend, KeyPaddingAndExplicitMaskCombineAndAFullyMaskedRowWarns) {
  Scene s = makeRandomScene({.n = 4, .heads = 2, .d_model = 4, .seed = 9});
  s.mask = MaskKind::Explicit;
  s.explicit_mask = MaskMatrix::Ones(4, 4);
  s.explicit_mask.row(2).setZero();     // query 2 attends nothing
  s.explicit_mask(0, 1) = 0;
  s.key_padding = {0, 0, 0, 1};         // key 3 is padding
  const Result r = CpuBackend().compute(s);
  for (const HeadResult& h : r.heads) {
    for (int j = 0; j < 4; ++j) EXPECT_EQ(h.weights(2, j), 0.0f);  // all zero, not NaN
    EXPECT_EQ(h.weights(0, 1), 0.0f);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(h.weights(i, 3), 0.0f);
    for (int i : {0, 1, 3}) EXPECT_NEAR(h.weights.row(i).sum(), 1.0f, 1e-6f);
    EXPECT_TRUE(h.output.allFinite());
    EXPECT_EQ(h.output.row(2).cwiseAbs().maxCoeff(), 0.0f);
  }
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("query row 2 ('t2') has every key masked"), std::string::npos);
  EXPECT_TRUE(r.similarity.cosine.allFinite());
  EXPECT_TRUE(r.similarity.js.allFinite());
}

TEST(CpuBackend, CrossAttentionWithSeparateKeyAndValueRows) {
  // n_q = 2 queries over n_k = 3 keys. With W_Q = W_K = W_V = I (d = 2, one head, scale 1):
  // query (1, 0) against keys (0, 0), (1, 0), (2, 0): scores 0, 1, 2 -> softmax e^(0,1,2)/(1+e+e^2)
  // = (0.09003, 0.24473, 0.66524); values (1,1),(2,2),(3,3) -> output 0.09003 + 2*0.24473 + 3*0.66524 = 2.57521.
  Scene s;
  s.d_model = 2;
  s.query = Matrix{{1, 0}, {0, 1}};
  s.key = Matrix{{0, 0}, {1, 0}, {2, 0}};
  s.value = Matrix{{1, 1}, {2, 2}, {3, 3}};
  s.query_tokens = {"q0", "q1"};
  s.key_tokens = {"k0", "k1", "k2"};
  s.heads.push_back(HeadParams{Matrix::Identity(2, 2), Matrix::Identity(2, 2), Matrix::Identity(2, 2), {}, {}, {}});
  s.scale = 1.0f;
  const Result r = CpuBackend(1).compute(s);
  ASSERT_EQ(r.heads[0].weights.rows(), 2);
  ASSERT_EQ(r.heads[0].weights.cols(), 3);
  EXPECT_NEAR(r.heads[0].weights(0, 0), 0.09003f, 1e-5f);
  EXPECT_NEAR(r.heads[0].weights(0, 2), 0.66524f, 1e-5f);
  EXPECT_NEAR(r.output(0, 0), 2.57521f, 1e-4f);
  // query (0, 1) scores 0 against every key: uniform thirds, output 2.
  EXPECT_NEAR(r.heads[0].weights(1, 1), 1.0f / 3.0f, 1e-6f);
  EXPECT_NEAR(r.output(1, 1), 2.0f, 1e-5f);
}

TEST(CpuBackend, RecomputingOneHeadEqualsAFullRecompute) {
  Scene s = makeRandomScene({.n = 7, .heads = 3, .d_model = 6, .seed = 4});
  CpuBackend backend(1);
  Result r = backend.compute(s);
  s.heads[1].w_q(2, 1) += 0.75f;
  s.heads[1].b_v = RowVector::Constant(2, 0.25f);
  backend.recomputeHead(s, 1, r);
  const Result full = backend.compute(s);
  // Not bit-equal: the full compute projects all heads in one stacked product, summed in another order.
  // Tolerance 1e-6; seen 6e-8.
  EXPECT_LT((r.output - full.output).cwiseAbs().maxCoeff(), 1e-6f);
  EXPECT_LT((r.heads[1].weights - full.heads[1].weights).cwiseAbs().maxCoeff(), 1e-6f);
  EXPECT_LT((r.similarity.cosine - full.similarity.cosine).cwiseAbs().maxCoeff(), 1e-6f);
}

TEST(CpuBackend, LargeMagnitudesDoNotOverflowTheSoftmax) {
  // Scores of order 1e4: exp would overflow without the max subtraction. The largest score wins (weight 1).
  Scene s = makeRandomScene({.n = 5, .heads = 1, .d_model = 4, .seed = 8});
  s.query *= 100.0f;
  const Result r = CpuBackend(1).compute(s);
  EXPECT_TRUE(r.heads[0].weights.allFinite());
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(r.heads[0].weights.row(i).sum(), 1.0f, 1e-6f);
}
