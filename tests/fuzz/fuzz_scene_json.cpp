// libFuzzer target: the scene JSON reader (sceneFromJson with validateScene) on any bytes that parse as JSON.
// Refusals are InputErrors; anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/scene/scene_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    const attnscope::Scene scene = attnscope::sceneFromJson(j);
    (void)attnscope::sceneToJson(scene);
  } catch (const attnscope::InputError&) {
  }
  return 0;
}
