// A scene's positions in its scores: the rotary tables of a scene with "rope" (compute/rope.h does the rotation)
// and each head's q and k before and after it, for the views that show the step (the Cell tab, the walkthrough).
#pragma once

#include <optional>

#include "attnscope/compute/rope.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// Query rows rotate by query_positions, key rows by key_positions (0..n-1 by default).
struct SceneRopeTables {
  RopeTable query;  // (n_q, dims/2)
  RopeTable key;    // (n_k, dims/2)
};
// nullopt for a scene without "rope". The scene must be valid (validateScene).
std::optional<SceneRopeTables> sceneRopeTables(const Scene& scene);

// The scene's q_norm or k_norm applied in place to one head's q or k (rows, d_k): each row divided by
// sqrt(mean of its squares + eps), times the weight. Nothing when `norm` is absent.
void applyHeadNorm(const std::optional<SceneHeadNorm>& norm, Matrix& x);
bool hasHeadNorm(const Scene& scene);  // q_norm or k_norm present

// Head h's projections alone: X W_Q + b_Q (n_q, d_k) and X_key W_K + b_K (n_k, d_k), before q_norm / k_norm.
Matrix queryProjection(const Scene& scene, int head);
Matrix keyProjection(const Scene& scene, int head);

// Head h's q and k as rotated: q = X W_Q + b_Q (n_q, d_k), k = X_key W_K + b_K (n_k, d_k) with the head's own
// or its group's W_K, then q_norm / k_norm when the scene has them (the rotation's input).
Matrix queryBeforeRope(const Scene& scene, int head);
Matrix keyBeforeRope(const Scene& scene, int head);

// Head h's q (n_q, d_k) and k (n_k, d_k) as the backends attend them: projected, normalised, then rotated. From
// the scene alone, O(n d_model d_k): what a head's overview needs (overviewRows) before any forward pass.
Matrix headQuery(const Scene& scene, int head);
Matrix headKey(const Scene& scene, int head);

}  // namespace attnscope
