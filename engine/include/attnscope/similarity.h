// Head similarity and per-head statistics, computed from weight maps.
#pragma once

#include <vector>

#include "attnscope/result.h"

namespace attnscope {

// weights: one (n_q, n_k) map per head.
Similarity headSimilarity(const std::vector<const Matrix*>& weights);
HeadStats headStats(const Matrix& weights);

}  // namespace attnscope
