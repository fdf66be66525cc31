// Head similarity and per-head statistics, computed from weight maps.
#pragma once

#include <cstdint>
#include <vector>

#include "attnscope/compute/result.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// weights: one (n_q, n_k) map per head.
Similarity headSimilarity(const std::vector<const Matrix*>& weights);
// After only head `head`'s map changed: recomputes its row and column of `similarity` (h - 1 pairs, not h^2/2).
void updateHeadSimilarity(const std::vector<const Matrix*>& weights, int head, Similarity& similarity);
// Query rows with exactly one allowed key (query 0 under a causal mask): their weight is 1 by construction and
// says nothing about the head. (n_q), 1 = such a row. The statistics and the head-type scores leave them out.
std::vector<std::uint8_t> singleKeyRows(const Scene& scene);
// Entropy, mean distance and max_weight over the query rows that attend something and are not marked in
// `single_key_rows` (empty: none marked).
HeadStats headStats(const Matrix& weights, const std::vector<std::uint8_t>& single_key_rows = {});
// result.similarity and result.stats from result.heads[*].weights: the analysis step after the heads.
void analyseHeads(Result& result, const std::vector<std::uint8_t>& single_key_rows = {});
// The same from a result that keeps no maps (compute/tiles.h): streamed over blocks of query rows, O(n d)
// memory, single-key rows found from the scene; equal to analyseHeads on the maps up to the order of double sums.
void analyseHeadsStreamed(const Scene& scene, Result& result);

}  // namespace attnscope
