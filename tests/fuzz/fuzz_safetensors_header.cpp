// libFuzzer target: the safetensors header reader (length, JSON, dtypes, shapes, offsets, overlaps) on any
// bytes. Refusals are InputErrors; anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>

#include "attnscope/error.h"
#include "attnscope/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    std::size_t start = 0;
    const auto tensors = attnscope::model::parseSafetensorsHeader("fuzz.safetensors", data, size, size, &start);
    for (const auto& [name, info] : tensors)  // what was accepted must lie inside the input
      if (start + info.end > size || info.begin > info.end) __builtin_trap();
  } catch (const attnscope::InputError&) {
  }
  return 0;
}
