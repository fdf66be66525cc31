// The analysis (head-type scores, importance, clustering, breakdown, pitfalls, diff) from a GPU Result against
// the same analysis from the CPU reference: both backends must tell the user the same story.
#include <gtest/gtest.h>

#include <cmath>

#include "../analysis/analysis_test_scenes.h"
#include "attnscope/analysis/analysis.h"
#include "attnscope/scene/presets.h"
#include "gpu_test_support.h"

using namespace attnscope;

namespace {

void expectNear(const std::optional<double>& gpu, const std::optional<double>& cpu, double tol, double& worst) {
  ASSERT_EQ(gpu.has_value(), cpu.has_value());
  if (!cpu) return;
  const double error = test::valueError(*gpu, *cpu);  // a NaN or inf where the CPU is finite: infinite
  EXPECT_LE(error, tol) << "gpu " << *gpu << ", cpu " << *cpu;
  worst = test::worse(worst, error);
}

void compareAnalysis(const Scene& scene, const Result& gpu, const Result& cpu, double tol) {
  double worst = 0;
  const std::vector<HeadTypeScores> sg = allHeadTypeScores(scene, gpu), sc = allHeadTypeScores(scene, cpu);
  ASSERT_EQ(sg.size(), sc.size());
  for (std::size_t h = 0; h < sc.size(); ++h)
    for (const std::string& name : headTypeScoreNames())
      expectNear(headTypeScore(sg[h], name), headTypeScore(sc[h], name), tol, worst);
  for (AblationMode mode : {AblationMode::Zero, AblationMode::Mean}) {
    const std::vector<double> ig = headImportance(scene, gpu, mode), ic = headImportance(scene, cpu, mode);
    for (std::size_t h = 0; h < ic.size(); ++h) expectNear(ig[h], ic[h], tol * (1 + ic[h]), worst);
  }
  for (ClusterMetric metric : {ClusterMetric::Cosine, ClusterMetric::JensenShannon}) {
    const Clustering cg = clusterHeads(gpu.similarity, metric), cc = clusterHeads(cpu.similarity, metric);
    EXPECT_EQ(cg.order, cc.order);
    for (std::size_t m = 0; m < cc.merges.size(); ++m) expectNear(cg.merges[m].height, cc.merges[m].height, tol, worst);
  }
  for (int h = 0; h < scene.numHeads(); ++h) {
    const CellBreakdown bg = scoreBreakdown(scene, gpu, h, scene.nQ() - 1, 0);
    const CellBreakdown bc = scoreBreakdown(scene, cpu, h, scene.nQ() - 1, 0);
    expectNear(bg.score, bc.score, tol * (1 + std::abs(bc.score)), worst);
    expectNear(bg.weight, bc.weight, tol, worst);
  }
  for (const PitfallInfo& p : pitfallList()) {
    const PitfallResult pg = applyPitfall(scene, gpu, p.pitfall), pc = applyPitfall(scene, cpu, p.pitfall);
    ASSERT_EQ(pg.weights.size(), pc.weights.size());
    for (std::size_t h = 0; h < pc.weights.size(); ++h)
      worst = test::worse(worst, test::expectClose(pg.weights[h], pc.weights[h], tol, p.name));
  }
  for (const HeadDiff& d : diffResults(cpu, gpu)) expectNear(d.max_abs, 0.0, tol, worst);
  std::printf("GPU vs CPU analysis: largest difference %.2g\n", worst);
}

// Seen on llvmpipe (Mesa 22.3.6): hand heads 1.3e-7, repeated tokens 6.4e-7, causal random 6.3e-7.
TEST(GpuAnalysis, HandHeadsAgree) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  const Scene scene = test::handHeadsScene();
  compareAnalysis(scene, gpu->compute(scene), CpuBackend(1).compute(scene), 1e-5);
}

TEST(GpuAnalysis, RepeatedTokensAgree) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  const Scene scene =
      makeRepeatedTokensScene({.length = 12, .vocab = 40, .heads = 6, .d_model = 24, .positions = true, .seed = 9});
  compareAnalysis(scene, gpu->compute(scene), CpuBackend(1).compute(scene), 1e-5);
}

TEST(GpuAnalysis, CausalRandomSceneAgrees) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  const Scene scene = makeRandomScene(
      {.n = 17, .heads = 4, .d_model = 16, .d_k = 8, .d_v = 4, .causal = true, .with_w_o = true, .seed = 21});
  compareAnalysis(scene, gpu->compute(scene), CpuBackend(1).compute(scene), 1e-5);
}

}  // namespace
