// Scenes made in code: random scenes of a chosen size (benchmarks, tests, the app's presets).
#pragma once

#include <cstdint>

#include "attnscope/scene/scene.h"

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

// "Repeated random tokens", the usual probe for induction heads: `length` tokens drawn without repeats from a
// vocabulary of `vocab` ("w0" .. "w{vocab-1}"), then the same `length` tokens again (n = 2 * length). Each
// vocabulary entry has one embedding ~ N(0, 1), so a repeated token has the same embedding both times; sinusoidal
// positions are added when `positions` is set. Projections and W_O as makeRandomScene (d_k = d_v = d_model /
// heads). Throws InputError when length < 1 or vocab < length.
struct RepeatedTokensSpec {
  int length = 8;
  int vocab = 50;
  int heads = 4;
  int d_model = 16;
  bool positions = true;
  std::uint64_t seed = 0;
};
Scene makeRepeatedTokensScene(const RepeatedTokensSpec& spec);

}  // namespace attnscope
