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
// The spec's shapes as a Scene without numbers (each matrix keeps its rows or its columns and is 0 the other
// way, so nothing is allocated): for the estimates that read shapes only (estimateResultBytes, mapBytes),
// before a scene of 65536 tokens is made. Not a scene to compute. Throws InputError for heads < 1 or n < 1.
Scene randomSceneShape(const RandomSceneSpec& spec);
// What a random scene and its result will take, known before either exists: the scene's inputs, projections
// and W_O (makeRandomScene's), and estimateResultBytes of its result with or without the maps.
struct RandomSceneEstimate {
  std::size_t scene_bytes = 0;
  std::size_t result_bytes = 0;
  std::size_t total() const { return scene_bytes + result_bytes; }
};
RandomSceneEstimate estimateRandomScene(const RandomSceneSpec& spec, bool with_maps);
// InputError("scene size", ...) when estimateRandomScene(spec, with_maps).total() is past the memory budget
// (0: defaultMemoryBudget()): the one-line refusal before anything is allocated.
void checkRandomSceneBudget(const RandomSceneSpec& spec, bool with_maps, std::size_t budget = 0);

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
