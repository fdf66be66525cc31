// Clustering of heads (UPGMA) against merges worked out by hand.
#include <gtest/gtest.h>

#include "attnscope/analysis/analysis.h"
#include "attnscope/error.h"

namespace attnscope {
namespace {

Eigen::MatrixXd symmetric(int h, const std::vector<std::tuple<int, int, double>>& pairs) {
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(h, h);
  for (auto [a, b, x] : pairs) d(a, b) = d(b, a) = x;
  return d;
}

void expectMerge(const ClusterMerge& m, int a, int b, double height, int size) {
  EXPECT_EQ(m.a, a);
  EXPECT_EQ(m.b, b);
  EXPECT_NEAR(m.height, height, 1e-12);
  EXPECT_EQ(m.size, size);
}

TEST(Cluster, FourHeadsByHand) {
  // d(0,2) = 0.1, d(1,3) = 0.3, d(0,1) = 0.5, d(0,3) = 0.4, d(1,2) = 0.8, d(2,3) = 0.7.
  // 1. least is (0,2) at 0.1 -> cluster 4 = {0,2}. d(4,1) = (0.5 + 0.8)/2 = 0.65, d(4,3) = (0.4 + 0.7)/2 = 0.55.
  // 2. active 1, 3, 4: least is (1,3) at 0.3 -> cluster 5 = {1,3}. d(4,5) = (0.65 + 0.55)/2 = 0.6
  //    (= the mean of d01, d03, d21, d23 = 2.4 / 4).
  // 3. (4,5) at 0.6 -> cluster 6, all four. Leaves: 4 = (0, 2), then 5 = (1, 3).
  const Clustering c =
      clusterUpgma(symmetric(4, {{0, 2, .1}, {1, 3, .3}, {0, 1, .5}, {0, 3, .4}, {1, 2, .8}, {2, 3, .7}}));
  ASSERT_EQ(c.merges.size(), 3u);
  expectMerge(c.merges[0], 0, 2, 0.1, 2);
  expectMerge(c.merges[1], 1, 3, 0.3, 2);
  expectMerge(c.merges[2], 4, 5, 0.6, 4);
  EXPECT_EQ(c.order, (std::vector<int>{0, 2, 1, 3}));
}

TEST(Cluster, AverageLinkageWeighsByClusterSize) {
  // d01 = 0.1, d02 = 0.2, d12 = 0.4, d03 = 0.9, d13 = 0.5, d23 = 0.4.
  // 1. (0,1) at 0.1 -> 4. d(4,2) = (0.2 + 0.4)/2 = 0.3, d(4,3) = (0.9 + 0.5)/2 = 0.7.
  // 2. active 2, 3, 4: d23 = 0.4, d24 = 0.3, d34 = 0.7 -> (2,4) at 0.3 -> 5 = {0,1,2}.
  //    d(5,3) = (2 * 0.7 + 1 * 0.4) / 3 = 0.6, the mean of d03, d13, d23; WPGMA's (0.7 + 0.4)/2 = 0.55 would differ.
  // 3. (3,5) at 0.6. Leaves: 3, then 5 = (2, 4 = (0, 1)).
  const Clustering c =
      clusterUpgma(symmetric(4, {{0, 1, .1}, {0, 2, .2}, {1, 2, .4}, {0, 3, .9}, {1, 3, .5}, {2, 3, .4}}));
  expectMerge(c.merges[0], 0, 1, 0.1, 2);
  expectMerge(c.merges[1], 2, 4, 0.3, 3);
  expectMerge(c.merges[2], 3, 5, 0.6, 4);
  EXPECT_EQ(c.order, (std::vector<int>{3, 2, 0, 1}));
}

TEST(Cluster, TiesGoToTheFirstPairById) {
  // Every distance 1: (0,1) first -> 3; then only (2,3) remains. Leaves: 2, then 3 = (0, 1).
  const Clustering c = clusterUpgma(symmetric(3, {{0, 1, 1}, {0, 2, 1}, {1, 2, 1}}));
  expectMerge(c.merges[0], 0, 1, 1.0, 2);
  expectMerge(c.merges[1], 2, 3, 1.0, 3);
  EXPECT_EQ(c.order, (std::vector<int>{2, 0, 1}));
}

TEST(Cluster, FromSimilarity) {
  // Cosine 0.9 between heads 0 and 2, 0.7 between 1 and 3, 0.5 otherwise -> distances 0.1, 0.3, 0.5;
  // after merging (0,2) and (1,3) the two clusters are 0.5 apart.
  Similarity s;
  s.cosine = Matrix::Constant(4, 4, 0.5f);
  s.cosine.diagonal().setOnes();
  s.cosine(0, 2) = s.cosine(2, 0) = 0.9f;
  s.cosine(1, 3) = s.cosine(3, 1) = 0.7f;
  s.js = Matrix::Zero(4, 4);
  const Clustering c = clusterHeads(s, ClusterMetric::Cosine);
  expectMerge(c.merges[0], 0, 2, 1 - static_cast<double>(0.9f), 2);
  expectMerge(c.merges[1], 1, 3, 1 - static_cast<double>(0.7f), 2);
  expectMerge(c.merges[2], 4, 5, 0.5, 4);
  // JS: the divergence itself is the distance.
  s.js(1, 2) = s.js(2, 1) = 0.01f;
  s.js(0, 1) = s.js(1, 0) = s.js(0, 2) = s.js(2, 0) = 0.2f;
  s.js(0, 3) = s.js(3, 0) = s.js(1, 3) = s.js(3, 1) = s.js(2, 3) = s.js(3, 2) = 0.6f;
  const Clustering j = clusterHeads(s, ClusterMetric::JensenShannon);
  expectMerge(j.merges[0], 1, 2, static_cast<double>(0.01f), 2);
  expectMerge(j.merges[1], 0, 4, static_cast<double>(0.2f), 3);
  EXPECT_EQ(j.order, (std::vector<int>{3, 0, 1, 2}));
  EXPECT_THROW(parseClusterMetric("euclid"), InputError);
}

TEST(Cluster, OneHead) {
  const Clustering c = clusterUpgma(Eigen::MatrixXd::Zero(1, 1));
  EXPECT_TRUE(c.merges.empty());
  EXPECT_EQ(c.order, (std::vector<int>{0}));
}

}  // namespace
}  // namespace attnscope
