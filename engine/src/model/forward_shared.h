// What the GPT-2 and Llama-family forwards share: one head's attention (its map kept, or only its row
// statistics: forward_attention.cpp) and the check that names the first stage whose activations overflow float32.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/model/forward.h"
#include "attnscope/types.h"

namespace attnscope::model {

// A row-major column block (one head's columns of a (n, q + 2 kv) projection): inner stride 1.
using HeadColumns = Eigen::Ref<const Matrix, 0, Eigen::OuterStride<>>;
using HeadOutput = Eigen::Ref<Matrix, 0, Eigen::OuterStride<>>;

// One head's attention. q: (n, dh), already scaled; k, v: (n, dh). The weights go into `weights` (n, n),
// keys after the query (causal) and before its window exactly 0; weights * v into `out` (n, dh). window: 0, every
// earlier key; W, query i sees keys i - W < j <= i. causal false (an encoder): every key, window 0. Computed in
// blocks of query rows, each against only the keys it can see, so the masked half of (n, n) costs no multiply.
// softcap > 0: scores s -> tanh(s / softcap) softcap before the mask (Gemma 2's attn_logit_softcapping).
void attendHead(const HeadColumns& q, const HeadColumns& k, const HeadColumns& v, int window, bool causal,
                Eigen::Map<Matrix> weights, HeadOutput out, float softcap = 0);
// The same attention flash-style, writing no (n, n) map: key blocks of 256 against blocks of 128 query rows with
// an online softmax (the running max m and sum l rescaled as each block raises m), blocks wholly masked (after the
// query, before its window) never computed. weights * v into `out` (n, dh); m and l into stats.row_max/row_sum
// (n), from which tiles recompute any weight. softcap > 0: scores capped as attendHead's (the statistics are then of
// the capped scores: the layer's Result::score_cap says so to the tiles).
void attendHeadStats(const HeadColumns& q, const HeadColumns& k, const HeadColumns& v, int window, bool causal,
                     HeadOutput out, HeadResult& stats, float softcap = 0);

// What a layer scene is built from, checked: 0 <= layer < n_layer, a forward run with keep_ln1 (one input per
// layer), one token label per position.
void checkLayerSceneInput(const ForwardResult& forward, int n_layer, int layer, const std::vector<std::string>& tokens);

// A forward's input checked before any work: 1 <= ids.size() <= max_tokens (`max_name` says which config field
// sets it), every id below vocab_size, and `need_bytes` of maps and activations within the budget (0 = default).
void checkForwardInput(const std::vector<int>& ids, int max_tokens, const char* max_name, int vocab_size,
                       std::size_t need_bytes, std::size_t budget_bytes);

// Finite weights (checked when read) can still overflow float32 in a forward: a layer's activations past 3.4e38.
// Each stage is checked as it ends (O(n d), against its O(n d^2) products) and the first to overflow is named,
// so that a map of NaN is never reported as a result. x * 0 is NaN only for a non-finite x.
template <typename Derived>
void checkStage(const Eigen::MatrixBase<Derived>& m, int layer, const char* stage) {
  if (!std::isnan((m.array() * 0.0f).sum())) return;
  Eigen::Index row = 0;
  for (Eigen::Index i = 0; i < m.rows() && row == 0; ++i)
    if (!m.row(i).allFinite()) row = i + 1;
  throw stageOverflow(layer, stage, static_cast<long>(row) - 1);
}

}  // namespace attnscope::model
