// A capture: what attention needs from a model that runs elsewhere (several GPUs, an inference server), each
// layer's queries after RoPE and keys, O(n d) per layer where its maps would be O(n^2). A folder of capture.json
// and one safetensors file a layer, written by tools/capture/attnscope_capture.py (docs/capture.md gives the
// format). Read as a saved tensor is (AttentionTensor), but with no map stored: every map is computed on demand
// from Q and K (ForwardResult's stats, compute/tiles.h), so the grid, the figures and the analysis of
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
// BF16), scaled by capture.json's scale, the mask (causal, a sliding window per layer) and the KV grouping, with
// each query row's statistics (m, l) worked out here in one pass over the keys, or taken from the layer's
// optional lse (heads, n): the log-sum-exp of the row's scaled scores, as FlashAttention returns it (then
// opening costs O(n d)). One InputError naming the file and the field for: a missing or unknown field, a
// format or version other than this reader's, sizes out of range or inconsistent (head_dim, kv_heads dividing
// heads, tokens = n), a soft cap (not read yet), a file name leaving the folder, a tensor of another shape or a
// non-finite value, and more than the memory budget (`budget` 0: defaultMemoryBudget()) before any tensor is read.
AttentionTensor readCapture(const std::string& dir, std::size_t budget = 0);

}  // namespace attnscope::arrays
