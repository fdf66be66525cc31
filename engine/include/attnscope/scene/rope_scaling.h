// A RoPE scaling as a description holds it (a scene's "rope", a checkpoint's config.json): data only, so that a
// scene names its RoPE without the compute (compute/rope.h turns it into frequencies and tables).
#pragma once

namespace attnscope {

// config.json's `rope_scaling`. None: plain RoPE. Linear: every inverse frequency divided by `factor` (positions
// interpolated). Llama3 (Llama 3.1+): long wavelengths divided by `factor`, short ones kept, the band between
// blended, as transformers' _compute_llama3_parameters does.
struct RopeScaling {
  enum class Type { None, Linear, Llama3 };
  Type type = Type::None;
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3 only
  double high_freq_factor = 4.0;  // llama3 only
  int original_max_position_embeddings = 8192;  // llama3 only
};

}  // namespace attnscope
