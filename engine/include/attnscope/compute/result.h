// Result: every matrix a backend computes from a Scene.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnscope/types.h"

namespace attnscope {

struct HeadResult {
  Matrix q;        // (n_q, d_k)
  // K and V belong to the head's key/value head: the query heads of one group (a scene's kv_heads) hold the same
  // two matrices, once, so a result's memory counts them once per group. Read them through k() and v(); a
  // backend writes through ownK()/ownV() (copy on write: a head or a copy that still holds the old matrix keeps
  // it) and shares a group's with shareKeyValues.
  const Matrix& k() const { return k_ ? *k_ : kEmpty(); }  // (n_k, d_k)
  const Matrix& v() const { return v_ ? *v_ : kEmpty(); }  // (n_k, d_v)
  Matrix& ownK() { return own(k_); }
  Matrix& ownV() { return own(v_); }
  void shareKeyValues(const HeadResult& owner) { k_ = owner.k_, v_ = owner.v_; }
  bool sharesKeyValuesWith(const HeadResult& other) const { return k_ && k_ == other.k_ && v_ == other.v_; }
  Matrix scores;   // (n_q, n_k) scaled, masked entries -inf; empty when ComputeOptions::keep_scores is false
  Matrix weights;  // (n_q, n_k) softmax of scores; masked entries exactly 0; fully masked rows all 0; empty
                   // when the maps are not kept (then every map is read through tiles: compute/tiles.h)
  Matrix output;   // (n_q, d_v) weights V
  // Row statistics, with which q, k and the mask give any weight: w_ij = exp(s_ij - row_max_i) / row_sum_i.
  RowVector row_max;  // (n_q) the row's largest scaled score over its allowed keys; -inf when all are masked
  RowVector row_sum;  // (n_q) sum over allowed keys of exp(s_ij - row_max_i); 0 when all are masked
  // (n_k) each key's value norm ||v_j W_O^h|| (Kobayashi et al. 2020) where a result knows it without its model (a
  // capture storing v and the head's rows of W_O: arrays/capture.h); else empty.
  RowVector value_norm;

  bool hasMap() const { return weights.size() > 0; }

 private:
  std::shared_ptr<Matrix> k_, v_;
  static Matrix& own(std::shared_ptr<Matrix>& m) {
    if (!m)
      m = std::make_shared<Matrix>();
    else if (m.use_count() > 1)
      m = std::make_shared<Matrix>(*m);
    return *m;
  }
  static const Matrix& kEmpty() {
    static const Matrix empty;
    return empty;
  }
};

// Per-head summary of the weight map; "attending" rows leave out rows with one allowed key (singleKeyRows).
struct HeadStats {
  float entropy = 0;        // mean over attending query rows of -sum_j w log w (nats)
  float max_weight = 0;     // largest weight in the attending rows
  float mean_distance = 0;  // mean over attending query rows of sum_j w_ij |i - j| (token positions)
};

struct Similarity {
  Matrix cosine;  // (h, h) cosine of the flattened weight maps; symmetric, unit diagonal
  Matrix js;      // (h, h) Jensen-Shannon divergence (nats, 0..ln 2) averaged over query rows; symmetric, zero diagonal
};

struct Result {
  std::vector<HeadResult> heads;
  Matrix concat;  // (n_q, sum of d_v)
  Matrix output;  // (n_q, d_model), or the concat when the scene has no W_O
  Similarity similarity;
  std::vector<HeadStats> stats;       // one per head
  std::vector<std::string> warnings;  // e.g. a query row whose keys are all masked
  // > 0: the scores were soft-capped before the softmax, s -> c tanh(s / c) (Gemma 2's attn_logit_softcapping, a
  // capture's softcap); the row statistics are of the capped scores, and the tile engine caps what it recomputes.
  float score_cap = 0;
};

}  // namespace attnscope
