// GpuBackend::residentHead: a head's Q and K given (a capture, a forward's layer past the maps limit) rather than
// projected, drawn as tiles under a forward's mask (causal with a sliding window, key padding, an explicit window)
// and soft cap. Against a double-precision reference written out here (scores, cap, mask, softmax per row) and
// against the CPU's tiles of the same ForwardResult.
//
// Tolerances, from the arithmetic: a float score s = q . k over d terms differs from the exact one by at most
// ds = (d + 2) u max_ij sum_t |q_it k_jt| (u = 2^-24; the dot product in any order, the cap's tanh a few ulp
// more, counted by the + 2). The cap's derivative is at most 1, so capped scores err by no more. A weight
// w = exp(s - m) / l then errs relatively by at most ds (s) + ds (m) + the relative error of l, which is at most
// 2 ds + (keys + 4) u (each term's exp, then the sum), so absolutely, w <= 1: 4 ds + (keys + 4) u, doubled for
// exp's own few ulp on any GPU. A NaN or inf where the reference is finite is an infinite error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/model/forward.h"
#include "gpu_test_support.h"

using namespace attnscope;
using attnscope::test::expectClose;
using attnscope::test::kMixedWithMasks;

namespace {

constexpr double kUnit = 1.0 / (1 << 24);

struct GivenCase {
  const char* name;
  int n, d, heads, kv_heads;
  int window;         // 0: none
  bool causal;        // false with a window: the tiles' explicit mask
  float cap;          // 0: none
  bool padded;        // every 5th key padded
  bool stored_lse;    // row statistics given (m = lse, l = 1) rather than found by the GPU
};

// One layer of a forward without kept maps: q (n, d) scaled by 1/sqrt(d), k per KV head, standard normal times
// 2 (scores of tens: peaked rows, where a wrong m moves whole rows).
model::ForwardResult givenLayer(const GivenCase& c, std::uint64_t seed) {
  model::ForwardResult f;
  f.n = c.n;
  f.layout = model::HeadLayout(1, c.heads, c.kv_heads);
  f.layout.causal = c.causal;
  if (c.window > 0) f.layout.window = {c.window};
  if (c.padded) {
    f.layout.key_padding.assign(static_cast<std::size_t>(c.n), 0);
    for (int j = 0; j < c.n; j += 5) f.layout.key_padding[static_cast<std::size_t>(j)] = 1;
  }
  f.maps = c.heads;
  f.stats.resize(1);
  Result& r = f.stats[0];
  r.score_cap = c.cap;
  r.heads.resize(static_cast<std::size_t>(c.heads));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const auto random = [&](int rows, int cols) {
    Matrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
  };
  const int group = c.heads / c.kv_heads;
  for (int h = 0; h < c.heads; ++h) {
    HeadResult& hr = r.heads[static_cast<std::size_t>(h)];
    hr.q = random(c.n, c.d) / std::sqrt(static_cast<float>(c.d));
    if (h % group == 0)
      hr.ownK() = random(c.n, c.d);
    else
      hr.shareKeyValues(r.heads[static_cast<std::size_t>(h - h % group)]);
  }
  return f;
}

// The exact weights of one head in double: scores capped, masked by the layout, softmax per row (all 0 on a
// fully masked row), and each row's m and l.
struct Reference {
  Eigen::MatrixXd weights;
  Eigen::VectorXd m, l;
  double score_error = 0;  // ds of the header
};

Reference reference(const model::ForwardResult& f, int head) {
  const HeadResult& hr = f.stats[0].heads[static_cast<std::size_t>(head)];
  const float cap = f.stats[0].score_cap;
  const int n = f.n;
  const Eigen::MatrixXd q = hr.q.cast<double>(), k = hr.k().cast<double>();
  Reference ref;
  ref.weights = Eigen::MatrixXd::Zero(n, n);
  ref.m = Eigen::VectorXd::Constant(n, -INFINITY);
  ref.l = Eigen::VectorXd::Zero(n);
  double largest = 0;
  for (int i = 0; i < n; ++i) {
    std::vector<double> s(static_cast<std::size_t>(n), -INFINITY);
    for (int j = 0; j < n; ++j) {
      largest = std::max(largest, (q.row(i).cwiseAbs().array() * k.row(j).cwiseAbs().array()).sum());
      if (!f.layout.keyAllowed(0, i, j)) continue;
      double x = q.row(i).dot(k.row(j));
      if (cap > 0) x = cap * std::tanh(x / cap);
      s[static_cast<std::size_t>(j)] = x;
      ref.m[i] = std::max(ref.m[i], x);
    }
    if (ref.m[i] == -INFINITY) continue;
    for (int j = 0; j < n; ++j) ref.l[i] += std::exp(s[static_cast<std::size_t>(j)] - ref.m[i]);
    for (int j = 0; j < n; ++j) ref.weights(i, j) = std::exp(s[static_cast<std::size_t>(j)] - ref.m[i]) / ref.l[i];
  }
  ref.score_error = (hr.q.cols() + 2) * kUnit * largest;
  return ref;
}

const GivenCase kCases[] = {
    {"causal, window 17, soft cap 5 (GQA 4 of 2)", 300, 16, 4, 2, 17, true, 5.0f, false, false},
    {"causal, key padding, d 64", 257, 64, 2, 2, 0, true, 0.0f, true, false},
    {"window 9 without the causal rule (explicit), padded", 150, 8, 2, 1, 9, false, 0.0f, true, false},
    {"no mask, soft cap 3, stored lse", 200, 32, 2, 2, 0, false, 3.0f, false, true},
};

}  // namespace

