// The per-row pieces of the head analysis, shared by the full-map path (similarity.cpp) and the streamed one
// (similarity_streamed.cpp), so that both give the same numbers.
#pragma once

#include "attnscope/compute/result.h"

namespace attnscope {

// JS(p, q) in nats over one query row's weights (only normal weights count; see similarity.cpp).
double jensenShannonRow(const Eigen::ArrayXf& p, const Eigen::ArrayXf& q);

// A head's statistics accumulated row by row: row i's weights w (n_k) at a time.
struct HeadStatsSum {
  double entropy = 0, distance = 0;
  int rows = 0;  // attending rows (a fully masked row is left out)
  float max_weight = 0;
  void addRow(const float* w, int n_k, int i);
  HeadStats finish() const;
};

}  // namespace attnscope
