// Scene files (JSON, "format": "attnscope-scene", "version": 1) and the Result as JSON (`attnscope compute`).
// The format is documented in the README.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "attnscope/result.h"
#include "attnscope/scene.h"

namespace attnscope {

// Parses and validates (validateScene). Errors are InputErrors naming the JSON field, e.g.
// "heads[1].w_k: expected 4 x 2, got 4 x 3". `source` names the file in messages.
Scene sceneFromJson(const nlohmann::json& j);
Scene loadSceneFile(const std::string& path);
nlohmann::ordered_json sceneToJson(const Scene& scene);
void saveSceneFile(const Scene& scene, const std::string& path);  // atomic

// The worked example of seed 001 (assets/scenes/worked_example.json, built into the binary).
Scene workedExampleScene();

// heads[i].q/k/v/scores/weights/output, concat, output, similarity.cosine/js, stats, warnings.
// Masked scores (-inf) are written as null.
nlohmann::ordered_json resultToJson(const Scene& scene, const Result& result);

}  // namespace attnscope