TEST(GpuGivenHeads, TilesAndRowStatisticsEqualTheDoubleReference) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  std::uint64_t seed = 70;
  for (const GivenCase& c : kCases) {
    SCOPED_TRACE(c.name);
    model::ForwardResult f = givenLayer(c, ++seed);
    const Scene scene = f.tileScene(0);
    for (int h = 0; h < c.heads; ++h) {
      const Reference ref = reference(f, h);
      const double weight_tol = 2 * (4 * ref.score_error + (c.n + 4) * kUnit);
      HeadResult& hr = f.stats[0].heads[static_cast<std::size_t>(h)];
      if (c.stored_lse) {  // as a capture stores it: m = the row's log-sum-exp, l = 1
        hr.row_max = (ref.m.array() + ref.l.array().log()).cast<float>().transpose();
        hr.row_sum = RowVector::Ones(c.n);
      }
      RowVector m, l;
      const GivenHead given{.q = &hr.q, .k = &hr.k(), .row_max = c.stored_lse ? &hr.row_max : nullptr,
                            .row_sum = c.stored_lse ? &hr.row_sum : nullptr, .score_cap = c.cap};
      gpu->residentHead(scene, given, &m, &l);
      if (!c.stored_lse) {
        // Found on the GPU: m within ds (+ its own rounding), l relatively within 2 ds + (n + 4) u.
        ASSERT_EQ(m.size(), c.n);
        ASSERT_EQ(l.size(), c.n);
        double m_error = 0, l_error = 0;
        for (int i = 0; i < c.n; ++i) {
          if (ref.l[i] == 0) {  // every key masked: no statistics; the tiles skip the row
            EXPECT_FALSE(l[i] > 0) << "row " << i;
            continue;
          }
          m_error = test::worse(m_error, std::isfinite(m[i]) ? std::abs(m[i] - ref.m[i]) : test::kInfiniteError);
          l_error = test::worse(l_error,
                                std::isfinite(l[i]) ? std::abs(l[i] - ref.l[i]) / ref.l[i] : test::kInfiniteError);
        }
        EXPECT_LE(m_error, ref.score_error + kUnit * 64) << "head " << h << " m";
        EXPECT_LE(l_error, 2 * ref.score_error + (c.n + 4) * kUnit) << "head " << h << " l";
        hr.row_max = m, hr.row_sum = l;  // the CPU's tiles below read the same statistics
        std::printf("head %d: m error %.2g (bound %.2g), l error %.2g\n", h, m_error, ref.score_error, l_error);
      }
      // The whole map cell by cell: the weights, and exactly the masked cells masked.
      const Tile whole = gpu->weightTile({.head = 0});
      const double error = expectClose(whole.values, ref.weights, weight_tol, "head " + std::to_string(h) + " weights");
      for (int i = 0; i < c.n; ++i)
        for (int j = 0; j < c.n; ++j)
          ASSERT_EQ(whole.masked(i, j) != 0, !f.layout.keyAllowed(0, i, j) || ref.l[i] == 0) << i << ", " << j;
      std::printf("head %d: weights error %.2g (bound %.2g)\n", h, error, weight_tol);
      // Pooled as the window's overviews (max) and the exporters (mean), against the CPU's tiles of the forward.
      for (const TileRequest& r :
           {TileRequest{.head = h, .pooling = Pooling::Max, .out_rows = 37, .out_cols = 41},
            TileRequest{.head = h, .row0 = 20, .row1 = c.n - 3, .col0 = 5, .col1 = c.n, .pooling = Pooling::Mean,
                        .out_rows = 13, .out_cols = 9}}) {
        const Tile want = f.tile(0, r);
        TileRequest on_gpu = r;
        on_gpu.head = 0;
        const Tile got = gpu->weightTile(on_gpu);
        expectClose(got.values, want.values, weight_tol, "pooled tile");
        EXPECT_TRUE(got.masked == want.masked) << "pooled tile's masked blocks";
      }
    }
  }
}

