// Random scenes of a chosen size, reproducible from a seed.
#include "attnscope/presets.h"

#include <cmath>
#include <random>
#include <string>

#include "attnscope/error.h"

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

}  // namespace attnscope
