// The Result as JSON (`attnscope compute`); numbers formatted as scene files format them (scene_json.h).
#pragma once

#include <nlohmann/json.hpp>

#include "attnscope/compute/result.h"
#include "attnscope/scene/scene.h"
#include "attnscope/scene/scene_json.h"

namespace attnscope {

// tokens.query/key, heads[i].q/k/v/scores/weights/output/stats, concat, output, similarity.cosine/js, warnings.
// Masked scores (-inf) are written as null. `streamed`: the per-head and output matrices go there as placeholders
// (the result must then outlive the writing; formatJsonTo streams them), instead of into the tree.
nlohmann::ordered_json resultToJson(const Scene& scene, const Result& result, JsonMatrices* streamed = nullptr);
// At most the bytes of that JSON's text, from the scene's shapes alone (before anything is computed).
std::size_t resultJsonBytes(const Scene& scene);

}  // namespace attnscope
