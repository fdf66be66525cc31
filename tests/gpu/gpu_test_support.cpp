// The shared GPU test backend and the Result comparison.
#include "gpu_test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace attnscope::test {

namespace {
// Destroys the backend after the last test, while EGL and the driver are still loaded.
class GpuEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { gpuFixture().backend.reset(); }
};
[[maybe_unused]] ::testing::Environment* const kEnvironment = ::testing::AddGlobalTestEnvironment(new GpuEnvironment);
}  // namespace

GpuFixture& gpuFixture() {
  static GpuFixture fixture = [] {
    GpuFixture f;
    try {
      f.backend = std::make_unique<GpuBackend>();
    } catch (const GpuUnavailable& e) {
      f.unavailable = e.what();
    }
    return f;
  }();
  return fixture;
}

bool gpuRequired() {
  const char* required = std::getenv("ATTNSCOPE_REQUIRE_GPU");
  return required && std::string(required) == "1";
}

int runsOf(int by_default) {
  const char* text = std::getenv("ATTNSCOPE_GPU_STRESS");
  if (!text || !*text) return by_default;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (*end != '\0' || n < 1 || n > 100000) {
    ADD_FAILURE() << "ATTNSCOPE_GPU_STRESS: expected a count from 1 to 100000, got '" << text << "'";
    return by_default;
  }
  return std::max(by_default, static_cast<int>(n));
}

Scene peakedScene(int n_q, int n_k, int heads, int d_model, int d_k, int d_v, bool causal, std::uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  Scene s;
  s.d_model = d_model;
  s.query = randomMatrix(n_q, d_model, 1.0f, rng);
  for (int i = 0; i < n_q; ++i) s.query_tokens.push_back("q" + std::to_string(i));
  for (int i = 0; i < heads; ++i)
    s.heads.push_back({randomMatrix(d_model, d_k, 1.0f, rng), randomMatrix(d_model, d_k, 1.0f, rng),
                       randomMatrix(d_model, d_v, 1.0f, rng), std::nullopt, std::nullopt, std::nullopt});
  s.mask = causal ? MaskKind::Causal : MaskKind::None;
  if (n_k != n_q) {
    s.key = randomMatrix(n_k, d_model, 1.0f, rng);
    s.value = randomMatrix(n_k, d_model, 1.0f, rng);
    for (int j = 0; j < n_k; ++j) s.key_tokens.push_back("k" + std::to_string(j));
    s.key_padding.assign(static_cast<std::size_t>(n_k), 0);
    for (int j = 0; j < n_k; j += 7) s.key_padding[static_cast<std::size_t>(j)] = 1;
  }
  return s;
}

double expectResultsMatch(const Scene& scene, const Result& gpu, const Result& cpu, double tolerance) {
  double worst = 0;
  auto check = [&](const Matrix& g, const Matrix& c, const std::string& what, CompareOptions options = kMixed) {
    worst = worse(worst, expectClose(g, c, tolerance, what, options));
  };
  EXPECT_EQ(gpu.heads.size(), cpu.heads.size());
  if (gpu.heads.size() != cpu.heads.size()) return kInfiniteError;
  const MaskMatrix allowed = allowedMask(scene);
  for (std::size_t h = 0; h < cpu.heads.size(); ++h) {
    const std::string at = "head " + std::to_string(h) + " ";
    check(gpu.heads[h].q, cpu.heads[h].q, at + "q");
    check(gpu.heads[h].k(), cpu.heads[h].k(), at + "k");
    check(gpu.heads[h].v(), cpu.heads[h].v(), at + "v");
    check(gpu.heads[h].scores, cpu.heads[h].scores, at + "scores", kMixedWithMasks);  // masked: -inf
    check(gpu.heads[h].weights, cpu.heads[h].weights, at + "weights");
    check(gpu.heads[h].output, cpu.heads[h].output, at + "output");
    int masked_nonzero = 0;
    for (Eigen::Index i = 0; i < allowed.rows(); ++i)
      for (Eigen::Index j = 0; j < allowed.cols(); ++j)
        if (!allowed(i, j) && gpu.heads[h].weights(i, j) != 0.0f) ++masked_nonzero;
    EXPECT_EQ(masked_nonzero, 0) << at << "masked weights must be exactly 0";
  }
  check(gpu.concat, cpu.concat, "concat");
  check(gpu.output, cpu.output, "output");
  check(gpu.similarity.cosine, cpu.similarity.cosine, "similarity.cosine");
  check(gpu.similarity.js, cpu.similarity.js, "similarity.js");
  EXPECT_EQ(gpu.stats.size(), cpu.stats.size());
  if (gpu.stats.size() != cpu.stats.size()) worst = kInfiniteError;
  for (std::size_t h = 0; h < std::min(gpu.stats.size(), cpu.stats.size()); ++h) {
    const Matrix g{{gpu.stats[h].entropy, gpu.stats[h].max_weight, gpu.stats[h].mean_distance}};
    const Matrix c{{cpu.stats[h].entropy, cpu.stats[h].max_weight, cpu.stats[h].mean_distance}};
    check(g, c, "stats of head " + std::to_string(h));
  }
  EXPECT_EQ(gpu.warnings, cpu.warnings);
  return worst;
}

}  // namespace attnscope::test
