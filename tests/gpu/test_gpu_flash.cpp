// The GPU flash path (no maps: output and row statistics m, l by key blocks with an online softmax) and the
// GPU tile shader, against the CPU backend. Errors: outputs and m on |gpu - cpu| / (1 + |cpu|), l relative,
// weights absolute (they lie in [0, 1]); a NaN or inf where the CPU is finite is an infinite error
// (tests/compare.h). Tolerances hold for any GPU (another summation order, FMA contraction, a fast exp);
// the errors llvmpipe (Mesa 22.3.6) showed are in each comment. A race or a wrong index shows as 1e-2 and up.
#include <gtest/gtest.h>

#include <epoxy/gl.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/presets.h"
#include "gpu_test_support.h"

using namespace attnscope;
using attnscope::test::expectClose;
using attnscope::test::kMixed;
using attnscope::test::kMixedWithMasks;
using attnscope::test::peakedScene;

namespace {

const ComputeOptions kDrop{.keep_scores = false, .analysis = false, .maps = MapPolicy::Drop};
const ComputeOptions kKeep{.keep_scores = false, .analysis = false, .maps = MapPolicy::Keep};

// l relative to itself: a sum of up to n terms >= 1.
double relativeError(const RowVector& got, const RowVector& want) {
  double worst = 0;
  for (Eigen::Index i = 0; i < want.size(); ++i) {
    const double e = want[i] > 0 ? std::abs(got[i] - want[i]) / want[i] : std::abs(got[i] - want[i]);
    worst = attnscope::test::worse(worst, std::isfinite(got[i]) ? e : attnscope::test::kInfiniteError);
  }
  return worst;
}

// Every head's output, m and l of the GPU flash path against the CPU's (also without maps).
void expectFlashMatches(const Scene& scene, const Result& gpu, const Result& cpu, double output_tol, double m_tol,
                        double l_tol) {
  ASSERT_EQ(gpu.heads.size(), cpu.heads.size());
  for (std::size_t h = 0; h < cpu.heads.size(); ++h) {
    const HeadResult &g = gpu.heads[h], &c = cpu.heads[h];
    const std::string head = "head " + std::to_string(h);
    EXPECT_FALSE(g.hasMap()) << head << ": the flash path keeps no map";
    expectClose(g.q, c.q, 1e-5, head + " q", kMixed);
    expectClose(g.k(), c.k(), 1e-5, head + " k", kMixed);
    const double output_error = expectClose(g.output, c.output, output_tol, head + " output", kMixed);
    // -inf on fully masked rows
    const double m_error = expectClose(g.row_max, c.row_max, m_tol, head + " row_max", kMixedWithMasks);
    const double l_error = relativeError(g.row_sum, c.row_sum);
    EXPECT_LE(l_error, l_tol) << head << " row_sum";
    std::printf("%s: errors seen: output %.2g, m %.2g, l %.2g\n", head.c_str(), output_error, m_error, l_error);
  }
  expectClose(gpu.output, cpu.output, output_tol, "output", kMixed);
  (void)scene;
}

// GPU tiles (plain, max- and mean-pooled) against the CPU's weightTile of `cpu` for each request.
double expectTilesMatch(GpuBackend& gpu, const Scene& scene, const Result& cpu, const std::vector<TileRequest>& requests,
                        double tolerance) {
  double worst = 0;
  for (const TileRequest& request : requests) {
    const Tile want = weightTile(scene, cpu, request);
    const Tile got = gpu.weightTile(request);
    const std::string what = "tile of head " + std::to_string(request.head) + " rows " + std::to_string(request.row0) +
                             ":" + std::to_string(request.row1) + " pooling " +
                             std::to_string(static_cast<int>(request.pooling));
    worst = std::max(worst, expectClose(got.values, want.values, tolerance, what));
    EXPECT_TRUE(got.masked == want.masked) << what << ": masked cells differ";
  }
  std::printf("tiles: largest error seen %.2g\n", worst);
  return worst;
}

std::vector<TileRequest> tileRequests(int n_q, int n_k, int heads) {
  std::vector<TileRequest> requests;
  for (int h = 0; h < heads; ++h) {
    // A plain tile across the causal diagonal, one at the far corner, and whole-width pooled overviews.
    requests.push_back({.head = h, .row0 = n_q / 2 - 20, .row1 = n_q / 2 + 20, .col0 = n_q / 2 - 50, .col1 = n_q / 2 + 30});
    requests.push_back({.head = h, .row0 = n_q - 3, .row1 = n_q, .col0 = n_k - 70, .col1 = n_k});
    requests.push_back({.head = h, .row0 = 0, .row1 = 2048, .col0 = 0, .col1 = n_k, .pooling = Pooling::Max,
                        .out_rows = 16, .out_cols = 48});
    requests.push_back({.head = h, .row0 = n_q - 1000, .row1 = n_q, .col0 = 0, .col1 = n_k,
                        .pooling = Pooling::Mean, .out_rows = 7, .out_cols = 33});
  }
  return requests;
}

struct LongCase {
  const char* name;
  Scene scene;
};

// n >= 16384 on llvmpipe: causal, and key-padded cross-attention (every 7th key padded, n_k not a multiple
// of any block). Peaked heads (scores of tens), so a wrong m or a lost block moves whole rows.
TEST(GpuFlash, LongScenesMatchCpuOutputsStatisticsAndTiles) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  CpuBackend cpu;
  const LongCase cases[] = {{"causal 16384, 2 heads", peakedScene(16384, 16384, 2, 16, 8, 8, true, 21)},
                            {"key-padded 16384 x 16389, 3 heads", peakedScene(16384, 16389, 3, 16, 8, 6, false, 22)}};
  for (const LongCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Result want = cpu.compute(c.scene, kDrop);
    const Result got = gpu->compute(c.scene, kDrop);
    EXPECT_FALSE(gpu->keepsResidentMaps());
    // Peaked rows (scores near 60, where an ulp is 3.8e-6) summed over 16k keys in another order than the
    // CPU's. Seen: output 5.8e-5, m 1.3e-6, l 3.9e-5 (both scenes' worst head, llvmpipe).
    expectFlashMatches(c.scene, got, want, 3e-4, 1e-5, 3e-4);
    // Seen: 1.0e-6 (causal), 1.5e-5 (padded: a top weight exp(s - m) off by 2 ulp of s).
    expectTilesMatch(*gpu, c.scene, want, tileRequests(c.scene.nQ(), c.scene.nK(), c.scene.numHeads()), 1e-4);
  }
}

