// Random scenes of a chosen size, reproducible from a seed.
#include "attnscope/scene/presets.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "attnscope/error.h"
#include "attnscope/scene/scene_edit.h"

namespace attnscope {

Scene makeRandomScene(const RandomSceneSpec& spec) {
  if (spec.heads < 1) throw InputError("heads", "at least 1", std::to_string(spec.heads));
  const int d_k = spec.d_k > 0 ? spec.d_k : std::max(1, spec.d_model / spec.heads);
  const int d_v = spec.d_v > 0 ? spec.d_v : d_k;
  std::mt19937_64 rng(spec.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float w_std = 1.0f / std::sqrt(static_cast<float>(std::max(1, spec.d_model)));
  auto fill = [&](int rows, int cols, float stddev) {
    Matrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = stddev * normal(rng);
    return m;
  };

  Scene scene;
  scene.d_model = spec.d_model;
  scene.query = fill(spec.n, spec.d_model, 1.0f);
  for (int i = 0; i < spec.n; ++i) scene.query_tokens.push_back("t" + std::to_string(i));
  for (int i = 0; i < spec.heads; ++i)
    scene.heads.push_back(HeadParams{fill(spec.d_model, d_k, w_std), fill(spec.d_model, d_k, w_std),
                                     fill(spec.d_model, d_v, w_std), std::nullopt, std::nullopt, std::nullopt});
  if (spec.with_w_o) scene.w_o = fill(spec.heads * d_v, spec.d_model, 1.0f / std::sqrt(static_cast<float>(spec.heads * d_v)));
  scene.mask = spec.causal ? MaskKind::Causal : MaskKind::None;
  return scene;
}

Scene randomSceneShape(const RandomSceneSpec& spec) {
  if (spec.heads < 1) throw InputError("heads", "at least 1", std::to_string(spec.heads));
  if (spec.n < 1) throw InputError("n", "at least 1 token", std::to_string(spec.n));
  const int d_k = spec.d_k > 0 ? spec.d_k : std::max(1, spec.d_model / spec.heads);
  const int d_v = spec.d_v > 0 ? spec.d_v : d_k;
  Scene scene;
  scene.d_model = spec.d_model;
  scene.query = Matrix(spec.n, 0);  // (n, d_model) once made
  for (int i = 0; i < spec.heads; ++i)
    scene.heads.push_back(HeadParams{Matrix(0, d_k), Matrix(0, d_k), Matrix(0, d_v), std::nullopt, std::nullopt,
                                     std::nullopt});
  scene.mask = spec.causal ? MaskKind::Causal : MaskKind::None;
  return scene;
}

RandomSceneEstimate estimateRandomScene(const RandomSceneSpec& spec, bool with_maps) {
  const Scene shape = randomSceneShape(spec);
  const std::size_t n = static_cast<std::size_t>(spec.n), d = static_cast<std::size_t>(std::max(0, spec.d_model));
  const std::size_t d_k = static_cast<std::size_t>(shape.heads[0].dK()), d_v = static_cast<std::size_t>(shape.dV(0));
  const std::size_t h = static_cast<std::size_t>(spec.heads);
  std::size_t floats = n * d + h * d * (2 * d_k + d_v) + (spec.with_w_o ? h * d_v * d : 0);
  RandomSceneEstimate e;
  e.scene_bytes = floats * sizeof(float) + n * 16;  // and a short token label per position
  e.result_bytes = estimateResultBytes(shape, with_maps);
  return e;
}

void checkRandomSceneBudget(const RandomSceneSpec& spec, bool with_maps, std::size_t budget) {
  checkMemoryBudget("scene size", std::string("a random scene and its result") + (with_maps ? "" : " (maps on demand)"),
                    estimateRandomScene(spec, with_maps).total(), budget);
}

Scene makeRepeatedTokensScene(const RepeatedTokensSpec& spec) {
  if (spec.length < 1) throw InputError("length", "at least 1", std::to_string(spec.length));
  if (spec.vocab < spec.length)
    throw InputError("vocab", "at least the length (" + std::to_string(spec.length) + ")", std::to_string(spec.vocab));
  RandomSceneSpec random;
  random.n = 2 * spec.length;
  random.heads = spec.heads;
  random.d_model = spec.d_model;
  random.seed = spec.seed;
  Scene scene = makeRandomScene(random);

  std::mt19937_64 rng(spec.seed ^ 0x9e3779b97f4a7c15ULL);  // apart from the projections' stream
  std::vector<int> ids(static_cast<std::size_t>(spec.vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);  // the first `length` are the sequence: no repeats within a half
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Matrix embedding(spec.length, spec.d_model);  // (length, d_model): one row per token of the sequence
  for (Eigen::Index i = 0; i < embedding.size(); ++i) embedding.data()[i] = normal(rng);
  scene.query_tokens.clear();
  for (int copy = 0; copy < 2; ++copy)
    for (int i = 0; i < spec.length; ++i) {
      scene.query_tokens.push_back("w" + std::to_string(ids[static_cast<std::size_t>(i)]));
      scene.query.row(copy * spec.length + i) = embedding.row(i);
    }
  if (spec.positions) addPositionalEncodings(scene);
  scene.description = "repeated random tokens: " + std::to_string(spec.length) + " tokens, then the same again";
  return scene;
}

}  // namespace attnscope
