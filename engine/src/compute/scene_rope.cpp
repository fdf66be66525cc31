// A scene's rotary tables and its heads' q and k before rotation (scene_rope.h).
#include "attnscope/compute/scene_rope.h"

namespace attnscope {

std::optional<SceneRopeTables> sceneRopeTables(const Scene& scene) {
  if (!scene.rope) return std::nullopt;
  const std::vector<double> f = ropeInverseFrequencies(scene.rope->theta, scene.rope->dims, {}, "rope");
  return SceneRopeTables{RopeTable(scene.queryPositions(), f), RopeTable(scene.keyPositions(), f)};
}

static Matrix project(const Matrix& rows, const Matrix& w, const std::optional<RowVector>& b) {
  Matrix out = rows * w;
  if (b) out.rowwise() += *b;
  return out;
}

Matrix queryBeforeRope(const Scene& scene, int head) {
  const HeadParams& p = scene.heads.at(static_cast<std::size_t>(head));
  return project(scene.query, p.w_q, p.b_q);
}

Matrix keyBeforeRope(const Scene& scene, int head) { return project(scene.keyRows(), scene.wK(head), scene.bK(head)); }

}  // namespace attnscope
