// A saved attention tensor from any framework ((layers, heads, n, n) or (heads, n, n) weights, as Transformers'
// output_attentions gives them) with its tokens, checked and held as a model forward's maps so that the grid,
// the figures and the analysis of `attnscope model` apply unchanged. What `attnscope view` and the window read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attnscope/model/gpt2.h"

namespace attnscope::arrays {

struct AttentionTensor {
  model::ForwardResult forward;     // maps layer * heads + head, each (n, n); forward.layout: layers x heads
  std::vector<std::string> tokens;  // n
  std::string tensor_name;          // the chosen array ("" for a .npy file)
};

// Rows of a weight map must sum to 1 within this (float32 softmax rows sum to 1 within ~1e-6; fp16 within ~1e-3).
constexpr double kRowSumTolerance = 2e-3;

// The tensor `tensor` (needed when the file holds several) of `path` (.npy, .npz, .safetensors), with `tokens`.
// One InputError naming the field for: a rank other than 3 or 4, n_q != n_k, a NaN (array_file.h), a negative
// weight, a row not summing to 1 or 0 (it may be a pre-softmax score), a token count other than n.
AttentionTensor readAttentionTensor(const std::string& path, const std::optional<std::string>& tensor,
                                    std::vector<std::string> tokens);

// Tokens from a file: a JSON list of strings, or else one token a line (a final newline ends the last line).
std::vector<std::string> readTokenFile(const std::string& path);

}  // namespace attnscope::arrays
