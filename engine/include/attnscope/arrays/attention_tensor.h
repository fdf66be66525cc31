// A saved attention tensor from any framework ((layers, heads, n, n) or (heads, n, n) weights, as Transformers'
// output_attentions gives them) with its tokens, checked and held as a model forward's maps so that the grid,
// the figures and the analysis of `attnscope model` apply unchanged. What `attnscope view` and the window read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/arrays/array_file.h"
#include "attnscope/compute/result.h"
#include "attnscope/model/forward.h"

namespace attnscope::arrays {

struct AttentionTensor {
  model::ForwardResult forward;     // maps layer * heads + head, each (n, n); forward.layout: layers x heads
  std::vector<std::string> tokens;  // n
  std::string tensor_name;          // the chosen array ("" for a .npy file)
  bool value_norms = false;         // a capture whose every layer stores v and W_O's rows (model::carriedValueNorms)
};

// Rows of a weight map must sum to 1 within this (float32 softmax rows sum to 1 within ~1e-6; fp16 within ~1e-3).
constexpr double kRowSumTolerance = 2e-3;

// The tensor `tensor` (needed when the file holds several) of `path` (.npy, .npz, .safetensors), with `tokens`.
// One InputError naming the field for: no such tensor (the file's arrays listed by name, dtype and shape), a rank
// other than 3 or 4, n_q != n_k, a dtype other than float or a NaN in the chosen tensor (array_file.h: the
// others are not looked at), a negative weight, a row not summing to 1 or 0 (it may be a pre-softmax score), a
// token count other than n, and more than the memory budget for the tensor and a layer's analysis
// (tensorHoldBytes; `budget` 0: defaultMemoryBudget()), refused before the maps are copied.
AttentionTensor readAttentionTensor(const std::string& path, const std::optional<std::string>& tensor,
                                    std::vector<std::string> tokens);

// The same from arrays already read from `path` (the window reads a file once to offer its tensors).
AttentionTensor attentionTensorFrom(std::map<std::string, NamedArray> arrays, const std::string& path,
                                    const std::optional<std::string>& tensor, std::vector<std::string> tokens,
                                    std::size_t budget = 0);

// What a tensor of layers x heads maps of (n, n) costs, from its shape alone, for the budget checks before the
// work: held (the maps and one layer's analysis: its maps, the head pairs, the h x h similarities), and view's
// JSON of every layer's analysis (the tree and its text, with `token_bytes` of token text).
std::size_t tensorHoldBytes(std::int64_t layers, std::int64_t heads, std::int64_t n);
std::size_t tensorAnalysisJsonBytes(std::int64_t layers, std::int64_t heads, std::int64_t n, std::size_t token_bytes);

// Whether `arrays` look like an attention tensor rather than a layer's state dict (float arrays only: int64 ids beside
// the maps are not counted): some array of rank 3 or 4 with
// square last two dims, and no array of rank 1 or 2 (a layer's projections and biases are those).
bool looksLikeAttention(const std::map<std::string, NamedArray>& arrays);

// Tokens from a file: a JSON list of strings, or else one token a line (a final newline ends the last line).
std::vector<std::string> readTokenFile(const std::string& path);
// `--tokens`' argument: an inline JSON list of strings when it starts with '[', else a token file (above).
std::vector<std::string> tokensFromArgument(const std::string& argument);

// What `view` reports of one layer (from 0) of a tensor's maps (AttentionTensor::forward) over `tokens`: per
// head the head-type scores and statistics, and the heads' similarity. `window`: the local score's window.
struct TensorLayerAnalysis {
  std::vector<HeadTypeScores> scores;  // (heads)
  std::vector<HeadStats> stats;        // (heads)
  Similarity similarity;               // (heads, heads) each
};
TensorLayerAnalysis analyseTensorLayer(const model::ForwardResult& maps, const std::vector<std::string>& tokens,
                                       int layer, int window = kDefaultLocalWindow);

}  // namespace attnscope::arrays
