// CPU backend properties: rows sum to 1, causal zeros, permutation equivariance, single-head equivalence,
// naive per-head loop equal to the batched form, masks, fully masked rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/scene/presets.h"
#include "attnscope/compute/similarity.h"
#include "compare.h"

using namespace attnscope;

namespace {

// The seed 001 "naive" formulation, written independently of the backend (no allowedMask, keyRows or
// headScale): per head, in double, with every scene feature from the Scene's documented meaning: biases
// b_q, b_k, b_v and b_o, separate key and value rows, the causal mask (top-left aligned: j <= i), an explicit
// mask, key padding, the scale override. A row with every key masked has weights 0 and head output 0.
struct Naive {
  std::vector<Eigen::MatrixXd> scores;   // (n_q, n_k) each, -inf where masked
  std::vector<Eigen::MatrixXd> weights;  // (n_q, n_k) each
  Eigen::MatrixXd output;                // (n_q, d_model), or (n_q, sum d_v) without W_O
};
Eigen::MatrixXd plusRow(Eigen::MatrixXd m, const std::optional<RowVector>& bias) {
  if (bias) m.rowwise() += bias->cast<double>();
  return m;
}
Naive naiveAttention(const Scene& s) {
  Naive r;
  const Eigen::MatrixXd xq = s.query.cast<double>();
  const Eigen::MatrixXd xk = s.key ? Eigen::MatrixXd(s.key->cast<double>()) : xq;
  const Eigen::MatrixXd xv = s.value ? Eigen::MatrixXd(s.value->cast<double>()) : xk;
  const Eigen::Index n_q = xq.rows(), n_k = xk.rows();
  auto allowed = [&](Eigen::Index i, Eigen::Index j) {
    if (!s.key_padding.empty() && s.key_padding[static_cast<std::size_t>(j)]) return false;
    if (s.mask == MaskKind::Causal) return j <= i;
    if (s.mask == MaskKind::Explicit) return s.explicit_mask(i, j) != 0;
    return true;
  };
  std::vector<Eigen::MatrixXd> heads;
  for (const HeadParams& p : s.heads) {
    const Eigen::MatrixXd q = plusRow(xq * p.w_q.cast<double>(), p.b_q), k = plusRow(xk * p.w_k.cast<double>(), p.b_k),
                          v = plusRow(xv * p.w_v.cast<double>(), p.b_v);
    const double scale = s.scale ? static_cast<double>(*s.scale) : 1.0 / std::sqrt(static_cast<double>(q.cols()));
    Eigen::MatrixXd sc = q * k.transpose() * scale;
    Eigen::MatrixXd w = Eigen::MatrixXd::Zero(n_q, n_k);
    for (Eigen::Index i = 0; i < n_q; ++i) {
      double m = -INFINITY;
      for (Eigen::Index j = 0; j < n_k; ++j) {
        if (!allowed(i, j)) sc(i, j) = -INFINITY;
        m = std::max(m, sc(i, j));
      }
      if (m == -INFINITY) continue;  // every key masked: weights stay 0
      double sum = 0;
      for (Eigen::Index j = 0; j < n_k; ++j) sum += (w(i, j) = allowed(i, j) ? std::exp(sc(i, j) - m) : 0.0);
      w.row(i) /= sum;
    }
    r.scores.push_back(sc);
    r.weights.push_back(w);
    heads.push_back(w * v);
  }
  Eigen::MatrixXd concat(n_q, 0);
  for (const Eigen::MatrixXd& h : heads) {
    Eigen::MatrixXd wider(n_q, concat.cols() + h.cols());
    wider << concat, h;
    concat = wider;
  }
  r.output = s.w_o ? plusRow(concat * s.w_o->cast<double>(), s.b_o) : concat;
  return r;
}

// Every head's weights and scores and the output against the naive reference. Absolute tolerance on weights
// and output, mixed (|d| / (1 + |ref|)) on scores, whose masked -inf must be met exactly.
void expectMatchesNaive(const Scene& s, double tolerance, const std::string& what) {
  const Result r = CpuBackend(2).compute(s);
  const Naive n = naiveAttention(s);
  ASSERT_EQ(r.heads.size(), n.weights.size()) << what;
  for (std::size_t h = 0; h < n.weights.size(); ++h) {
    const std::string at = what + " head " + std::to_string(h);
    test::expectClose(r.heads[h].weights, n.weights[h], tolerance, at + " weights");
    test::expectClose(r.heads[h].scores, n.scores[h], tolerance, at + " scores", test::kMixedWithMasks);
  }
  test::expectClose(r.output, n.output, tolerance, what + " output");
}

Matrix randomRows(int rows, int cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

}  // namespace

// Tolerance 5e-6: float32 against double; seen at most 9.2e-7 over these scenes (weights and outputs
// absolute, scores mixed; all of order 1).
constexpr double kNaiveTol = 5e-6;
TEST(CpuBackend, MatchesNaivePerHeadLoop) {
  for (bool causal : {false, true}) {
    const Scene s = makeRandomScene({.n = 13, .heads = 3, .d_model = 12, .d_k = 5, .d_v = 3, .causal = causal, .seed = 7});
    expectMatchesNaive(s, kNaiveTol, causal ? "causal" : "no mask");
  }
}

TEST(CpuBackend, MatchesNaiveWithEveryFeature) {
  const Scene base =
      makeRandomScene({.n = 11, .heads = 3, .d_model = 8, .d_k = 4, .d_v = 3, .with_w_o = true, .seed = 21});
  Scene biases = base;
  for (int h = 0; h < 3; ++h) {
    biases.heads[static_cast<std::size_t>(h)].b_q = randomRows(1, 4, 100u + h);
    biases.heads[static_cast<std::size_t>(h)].b_k = randomRows(1, 4, 200u + h);
    biases.heads[static_cast<std::size_t>(h)].b_v = randomRows(1, 3, 300u + h);
  }
  expectMatchesNaive(biases, kNaiveTol, "b_q b_k b_v");
  Scene b_o = base;
  b_o.b_o = randomRows(1, 8, 400);
  expectMatchesNaive(b_o, kNaiveTol, "b_o");
  Scene scale = base;
  scale.scale = 0.9f;
  expectMatchesNaive(scale, kNaiveTol, "scale override");
  Scene padding = base;
  padding.key_padding = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1};
  expectMatchesNaive(padding, kNaiveTol, "key padding");
  Scene causal_padding = padding;
  causal_padding.mask = MaskKind::Causal;  // row 1 keeps key 0 only; row 0 keeps key 0
  expectMatchesNaive(causal_padding, kNaiveTol, "causal and key padding");
  Scene explicit_mask = base;
  explicit_mask.mask = MaskKind::Explicit;
  explicit_mask.explicit_mask = MaskMatrix(11, 11);
  std::mt19937 rng(5);
  for (Eigen::Index i = 0; i < explicit_mask.explicit_mask.size(); ++i)
    explicit_mask.explicit_mask.data()[i] = rng() % 3 != 0 ? 1 : 0;
  explicit_mask.explicit_mask.row(4).setZero();  // a fully masked row: weights 0
  expectMatchesNaive(explicit_mask, kNaiveTol, "explicit mask");
  Scene cross = biases;  // 11 queries over 7 keys, values separate rows; causal top-left aligned
  cross.key = randomRows(7, 8, 500);
  cross.value = randomRows(7, 8, 600);
  cross.key_tokens.assign(7, "k");
  expectMatchesNaive(cross, kNaiveTol, "cross attention");
  cross.mask = MaskKind::Causal;
  cross.key_padding = {0, 0, 1, 0, 0, 0, 0};
  cross.b_o = randomRows(1, 8, 700);
  cross.scale = 0.3f;
  expectMatchesNaive(cross, kNaiveTol, "everything at once");
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
    test::expectClose(rp.output.row(i), r.output.row(perm[i]), 1e-6, "output row " + std::to_string(i));
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
  test::expectClose(r.output, y, 1e-5, "output");
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
  // The weights themselves, against the naive reference (seen 6e-8).
  expectMatchesNaive(s, 1e-6, "explicit mask and key padding");
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
  test::expectClose(r.output, full.output, 1e-6, "output");
  test::expectClose(r.heads[1].weights, full.heads[1].weights, 1e-6, "weights of head 1");
  test::expectClose(r.similarity.cosine, full.similarity.cosine, 1e-6, "cosine");
}

