// libFuzzer target: the .npy / .npz reader (array_file.h: the .npy header and its shape, every product of sizes,
// the zip directory and its zip64 extras, dtypes, the data's bytes against the shape) on any bytes, the first byte
// choosing .npy or .npz. Refusals are InputErrors of bounded length; anything else (a crash, a sanitizer report,
// another exception, an unbounded message) is a finding, and so is an accepted array whose values do not match
// its shape.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "attnscope/arrays/array_file.h"
#include "attnscope/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string path = data[0] & 1 ? "fuzz.npz" : "fuzz.npy";
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    // A 64 MiB budget: the file's bytes and its values (at most 4 bytes of float per stored byte) fit.
    const auto arrays = attnscope::arrays::arraysFromBytes(path, bytes, std::size_t{64} << 20);
    for (const auto& [name, a] : arrays) {
      const std::size_t count = attnscope::arrays::elementCount(name, a.shape);
      if (a.unreadable.empty() ? a.data.size() != count : !a.data.empty()) __builtin_trap();
      try {
        attnscope::arrays::usableValues(name, a);
      } catch (const attnscope::InputError& e) {
        if (std::strlen(e.what()) > 2000) __builtin_trap();
      }
    }
    if (attnscope::arrays::arrayListing(arrays).size() > 4000) __builtin_trap();
  } catch (const attnscope::InputError& e) {
    if (std::strlen(e.what()) > 2000) __builtin_trap();
  }
  return 0;
}
