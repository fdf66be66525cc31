// The GPU forward's run-time check (compute/sampled_check.h's, for a checkpoint's layers): each layer's attention
// as the GPU left it, on sampled query rows of every head, against the weights the CPU works out in double from
// the GPU's own Q and K: the kept map's rows, or the row statistics m and l when the maps are dropped; and each
// product (q|k|v, o, the MLP's, the router's) at sampled rows and columns against the CPU's from the GPU's own
// input rows. What a race, a missing barrier or a wrong dispatch does to a stage shows there (and
// ATTNSCOPE_GPU_FAULT's wrong l).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attnscope/compute/sampled_check.h"
#include "attnscope/model/forward.h"

namespace attnscope::gpu {

// q, k: (n, n_head head_dim), head h at columns [h hd, (h + 1) hd): Q scaled, K of the head's kv head. `layer`'s
// maps in forward's buffer when kept, else its stats. `cap`: the soft cap (0: none). The tolerance is
// compareSampledRows': t = 1e-4 + 32 eps32 (A + sqrt(n_k)) on |got - cpu| / (1 + |cpu|), A = max_j sum_d |q_d k_jd|.
std::optional<CheckMismatch> checkLayerRows(const model::ForwardResult& forward, int layer, const Matrix& q,
                                            const Matrix& k, int head_dim, float cap, const std::vector<int>& rows);

// C = A W^T + b (W stored (out, in)), or A W + b (W stored (in, out): `in_out`), at rows x cols: a_rows (rows,
// in) and c_rows (rows, cols) as the GPU left them, before_rows (rows, cols) what C held before an accumulating
// product added to it (null: written). Each element within the rigorous float32 bound of a k-term sum,
// (k + 2) eps32 (sum_k |a_k w_k| + |b|), plus eps32 |before| and eps32 |c| for the add and the store. The text
// of the first element outside it, or nothing.
std::optional<std::string> checkProductRows(const Matrix& w, bool in_out, const RowVector* bias,
                                            const std::vector<int>& rows, const std::vector<int>& cols,
                                            const Matrix& a_rows, const Matrix& c_rows, const Matrix* before_rows);

}  // namespace attnscope::gpu
