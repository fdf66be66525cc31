// A capture: what attention needs from a model that runs elsewhere (several GPUs, an inference server), each
// layer's queries after RoPE and keys, O(n d) per layer where its maps would be O(n^2). A folder of capture.json
// and one safetensors file a layer, written by tools/capture/attnscope_capture.py (docs/capture.md gives the
// format). Read as a saved tensor is (AttentionTensor), but with no map stored: every map is computed on demand
// from Q and K (ForwardResult::layerStats, compute/tiles.h), so the grid, the figures and the analysis of
// `attnscope view` and the window apply unchanged.
#pragma once

#include <cstddef>
#include <string>

#include "attnscope/arrays/attention_tensor.h"

namespace attnscope::arrays {

// The capture format's name and version, as capture.json's "format" and "version" give them.
inline constexpr const char* kCaptureFormat = "attnscope-capture";
inline constexpr int kCaptureVersion = 1;

// `path` is a folder holding capture.json.
bool isCaptureFolder(const std::string& path);

// The capture in folder `dir`: each layer's q (heads, n, head_dim) and k (kv_heads, n, head_dim) (F32, F16 or
// BF16), scaled by capture.json's scale, soft-capped by its softcap, the mask (causal, a sliding window per layer,
// padded keys) and the KV grouping. Opening reads capture.json and each layer file's header only: the layers are read when a
// map of theirs is first asked (the forward's LayerReader, two held at a time: memory O(n d) for the layer on
// show), and each head's row statistics (m, l) are taken from the layer's optional lse (heads, n), the log-sum-exp
// of the row's scaled (capped) scores as FlashAttention returns it, or else worked out in one pass over the keys on
// the head's first use. One InputError naming the file and the field for: a missing or unknown field, a format or
// version other than this reader's, sizes out of range or inconsistent (head_dim, kv_heads dividing heads, tokens
// = n), a file name leaving the folder, a missing layer file or a tensor of another dtype or shape, and more than
// the memory budget (`budget` 0: defaultMemoryBudget()) for the layers held; a non-finite value when its layer is
// read.
AttentionTensor readCapture(const std::string& dir, std::size_t budget = 0);

}  // namespace attnscope::arrays
