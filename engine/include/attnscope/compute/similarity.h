// Head similarity and per-head statistics, computed from weight maps.
#pragma once

#include <vector>

#include "attnscope/compute/result.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// weights: one (n_q, n_k) map per head.
Similarity headSimilarity(const std::vector<const Matrix*>& weights);
// After only head `head`'s map changed: recomputes its row and column of `similarity` (h - 1 pairs, not h^2/2).
void updateHeadSimilarity(const std::vector<const Matrix*>& weights, int head, Similarity& similarity);
HeadStats headStats(const Matrix& weights);
// result.similarity and result.stats from result.heads[*].weights: the analysis step after the heads.
void analyseHeads(Result& result);
// The same from a result that keeps no maps (compute/tiles.h): streamed over blocks of query rows, O(n d)
// memory; equal to analyseHeads on the maps up to the order of double sums.
void analyseHeadsStreamed(const Scene& scene, Result& result);

}  // namespace attnscope