// Small scenes: GPU tiles on the flash path and on the map path (row statistics from scores_softmax) against
// the CPU's full maps, unpooled cell by cell and pooled as the exporters pool.
TEST(GpuFlash, TilesMatchFullMapsOnSmallScenes) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  CpuBackend cpu;
  Scene explicit_mask = peakedScene(97, 97, 2, 16, 8, 8, false, 31);
  explicit_mask.mask = MaskKind::Explicit;
  explicit_mask.explicit_mask = MaskMatrix::Ones(97, 97);
  for (int i = 0; i < 97; ++i)
    for (int j = 0; j < 97; ++j) explicit_mask.explicit_mask(i, j) = ((i * 7 + j * 3) % 5 != 0) ? 1 : 0;
  explicit_mask.explicit_mask.row(40).setZero();  // a fully masked row: weights 0, every cell masked
  const LongCase cases[] = {{"causal 300", peakedScene(300, 300, 3, 16, 8, 8, true, 32)},
                            {"padded 200 x 333", peakedScene(200, 333, 2, 16, 8, 12, true, 33)},
                            {"explicit 97", explicit_mask},
                            {"random 256 d_k 64", makeRandomScene({.n = 256, .heads = 2, .d_model = 128, .seed = 4})}};
  for (const LongCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Result maps = cpu.compute(c.scene, kKeep);
    ASSERT_TRUE(maps.heads[0].hasMap());
    const int n_q = c.scene.nQ(), n_k = c.scene.nK();
    std::vector<TileRequest> requests;
    for (int h = 0; h < c.scene.numHeads(); ++h) {
      requests.push_back({.head = h});  // the whole map, cell by cell
      requests.push_back({.head = h, .row0 = 3, .row1 = n_q - 5, .col0 = 1, .col1 = n_k - 2, .pooling = Pooling::Max,
                          .out_rows = 9, .out_cols = 13});
      requests.push_back({.head = h, .pooling = Pooling::Mean, .out_rows = 11, .out_cols = 5});
      requests.push_back({.head = h, .row0 = 0, .row1 = 4, .col0 = 0, .col1 = 3, .pooling = Pooling::Mean,
                          .out_rows = 8, .out_cols = 6});  // more blocks than cells: cells repeat
    }
    for (const ComputeOptions& path : {kDrop, kKeep}) {
      gpu->computeResident(c.scene, path);
      // The CPU sums q.k in another order: a peaked row's top weight exp(s - m) with s near 60 moves by
      // 2 ulp of s. Seen: 1.5e-5 (peaked scenes), 1.5e-7 (the random preset).
      expectTilesMatch(*gpu, c.scene, maps, requests, 1e-4);
    }
  }
}

