// A user's own trained attention layer (a PyTorch or Keras state dict saved as safetensors or .npz) made into a
// scene through the layout converters (scene/layouts.h): what `attnscope import` and the window's Open do.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/arrays/array_file.h"
#include "attnscope/scene/scene.h"

namespace attnscope::arrays {

enum class UserLayout {
  TorchMha,     // "torch-mha": nn.MultiheadAttention's in_proj_weight (3E, E), in_proj_bias, out_proj.weight/bias
  FusedQkv002,  // "fused-qkv-002": seed 002's attn.weight (3E, E), attn.bias (3E); [q|k|v] split, causal mask
  FusedQkv003,  // "fused-qkv-003": seed 003's qkv_linear.weight/bias (per head [q|k|v]), fc_out.weight/bias
  KerasMha,     // "keras-mha": query/kernel (E, H, d_k), query/bias (H, d_k), key/..., value/...,
                // attention_output/kernel (H, d_v, E), attention_output/bias (E)
};
UserLayout parseUserLayout(const std::string& name);  // InputError("--layout", ...) on an unknown name
const std::vector<std::string>& userLayoutNames();
// The keys a layout reads (without "x"), for messages and docs/formats.md.
std::vector<std::string> userLayoutKeys(UserLayout layout);

struct UserLayerOptions {
  UserLayout layout = UserLayout::TorchMha;
  int heads = 0;                      // needed by the fused and torch layouts (their weights do not say it)
  std::vector<std::string> tokens;    // n labels, one per row of x
  std::optional<NamedArray> inputs;   // x (n, E); absent: the file's own "x"
  std::optional<MaskKind> mask;       // absent: the layout's own (causal for seed 002, none otherwise)
};

// Token names typed as one string: split at spaces (' ', runs of blanks are one break) or at `separator`.
// What `import --text`/`--tokens` and the window's Open form both do.
std::vector<std::string> splitTokenText(const std::string& text, char separator = ' ');

// What `import` holds at most for `arrays` (and `inputs`), from their sizes: the scene made of their values
// (4 bytes each, as much again for the converters' copies) and its JSON (kJsonBytesPerNumber of text and a
// 16-byte value in the tree each): checked against the memory budget before the scene is made.
std::size_t userLayerImportBytes(const std::map<std::string, NamedArray>& arrays, const std::optional<NamedArray>& inputs);

// `arrays` (read from `file`, named in errors) as a scene: every key checked for presence and shape (one line
// naming the key, the expected and the actual shape), then converted and validated.
Scene userLayerScene(const std::map<std::string, NamedArray>& arrays, const std::string& file,
                     const UserLayerOptions& options);

}  // namespace attnscope::arrays
