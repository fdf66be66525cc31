// The GPU tile shader a band of output rows at a time (GpuBackend::weightTileRowsToTexture, what the window's
// overviews use on a hardware GPU), written into textures and read back here with glGetTexImage, against the
// CPU reference of the same rows: maxPooledRows for a max-pooled tile, weightTile for an unpooled one, over the
// CPU's own lean (no maps) result. Weights absolute: they lie in [0, 1]. The R8 mask texture must be 0 exactly
// where the CPU tile says masked, 1 elsewhere.
#include <gtest/gtest.h>

#include <epoxy/gl.h>

#include <cstdio>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "gpu_test_support.h"

using namespace attnscope;
using attnscope::test::expectClose;
using attnscope::test::peakedScene;

namespace {

const ComputeOptions kDrop{.keep_scores = false, .analysis = false, .maps = MapPolicy::Drop};
constexpr float kPoison = -7.0f;  // a texel no band wrote keeps it

// An R32F and an R8 texture of (rows, cols) texels, every texel poisoned (weights -7, mask 77).
struct TileTextures {
  GLuint weights = 0, mask = 0;
  int rows, cols;
  TileTextures(int rows_, int cols_) : rows(rows_), cols(cols_) {
    glGenTextures(1, &weights);
    glBindTexture(GL_TEXTURE_2D, weights);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_R32F, cols, rows);
    const std::vector<float> poison(static_cast<std::size_t>(rows * cols), kPoison);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, cols, rows, GL_RED, GL_FLOAT, poison.data());
    glGenTextures(1, &mask);
    glBindTexture(GL_TEXTURE_2D, mask);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_R8, cols, rows);
    const std::vector<std::uint8_t> mask_poison(static_cast<std::size_t>(rows * cols), 77);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, cols, rows, GL_RED, GL_UNSIGNED_BYTE, mask_poison.data());
  }
  ~TileTextures() {
    glDeleteTextures(1, &weights);
    glDeleteTextures(1, &mask);
  }
  // Row-major (rows, cols), as the tile: texel (x, y) = cell (y, x).
  Matrix readWeights() const { return read<Matrix>(weights, GL_FLOAT); }
  MaskMatrix readMask() const { return read<MaskMatrix>(mask, GL_UNSIGNED_BYTE); }
  template <typename M>
  M read(GLuint texture, GLenum type) const {
    M got(rows, cols);
    glBindTexture(GL_TEXTURE_2D, texture);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glGetTexImage(GL_TEXTURE_2D, 0, GL_RED, type, got.data());
    return got;
  }
};

// The band rows [y0, y1) of the textures against the CPU tile's; returns the largest weight error.
double expectBandMatches(const TileTextures& t, const Tile& want, int y0, int y1, double tolerance,
                         const std::string& what) {
  const Matrix got = t.readWeights();
  const MaskMatrix mask = t.readMask();
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
  const double error =
      expectClose(got.middleRows(y0, y1 - y0), want.values.middleRows(y0, y1 - y0), tolerance, what + " weights");
  int mask_wrong = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = 0; x < t.cols; ++x) mask_wrong += mask(y, x) != (want.masked(y, x) ? 0 : 255);
  EXPECT_EQ(mask_wrong, 0) << what << ": mask texels not 0 where masked, 255 (1.0) elsewhere";
  return error;
}

}  // namespace

// A causal scene (masked blocks above the diagonal) pooled to (256, 200) blocks, written in three uneven bands
// into one texture pair: each band equals maxPooledRows of the same rows, and a band leaves the other rows as
// they were.
TEST(GpuTileBands, MaxPooledBandsIntoTexturesMatchCpuMaxPooledRows) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  const Scene scene = peakedScene(700, 600, 2, 16, 8, 8, true, 43);
  const Result lean = CpuBackend().compute(scene, kDrop);
  ASSERT_FALSE(lean.heads[0].hasMap());
  gpu->computeResident(scene, kDrop);
  ASSERT_FALSE(gpu->keepsResidentMaps());
  const TileRequest request{.head = 1, .pooling = Pooling::Max, .out_rows = 256, .out_cols = 200};
  const TileRequest resolved{1, 0, 700, 0, 600, Pooling::Max, 256, 200};
  TileTextures t(256, 200);
  // One band alone first: rows outside it keep the poison.
  gpu->weightTileRowsToTexture(request, 100, 140, t.weights, t.mask);
  const Matrix partial = t.readWeights();
  EXPECT_EQ(partial(99, 5), kPoison);
  EXPECT_EQ(partial(140, 5), kPoison);
  EXPECT_NE(partial(100, 5), kPoison);
  Tile want;
  maxPooledRows(scene, lean, KeyMask(scene), resolved, 0, 256, want);
  double worst = 0;
  for (const auto& [y0, y1] : {std::pair{0, 37}, std::pair{37, 100}, std::pair{100, 256}}) {
    gpu->weightTileRowsToTexture(request, y0, y1, t.weights, t.mask);
    worst = std::max(worst, expectBandMatches(t, want, 0, y1, 1e-4, "rows 0:" + std::to_string(y1)));
  }
  // The read-back variant of a band is the same shader: identical to the texture's texels.
  Tile band;
  gpu->weightTileRows(request, 37, 100, band);
  ASSERT_EQ(band.values.rows(), 256);
  expectClose(band.values.middleRows(37, 63), t.readWeights().middleRows(37, 63), 0.0, "read-back band");
  // The CPU sums q.k in another order (a peaked row's top weight moves by ulps of its score: 1.5e-5 seen in
  // test_gpu_flash.cpp's tiles). Seen on llvmpipe (Mesa 22.3.6): 3.9e-6 here, 3.8e-6 for the exact band below.
  std::printf("max-pooled bands: largest weight error %.2g\n", worst);
  EXPECT_THROW(gpu->weightTileRowsToTexture(request, 10, 300, t.weights, t.mask), InputError);  // past out_rows
}

// Unpooled (a zoomed view at deep zoom): a band of exact weights equals the CPU's weightTile of those rows.
TEST(GpuTileBands, ExactBandMatchesCpuWeightTile) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  const Scene scene = peakedScene(300, 320, 2, 16, 8, 8, true, 44);
  const Result lean = CpuBackend().compute(scene, kDrop);
  gpu->computeResident(scene, kDrop);
  const TileRequest request{.head = 0, .row0 = 40, .row1 = 90, .col0 = 30, .col1 = 100};
  const Tile want = weightTile(scene, lean, request);
  TileTextures t(50, 70);
  gpu->weightTileRowsToTexture(request, 0, 20, t.weights, t.mask);
  gpu->weightTileRowsToTexture(request, 20, 50, t.weights, t.mask);
  const double error = expectBandMatches(t, want, 0, 50, 1e-4, "exact rows 40:90");
  std::printf("exact band: largest weight error %.2g\n", error);
}
