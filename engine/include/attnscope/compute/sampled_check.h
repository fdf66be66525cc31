// A result checked against the CPU engine on a sample of its query rows: what makes a wrong GPU number
// impossible to miss on a card and driver we never tested. The CPU computes only the sampled rows (their Q rows,
// every key's K and V): a scene of those query rows over every key, so the cost is the K, V projections plus
// (rows x n_k) scores per head, a few percent of the full compute. Everything a result keeps of those rows is
// compared: every head's weights and scores (when kept), row statistics m and l, head output, and the output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/compute/result.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// The query rows checked: all of them up to 34; else the first, the last and one in each of 32 equal strata of
// the rows between, its place in the stratum drawn from `seed` (a race that wrongs some rows is caught by a
// later compute if not this one). Sorted, distinct.
std::vector<int> sampledQueryRows(int n_q, std::uint64_t seed);

// The CPU's numbers for `rows` of `scene`: a Result of rows.size() query rows (weights and scores only when
// with_maps / keep_scores), K and V of every key.
struct RowReference {
  std::vector<int> rows;
  Result cpu;
  std::vector<float> scales;   // each head's score scale
  double w_o_column_sum = 0;   // max over output columns of sum |W_O|; 0 without W_O
};
RowReference referenceRows(const Scene& scene, const std::vector<int>& rows, bool with_maps, bool keep_scores);

// The rows `rows` of `result`'s query-row matrices (weights, scores, m, l, head outputs, concat, output), for a
// worker to compare while the caller keeps the full result: (rows.size(), n_k) a head at most.
Result sampledRowsOf(const Result& result, const std::vector<int>& rows);

// The first number off by more than its tolerance. The tolerance of query row r of head h is on the mixed scale
// |got - cpu| / (1 + |cpu|) (weights, scores, m, l), as the GPU parity tests (tests/gpu/) measure:
//   t = 1e-4 + 32 eps32 (A + sqrt(n_k)),  A = |scale| max_j sum_d |q_rd| |k_jd|
// A float32 score is off by up to a few eps32 A (its products' rounding, summed in any order, FMA or not), a
// weight by w as much, a sum over n_k terms by ~sqrt(n_k) eps32; the parity table's worst errors (1e-7 to 1e-6 on
// order-1 scenes, 9.4e-5 on peaked scores of ~1e3, 8e-4 at ~1e4) all lie under t, while the failures seen on a
// real card (rows of another dispatch, a race) are off by 1e-2 and more, or NaN. A head output carries its
// weights' error times the values: t (1 + max |v|); the output that through W_O: (1 + max column sum of |W_O|).
struct CheckMismatch {
  int head = -1;     // -1: the output (after W_O)
  int row = -1;      // query row
  std::string what;  // "weights", "scores", "m", "l", "head output", "output"
  int column = -1;   // key or output column; -1 for m, l
  double got = 0, cpu = 0, error = 0, tolerance = 0;
  // "head 3, query row 17: weights at key 5 is 0.31, the CPU's 0.12 (error 0.19, tolerance 1.2e-4)"
  std::string text() const;
};

// Compares `sampled` (sampledRowsOf the checked result, rows reference.rows) with the reference. Non-finite
// against a finite reference is a mismatch; a masked score's -inf and a fully masked row's m = -inf must match.
// `largest_ratio` (optional) receives the largest error / tolerance seen (a test's margin).
std::optional<CheckMismatch> compareSampledRows(const Result& sampled, const RowReference& reference,
                                                double* largest_ratio = nullptr);

// All three steps at once, on the calling thread.
std::optional<CheckMismatch> checkSampledRows(const Scene& scene, const Result& result, std::uint64_t seed,
                                              double* largest_ratio = nullptr);

}  // namespace attnscope
