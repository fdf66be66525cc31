// A scene's rotary tables and its heads' q and k before rotation (scene_rope.h).
#include "attnscope/compute/scene_rope.h"

#include <cmath>

namespace attnscope {

std::optional<SceneRopeTables> sceneRopeTables(const Scene& scene) {
  if (!scene.rope) return std::nullopt;
  const std::vector<double> f = ropeInverseFrequencies(scene.rope->theta, scene.rope->dims, scene.rope->scaling, "rope");
  return SceneRopeTables{RopeTable(scene.queryPositions(), f), RopeTable(scene.keyPositions(), f)};
}

static Matrix project(const Matrix& rows, const Matrix& w, const std::optional<RowVector>& b) {
  Matrix out = rows * w;
  if (b) out.rowwise() += *b;
  return out;
}

void applyHeadNorm(const std::optional<SceneHeadNorm>& norm, Matrix& x) {
  if (!norm) return;
  const float eps = static_cast<float>(norm->eps), inv_d = 1.0f / static_cast<float>(x.cols());
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const float inv = 1.0f / std::sqrt(x.row(i).squaredNorm() * inv_d + eps);
    x.row(i).array() = x.row(i).array() * inv * norm->weight.array();
  }
}

bool hasHeadNorm(const Scene& scene) { return scene.q_norm || scene.k_norm; }

Matrix queryProjection(const Scene& scene, int head) {
  const HeadParams& p = scene.heads.at(static_cast<std::size_t>(head));
  return project(scene.query, p.w_q, p.b_q);
}

Matrix keyProjection(const Scene& scene, int head) { return project(scene.keyRows(), scene.wK(head), scene.bK(head)); }

Matrix queryBeforeRope(const Scene& scene, int head) {
  Matrix q = queryProjection(scene, head);
  applyHeadNorm(scene.q_norm, q);
  return q;
}

Matrix keyBeforeRope(const Scene& scene, int head) {
  Matrix k = keyProjection(scene, head);
  applyHeadNorm(scene.k_norm, k);
  return k;
}

Matrix headQuery(const Scene& scene, int head) {
  Matrix q = queryBeforeRope(scene, head);
  if (const std::optional<SceneRopeTables> rope = sceneRopeTables(scene)) rope->query.rotate(q);
  return q;
}

Matrix headKey(const Scene& scene, int head) {
  Matrix k = keyBeforeRope(scene, head);
  if (const std::optional<SceneRopeTables> rope = sceneRopeTables(scene)) rope->key.rotate(k);
  return k;
}

}  // namespace attnscope
