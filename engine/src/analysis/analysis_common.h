// Helpers shared by the analysis files: index checks that throw InputError, and a result's shape check.
#pragma once

#include <string>

#include "attnscope/error.h"
#include "attnscope/compute/result.h"
#include "attnscope/scene/scene.h"

namespace attnscope::detail {

// index in [0, count) or InputError(field, "0 to count-1", index).
inline void checkIndex(const std::string& field, int index, int count) {
  if (index < 0 || index >= count)
    throw InputError(field, count > 0 ? "0 to " + std::to_string(count - 1) : "an index into an empty list",
                     std::to_string(index));
}

// The result belongs to the scene: one head result per head, weights (n_q, n_k) or none but the row statistics
// (n_q) to compute them from (compute/tiles.h), outputs (n_q, d_v). `need_maps`: the caller reads whole maps.
inline void checkResultMatches(const Scene& scene, const Result& result, bool need_maps = false) {
  if (static_cast<int>(result.heads.size()) != scene.numHeads())
    throw InputError("result", std::to_string(scene.numHeads()) + " heads (the scene's)",
                     std::to_string(result.heads.size()));
  for (int h = 0; h < scene.numHeads(); ++h) {
    const HeadResult& hr = result.heads[static_cast<std::size_t>(h)];
    const bool on_demand = !need_maps && !hr.hasMap() && hr.row_sum.size() == scene.nQ();
    if (!on_demand && (hr.weights.rows() != scene.nQ() || hr.weights.cols() != scene.nK()))
      throw InputError("result", "head " + std::to_string(h) + " weights " + shapeString(scene.nQ(), scene.nK()),
                       shapeString(hr.weights.rows(), hr.weights.cols()));
    if (hr.output.rows() != scene.nQ() || hr.output.cols() != scene.dV(h))
      throw InputError("result", "head " + std::to_string(h) + " output (n_q, d_v)",
                       shapeString(hr.output.rows(), hr.output.cols()));
  }
}

}  // namespace attnscope::detail
