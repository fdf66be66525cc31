// Scene files (JSON, "format": "attnscope-scene", "version": 1), and the number formatting every JSON output shares.
// The format is documented in the README.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "attnscope/types.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// Parses and validates (validateScene). Errors are InputErrors naming the JSON field, e.g.
// "heads[1].w_k: expected 4 x 2, got 4 x 3". Numbers may be float64 in the file; they are stored as float32.
Scene sceneFromJson(const nlohmann::json& j);
// As sceneFromJson; a missing file or a JSON syntax error is named by the path (with line and column).
Scene loadSceneFile(const std::string& path);
nlohmann::ordered_json sceneToJson(const Scene& scene);
void saveSceneFile(const Scene& scene, const std::string& path);  // atomic

// The worked example of seed 001 (assets/scenes/worked_example.json, built into the binary).
Scene workedExampleScene();

// One float as the shortest decimal that reads back as the same float32 (integers as integers, non-finite as
// null), and a matrix as a list of rows of them: how every number of compute's and analyze's JSON is written.
nlohmann::ordered_json floatToJson(float f);
nlohmann::ordered_json matrixToJson(const Matrix& m);

// JSON as text, indented, with each list of numbers on one line (a matrix is one row per line).
// Floats are written with the fewest digits that read back as the same float32.
std::string formatJson(const nlohmann::ordered_json& j);

}  // namespace attnscope
