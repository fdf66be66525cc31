// CPU backend properties: rows sum to 1, causal zeros, permutation equivariance, single-head equivalence,
// naive per-head loop equal to the batched form, masks, fully masked rows.
#include <gtest/gtest.h>

#include <cmath>

#include "attnscope/cpu_backend.h"
#include "attnscope/presets.h"

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
