// Scenes made in code: random scenes of a chosen size (benchmarks, tests, the app's presets).
#pragma once

#include <cstdint>

#include "attnscope/scene.h"

namespace attnscope {

struct RandomSceneSpec {
  int n = 8;         // tokens (n_q = n_k)
  int heads = 2;
  int d_model = 8;
  int d_k = 0;       // 0 = d_model / heads
  int d_v = 0;       // 0 = d_k
  bool causal = false;
  bool with_w_o = true;
  std::uint64_t seed = 0;
};
// Inputs ~ N(0, 1); projections ~ N(0, 1/d_model) so that scores stay O(1) whatever the size.
Scene makeRandomScene(const RandomSceneSpec& spec);

}  // namespace attnscope