// A scene computed after a given head is drawn without the head's window or cap.
TEST(GpuGivenHeads, ASceneAfterAGivenHeadKeepsItsOwnMask) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  model::ForwardResult f = givenLayer(kCases[0], 90);
  const HeadResult& hr = f.stats[0].heads[0];
  gpu->residentHead(f.tileScene(0), {.q = &hr.q, .k = &hr.k(), .score_cap = kCases[0].cap});
  const Scene scene = test::peakedScene(120, 120, 2, 16, 8, 8, true, 91);
  CpuBackend cpu;
  const Result want = cpu.compute(scene, {.keep_scores = false, .analysis = false, .maps = MapPolicy::Keep});
  gpu->computeResident(scene, {.keep_scores = false, .analysis = false, .maps = MapPolicy::Drop});
  // Peaked rows (scores near 60): the tile tolerance of test_gpu_flash.cpp.
  expectClose(gpu->weightTile({.head = 1}).values, want.heads[1].weights, 1e-4, "scene weights");
}

TEST(GpuGivenHeads, ShapesThatDisagreeAreRefusedNamingThem) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  model::ForwardResult f = givenLayer(kCases[1], 92);
  HeadResult wrong = f.stats[0].heads[0];
  wrong.q = Matrix::Ones(10, 64);
  try {
    gpu->residentHead(f.tileScene(0), {.q = &wrong.q, .k = &wrong.k()});
    ADD_FAILURE() << "a q of 10 rows for 257 tokens was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("q, k"), std::string::npos) << e.what();
  }
  HeadResult wide;
  wide.q = Matrix::Ones(257, 300);
  wide.ownK() = Matrix::Ones(257, 300);
  EXPECT_THROW(gpu->residentHead(f.tileScene(0), {.q = &wide.q, .k = &wide.k()}), InputError);
  const RowVector short_m = RowVector::Zero(3);
  const HeadResult& good = f.stats[0].heads[0];
  EXPECT_THROW(gpu->residentHead(f.tileScene(0), {.q = &good.q, .k = &good.k(), .row_max = &short_m, .row_sum = &short_m}),
               InputError);
}
