// The GPU forward's run-time check (compute/sampled_check.h's, for a checkpoint's layers): each layer's attention
// as the GPU left it, on sampled query rows of every head, against the weights the CPU works out in double from
// the GPU's own Q and K: the kept map's rows, or the row statistics m and l when the maps are dropped. What a
// race, a missing barrier or a wrong dispatch does to the attention stages shows there (and ATTNSCOPE_GPU_FAULT's
// wrong l); the products that make Q and K are the tiled GEMM the parity tests check on every run.
#pragma once

#include <optional>
#include <vector>

#include "attnscope/compute/sampled_check.h"
#include "attnscope/model/forward.h"

namespace attnscope::gpu {

// q, k: (n, n_head head_dim), head h at columns [h hd, (h + 1) hd): Q scaled, K of the head's kv head. `layer`'s
// maps in forward's buffer when kept, else its stats. `cap`: the soft cap (0: none). The tolerance is
// compareSampledRows': t = 1e-4 + 32 eps32 (A + sqrt(n_k)) on |got - cpu| / (1 + |cpu|), A = max_j sum_d |q_d k_jd|.
std::optional<CheckMismatch> checkLayerRows(const model::ForwardResult& forward, int layer, const Matrix& q,
                                            const Matrix& k, int head_dim, float cap, const std::vector<int>& rows);

}  // namespace attnscope::gpu
