// The scene panel's presets (panel_model.cpp): the seed, the random scene's sizes, the Sentence preset's text.
#pragma once

#include <cstdint>
#include <string>

namespace attnscope::app {

struct PresetsState {
  int seed = 1;                 // the presets' seed, as typed (0 .. 2^31 - 1)
  std::uint64_t fill_seed = 1;  // for the random entries a resize or a random fill adds; never shown
  int random_n = 16, random_heads = 4, random_d_model = 16;
  std::string sentence = "The cat sat on the mat because it was tired.";
};

}  // namespace attnscope::app
