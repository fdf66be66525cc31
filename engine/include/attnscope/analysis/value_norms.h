// Value norms of a scene's heads (Kobayashi et al. 2020, "Attention is not only a weight"): a weight on a key whose
// value the head barely writes moves nothing, so a weight alpha_ij times key j's value norm says how much key j
// moves query i's output through head h.
#pragma once

#include "attnscope/scene/scene.h"

namespace attnscope {

// (heads, n_k): for head h and key j, ||(v_j W_V^h + b_V^h) W_O^h||, computed in double: v_j the scene's value
// row j (value, else key, else query), W_V^h and b_V^h the head's own or its KV head's, W_O^h head h's d_v rows of
// w_o (b_o is no head's); without w_o the output is the concatenation, so the norm is of v_j W_V^h + b_V^h.
// O(heads n_k d_model d_v).
Matrix sceneValueNorms(const Scene& scene);

}  // namespace attnscope
