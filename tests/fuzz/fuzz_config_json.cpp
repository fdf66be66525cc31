// libFuzzer target: config.json as loadGpt2Config, loadLlamaConfig and GPT-NeoX's reader read it (parseJsonText,
// then gpt2ConfigFromJson, neoxArchitectureFromJson, llamaKinArchitectureFromJson and llamaConfigFromJson) on any bytes. Refusals are InputErrors of bounded length; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/architecture.h"
#include "attnscope/model/family_configs.h"
#include "attnscope/model/forward.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const nlohmann::json j = attnscope::parseJsonText(text, "config.json");
    try {
      (void)attnscope::model::gpt2ConfigFromJson(j, "config.json");
    } catch (const attnscope::InputError& e) {
      if (std::strlen(e.what()) > 2000) __builtin_trap();
    }
    try {
      (void)attnscope::model::neoxArchitectureFromJson(j, "config.json");
    } catch (const attnscope::InputError& e) {
      if (std::strlen(e.what()) > 2000) __builtin_trap();
    }
    try {  // Gemma
      (void)attnscope::model::gemmaArchitectureFromJson(j, "config.json");
    } catch (const attnscope::InputError& e) {
      if (std::strlen(e.what()) > 2000) __builtin_trap();
    }
    try {  // Phi-3, OLMo 2, Mixtral
      (void)attnscope::model::llamaKinArchitectureFromJson(j, "config.json");
    } catch (const attnscope::InputError& e) {
      if (std::strlen(e.what()) > 2000) __builtin_trap();
    }
    (void)attnscope::model::llamaConfigFromJson(j, "config.json");
  } catch (const attnscope::InputError& e) {
    if (std::strlen(e.what()) > 2000) __builtin_trap();
  }
  return 0;
}
