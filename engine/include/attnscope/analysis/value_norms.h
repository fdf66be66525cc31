// Value norms of a scene's heads (Kobayashi et al. 2020, "Attention is not only a weight"): a weight on a key whose
// value the head barely writes moves nothing, so a weight alpha_ij times key j's value norm says how much key j
// moves query i's output through head h.
#pragma once

#include <string>

#include "attnscope/scene/scene.h"

namespace attnscope {

// (heads, n_k): for head h and key j, ||(v_j W_V^h + b_V^h) W_O^h||, computed in double: v_j the scene's value
// row j (value, else key, else query), W_V^h and b_V^h the head's own or its KV head's, W_O^h head h's d_v rows of
// w_o (b_o is no head's); without w_o the output is the concatenation, so the norm is of v_j W_V^h + b_V^h.
// O(heads n_k d_model d_v). sceneValueNormsDouble keeps them in double (a value row of 3e38s has a norm past
// float32's range); sceneValueNorms is their float32 rounding, inf past that range (the window's scales).
Eigen::MatrixXd sceneValueNormsDouble(const Scene& scene);
Matrix sceneValueNorms(const Scene& scene);

// The (heads, n_k) norms in float32 for an output that writes alpha_ij * norm(h, j) in float32: InputError
// ("value norms", ...) naming the first norm past float32's largest (3.4e38; or not finite), its head (from 1) and
// key (from 0), and `where` ("layer 3, " or ""), since a weight of 1 on that key would be written as inf.
Matrix float32ValueNorms(const Eigen::MatrixXd& norms, const std::string& where = "");

}  // namespace attnscope
