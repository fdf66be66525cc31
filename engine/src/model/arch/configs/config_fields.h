// Reading config.json's fields with their checks (config_fields.cpp): every family's config reader uses these, so
// that a refusal reads the same whichever family: "PATH: FIELD: expected ..., got ...".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "attnscope/compute/rope.h"

namespace attnscope::model {

// A field is absent when missing or null (transformers writes null for "use the default").
bool has(const nlohmann::json& j, const char* key);
// An integer in [min, max]: required, or `fallback` when absent.
int intField(const nlohmann::json& j, const std::string& path, const char* key, long min, long max);
int intField(const nlohmann::json& j, const std::string& path, const char* key, long min, long max, int fallback);
// A positive number `v` that rounds to 0 in float32 (1e-300): InputError(field, ...). The forward reads eps, soft
// caps and scales in float32, where such a number would turn a soft cap off (0: none) or an eps into nothing.
void checkFloat32Positive(const std::string& field, const nlohmann::json& v);
// A finite number in (0, max], not 0 once rounded to float32 (checkFloat32Positive); `fallback` when absent.
// `field` is the prefix before the key ("PATH: ").
double positiveNumber(const nlohmann::json& j, const std::string& field, const char* key, double max, double fallback);
bool boolField(const nlohmann::json& j, const std::string& path, const char* key, bool fallback);
// rope_scaling (or v5's rope_parameters, `key`): null, or {"rope_type" (or "type"): default | linear | llama3, ...}.
RopeScaling ropeScaling(const nlohmann::json& j, const std::string& path, const char* key = "rope_scaling");
std::string scalingText(const RopeScaling& s);
bool sameScaling(const RopeScaling& a, const RopeScaling& b);
// theta from `theta_key` and/or rope_parameters.rope_theta, the scaling from rope_scaling and/or rope_parameters.
void readRope(const nlohmann::json& j, const std::string& path, const char* theta_key, double& theta,
              RopeScaling& scaling);

}  // namespace attnscope::model