// Tiles with a per-key scale (value-norm weighting, TileRequest::key_scale) against the CPU's scaled tiles (those
// against a double reference in tests/compute/test_scaled_tiles.cpp), every 3rd scale exactly 0, on the flash
// path. Tolerance as the plain tiles' (a scale <= 1 shrinks the error; the product adds half an ulp).
TEST(GpuFlash, ScaledTilesMatchTheCpu) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  CpuBackend cpu;
  const LongCase cases[] = {{"causal 300", peakedScene(300, 300, 2, 16, 8, 8, true, 52)},
                            {"padded 200 x 333", peakedScene(200, 333, 2, 16, 8, 12, true, 53)}};
  for (const LongCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int n_q = c.scene.nQ(), n_k = c.scene.nK();
    RowVector scale(n_k);
    for (int j = 0; j < n_k; ++j) scale[j] = j % 3 == 0 ? 0.0f : static_cast<float>((j * 37) % 101) / 100.0f;
    const Result maps = cpu.compute(c.scene, kKeep);
    std::vector<TileRequest> requests;
    for (int h = 0; h < c.scene.numHeads(); ++h) {
      requests.push_back({.head = h, .key_scale = &scale});
      requests.push_back({.head = h, .row0 = 3, .row1 = n_q - 5, .col0 = 1, .col1 = n_k - 2, .pooling = Pooling::Max,
                          .out_rows = 9, .out_cols = 13, .key_scale = &scale});
      requests.push_back({.head = h, .pooling = Pooling::Mean, .out_rows = 11, .out_cols = 5, .key_scale = &scale});
    }
    gpu->computeResident(c.scene, kDrop);
    // Seen on llvmpipe: 2.9e-6 (both scenes).
    expectTilesMatch(*gpu, c.scene, maps, requests, 1e-4);
    const Tile plain = gpu->weightTile({.head = 0}), scaled = gpu->weightTile({.head = 0, .key_scale = &scale});
    for (int i = 0; i < n_q; ++i)
      for (int j = 0; j < n_k; j += 3) {  // scale 0: exactly 0, masked as the plain tile
        ASSERT_EQ(scaled.values(i, j), 0.0f) << i << "," << j;
        ASSERT_EQ(scaled.masked(i, j), plain.masked(i, j)) << i << "," << j;
      }
  }
  const RowVector short_scale = RowVector::Ones(5);
  EXPECT_THROW(gpu->weightTile({.head = 0, .key_scale = &short_scale}), InputError);
}