TEST(CpuBackend, LargeMagnitudesDoNotOverflowTheSoftmax) {
  // Scores of order 1e4: exp would overflow without the max subtraction. The largest score wins (weight 1).
  Scene s = makeRandomScene({.n = 5, .heads = 1, .d_model = 4, .seed = 8});
  s.query *= 100.0f;
  const Result r = CpuBackend(1).compute(s);
  const Naive n = naiveAttention(s);
  for (int i = 0; i < 5; ++i) {
    Eigen::Index best = 0;
    n.scores[0].row(i).maxCoeff(&best);
    EXPECT_NEAR(r.heads[0].weights(i, best), 1.0, 1e-6) << "row " << i;
    EXPECT_NEAR(n.weights[0](i, best), 1.0, 1e-6) << "the reference agrees that one key takes it all";
  }
  test::expectClose(r.heads[0].weights, n.weights[0], 1e-6, "weights");
}

TEST(CpuBackend, ACancelledComputeThrowsAndTheBackendComputesTheNextOneWhole) {
  // The window cancels a long scene's stale recompute (ComputeOptions::cancel). Set before the compute starts, it
  // stops at the first block; the same backend and result buffers then compute the next scene as a fresh one does.
  const Scene s = makeRandomScene({.n = 64, .heads = 3, .d_model = 12, .causal = true, .seed = 5});
  std::atomic<bool> cancel{true};
  ComputeOptions options;
  options.cancel = &cancel;
  CpuBackend backend(2);
  Result r;
  EXPECT_THROW(backend.computeInto(s, r, options), ComputeCancelled);
  cancel = false;
  backend.computeInto(s, r, options);
  const Naive n = naiveAttention(s);
  // Tolerance 1e-6 (float against double); seen ~1e-7.
  for (int h = 0; h < 3; ++h) test::expectClose(r.heads[static_cast<std::size_t>(h)].weights, n.weights[static_cast<std::size_t>(h)], 1e-6, "weights");
  test::expectClose(r.output, n.output, 1e-5, "output");
}
