// libFuzzer target: the safetensors header reader (length, JSON through parseJsonText, dtypes, shapes, offsets,
// overlaps) on any bytes. Refusals are InputErrors of bounded length; anything else (a crash, a sanitizer report,
// another exception, an unbounded message) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "attnscope/error.h"
#include "attnscope/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    std::size_t start = 0;
    const auto tensors = attnscope::model::parseSafetensorsHeader("fuzz.safetensors", data, size, size, &start);
    for (const auto& [name, info] : tensors)  // what was accepted must lie inside the input
      if (start + info.end > size || info.begin > info.end) __builtin_trap();
  } catch (const attnscope::InputError& e) {
    if (std::strlen(e.what()) > 2000) __builtin_trap();
  }
  return 0;
}
