// The Result as JSON (`attnscope compute`); numbers formatted as scene files format them (scene_json.h).
#pragma once

#include <nlohmann/json.hpp>

#include "attnscope/compute/result.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// tokens.query/key, heads[i].q/k/v/scores/weights/output/stats, concat, output, similarity.cosine/js, warnings.
// Masked scores (-inf) are written as null.
nlohmann::ordered_json resultToJson(const Scene& scene, const Result& result);

}  // namespace attnscope
