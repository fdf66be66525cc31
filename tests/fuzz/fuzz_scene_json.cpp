// libFuzzer target: the scene file reader as `compute` runs it (parseJsonText: nesting scan, bounded errors;
// then sceneFromJson with validateScene) on any bytes. Refusals are InputErrors of bounded length; anything else
// (a crash, a stack overflow, a sanitizer report, another exception, an unbounded message) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/scene/scene_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const nlohmann::json j =
        attnscope::parseJsonText(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    const attnscope::Scene scene = attnscope::sceneFromJson(j);
    (void)attnscope::formatJson(attnscope::sceneToJson(scene));
  } catch (const attnscope::InputError& e) {
    if (std::strlen(e.what()) > 2000) __builtin_trap();  // a message must quote input, never carry it whole
  }
  return 0;
}