// The tile written into a texture the caller made (what the window draws) equals the read-back tile.
TEST(GpuFlash, TileIntoTextureEqualsReadBackTile) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  const Scene scene = peakedScene(500, 500, 2, 16, 8, 8, true, 41);
  gpu->computeResident(scene, kDrop);
  const TileRequest request{.head = 1, .row0 = 10, .row1 = 490, .col0 = 0, .col1 = 500, .pooling = Pooling::Max,
                            .out_rows = 40, .out_cols = 64};
  const Tile want = gpu->weightTile(request);
  GLuint texture = 0;
  glGenTextures(1, &texture);
  glBindTexture(GL_TEXTURE_2D, texture);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_R32F, 64, 40);
  // Poison first: a texel the tile did not write would keep -7.
  const std::vector<float> poison(64 * 40, -7.0f);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, 64, 40, GL_RED, GL_FLOAT, poison.data());
  gpu->weightTileToTexture(request, texture);
  Matrix got(40, 64);
  glBindTexture(GL_TEXTURE_2D, texture);
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  glGetTexImage(GL_TEXTURE_2D, 0, GL_RED, GL_FLOAT, got.data());
  glDeleteTextures(1, &texture);
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
  expectClose(got, want.values, 0.0, "texture tile");  // the same shader and inputs: identical
  EXPECT_THROW(gpu->weightsTexture(0), InputError);  // no whole-map texture without maps
}

// Consumers of a flash result: the CPU's streamed analysis and weightTile read the GPU's Q, K, m and l.
TEST(GpuFlash, FlashResultFeedsTheAnalysis) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  CpuBackend cpu;
  const Scene scene = peakedScene(257, 300, 3, 16, 8, 8, true, 51);
  const ComputeOptions with_analysis{.keep_scores = false, .analysis = true, .maps = MapPolicy::Drop};
  const Result got = gpu->compute(scene, with_analysis);
  const Result want = cpu.compute(scene, {.keep_scores = false, .analysis = true, .maps = MapPolicy::Keep});
  const double cosine_error = expectClose(got.similarity.cosine, want.similarity.cosine, 1e-5, "cosine", kMixed);
  const double js_error = expectClose(got.similarity.js, want.similarity.js, 1e-5, "js", kMixed);
  // Seen: cosine 4.3e-8, js 7.2e-8.
  std::printf("similarity: errors seen: cosine %.2g, js %.2g\n", cosine_error, js_error);
  ASSERT_EQ(got.stats.size(), want.stats.size());
  for (std::size_t h = 0; h < want.stats.size(); ++h) {
    EXPECT_NEAR(got.stats[h].entropy, want.stats[h].entropy, 1e-4 * (1 + want.stats[h].entropy));
    // The CPU recomputes s from the GPU's q and k in another order than the GPU's m: a row's top weight is
    // exp(s - m) = 1 + 2 ulp of a score near 60. Seen: 1.5e-5.
    EXPECT_NEAR(got.stats[h].max_weight, want.stats[h].max_weight, 1e-4);
    EXPECT_NEAR(got.stats[h].mean_distance, want.stats[h].mean_distance, 1e-4 * (1 + want.stats[h].mean_distance));
  }
  const Tile cell = weightTile(scene, got, {.head = 2, .row0 = 100, .row1 = 101, .col0 = 0, .col1 = 300});
  expectClose(cell.values, want.heads[2].weights.middleRows(100, 1), 1e-5, "a row through the CPU tile");
}

// Wide heads (d_k 64: 224 keys per dispatch, 14 chunks of keys) and a causal mask: outputs, m and l whose state
// passes between dispatches.
TEST(GpuFlash, WideHeadsOverManyKeyChunks) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  CpuBackend cpu;
  for (const bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "no mask");
    // Scores O(1) (the random preset): a lost or repeated chunk moves every output by far more than rounding.
    const Scene scene = makeRandomScene({.n = 3001, .heads = 2, .d_model = 128, .causal = causal, .seed = 61});
    const Result want = cpu.compute(scene, kDrop);
    const Result got = gpu->compute(scene, kDrop);
    // Seen: output 1.0e-6, m 5.4e-7, l 4.1e-6.
    expectFlashMatches(scene, got, want, 1e-4, 1e-5, 1e-4);
  }
}

}  // namespace
