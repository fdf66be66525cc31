// Finding heads across a whole checkpoint: every head-type score for every layer and head (from tiles, no n^2
// maps held past the maps limit), the composition of every earlier head with every later one (Elhage et al.
// 2021, from the weights alone), and the repeated-random-tokens text on which induction heads show.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/model/model.h"

namespace attnscope::model {

// [layer][head] head-type scores of a forward (analysis.h's definitions), the tokens compared by id: query i
// and key j hold the same token when ids[i] == ids[j]. Kept maps are read in place; otherwise each layer's rows
// are recomputed in blocks from its stats (O(n d) per layer, one block of rows at a time).
std::vector<std::vector<HeadTypeScores>> modelHeadScores(const ForwardResult& forward, const std::vector<int>& ids,
                                                         int local_window = kDefaultLocalWindow);
// The same with the tokens compared as text (a saved tensor's, `attnscope view --analysis-out`): query i and key j
// hold the same token when tokens[i] == tokens[j]. A tensor's layout is not causal: no row has a single key.
std::vector<std::vector<HeadTypeScores>> modelHeadScores(const ForwardResult& forward,
                                                         const std::vector<std::string>& tokens,
                                                         int local_window = kDefaultLocalWindow);

// Composition scores between every head A of layer la and every head B of a later layer lb > la, in row-vector
// form (x W): W_OV^A = V_A O_A (d x d), V_A = diag(g_la) W_V of A's KV head (d x head_dim), O_A = A's rows of W_O
// (head_dim x d); W_QK^B = Q_B K_B^T, Q_B = diag(g_lb) W_Q^B, K_B = diag(g_lb) W_K of B's KV head; g the layer's
// input-norm scale (1 where a family has none). Biases, RoPE and q/k norms are left out, as TransformerLens and
// the paper do. score = ||W_OV^A M|| / (||W_OV^A|| ||M||) (Frobenius) with M = W_QK^B (q), (W_QK^B)^T (k) or
// W_OV^B (v). Computed through Gram matrices of the (head_dim x d) factors, in double: ||W_OV^A M||^2 =
// <G_A, H_M>, G_A = W_OV^A^T W_OV^A, H_M = M M^T, never a d x d product per pair.
struct Composition {
  int n_layer = 0, n_head = 0;
  // Each [la][ha][lb][hb] flattened as ((la * n_head + ha) * n_layer + lb) * n_head + hb; 0 unless lb > la.
  std::vector<double> q, k, v;
  double at(const std::vector<double>& mode, int la, int ha, int lb, int hb) const {
    return mode[((static_cast<std::size_t>(la) * n_head + ha) * n_layer + lb) * n_head + hb];
  }
};

// float64 bytes compositionScores needs for `model` (its factors and one slab of Gram rows per head).
std::size_t compositionBytes(const Model& model);
// Refused past `budget_bytes` (0: defaultMemoryBudget()) before anything is allocated. `done`, when given, is
// raised from 0 to 1 as the work proceeds (an estimate by multiply-adds), for a caller on another thread.
Composition compositionScores(const Model& model, std::size_t budget_bytes = 0, std::atomic<float>* done = nullptr);

// Direct logit attribution at one position: each component's share of the logit of a target token, with the
// final norm's scale r frozen from this forward. The final norm is linear in its input x once r is fixed:
// RMSNorm: logit = x . u / r + 0, LayerNorm: logit = (x - mean x) . u / r + b . W_U[t], with u = g * W_U[t]
// (g, b the final norm's weight and bias, W_U the unembedding, the embedding where tied). x is the sum of the
// residual stream's parts, so the logit is the sum of
//   embedding (token, + learned position) + per layer (its heads' z_h W_O^h + b_O + rounding) + its MLP's output
//   + the final norm's bias term,
// each as (part - mean part) . u / r (LayerNorm) or part . u / r (RMSNorm). z_h is head h's output at the position
// (its weights over the keys times V from the layer's normed input, v_j = x_j W_V + b_V of its KV head).
struct LogitAttribution {
  int position = 0, target = 0;
  double logit = 0;                        // the forward's own: hidden[position] . W_U[target]
  std::vector<std::vector<double>> heads;  // [layer][head]
  std::vector<double> attention_bias;      // [layer]: b_O's share (0 without b_O)
  // [layer]: the layer's attention output (from the residual stream) less its heads and b_O: float rounding of
  // the forward's sums, not a component.
  std::vector<double> attention_rest;
  std::vector<double> mlp;  // [layer]
  double embedding = 0;     // the token's embedding (and its learned position's)
  double final_bias = 0;    // the final LayerNorm's b . W_U[target]; 0 for RMSNorm
  double sum() const;       // every part above: the logit up to the float rounding of the forward's final norm
};

// Why `model` has no direct logit attribution, in one sentence naming its family; "" when it has one (every
// decoder). An encoder (BERT, RoBERTa) passes a norm after every sublayer, so no head writes to the logit directly.
std::string logitAttributionRefusal(const Model& model);
// `forward` with keep_ln1 and trace_position == position. target < 0: the top prediction at the position. The
// unembedding of an untied checkpoint is read from its folder (loadUnembedding). Throws InputError("--dla-target")
// for a target outside the vocabulary, ("--dla-position") for a forward traced elsewhere.
LogitAttribution logitAttribution(const Model& model, const ForwardResult& forward, int position, int target = -1,
                                  std::size_t budget_bytes = 0);
nlohmann::ordered_json logitAttributionJson(const LogitAttribution& dla);

// Value-norm weighting (Kobayashi et al. 2020, "Attention is not only a weight"): for head h of `layer` and key j,
// ||f_h(x_j)|| with f_h(x) = (x W_V + b_V) W_O^h, the vector head h adds to the residual stream for key j (times
// its weight) before any norm after the sublayer. x_j is the layer's attention input, forward.ln1[layer]: the
// input norm's output, or the layer's input itself where there is none (OLMo 2, the post-norm encoders); v_j
// from head h's KV head (grouped-query attention), W_O^h head h's rows of W_O; b_O belongs to no head and is left
// out. Gemma 2/3's and OLMo 2's norm after attention scales the heads' sum at each query position, not a key's
// vector, so it is not part of the norm. The weighted map of head h is alpha_ij * norm(h, j).
// (n_head, n), float32: V in float32 as the forward computes it, ||v W_O^h||^2 = v (W_O^h W_O^h^T) v^T in double
// (O(n d head_dim) for V per KV head, O(n head_dim^2) per head). Needs a forward with keep_ln1 (InputError
// "forward.ln1" otherwise); one layer at a time, as a window showing one layer would call it.
// valueNormsDouble keeps them in double, where a norm past float32's range (3.4e38) stays what it is; an output
// in float32 takes them through float32ValueNorms (analysis/value_norms.h), which refuses such a norm by name.
Matrix valueNorms(const Model& model, const ForwardResult& forward, int layer);
Eigen::MatrixXd valueNormsDouble(const Model& model, const ForwardResult& forward, int layer);
// The value norms a forward carries itself, with no model: a capture storing v and W_O's rows (arrays/capture.h,
// HeadResult::value_norm). (n_head, n) of `layer`; InputError "value norms" when that layer has none.
Matrix carriedValueNorms(const ForwardResult& forward, int layer);

// `length` ids drawn uniformly from [0, vocab_size) by a seeded generator (the same ids for the same seed on
// every machine), then the same `length` ids again: on the second half an induction head attends to the token
// after the current token's first occurrence. Refused (InputError "--repeated-random") for length < 1 or a
// doubled length past max_tokens.
std::vector<int> repeatedRandomTokens(int vocab_size, int length, std::uint64_t seed, int max_tokens);
// The same, drawn from `vocabulary` (ids, as tokenizerIds lists them): id vocabulary[r % size] where the above
// draws r % vocab_size, so a vocabulary of 0 .. V - 1 gives the same ids. InputError("vocabulary") when empty.
std::vector<int> repeatedRandomTokens(const std::vector<int>& vocabulary, int length, std::uint64_t seed,
                                      int max_tokens);
// The ids below `vocab_size` (the config's, which may pad past the tokenizer) that the tokenizer has a token
// for, in order: a vocabulary with holes (ids it skips) gives only its tokens.
std::vector<int> tokenizerIds(const Tokenizer& tokenizer, int vocab_size);

// The analysis file's parts (`attnscope model --analysis-out`): {score name: [layer][head], null where a score
// is undefined}, in headTypeScoreNames()'s order; and {"q", "k", "v": [layer][head][layer][head]}.
nlohmann::ordered_json headScoresJson(const std::vector<std::vector<HeadTypeScores>>& scores);
nlohmann::ordered_json compositionJson(const Composition& composition);

}  // namespace attnscope::model
