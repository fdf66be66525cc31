// Writing output files so that a failure never leaves half a file: write a temporary beside the target, then
// rename it over the target.
#pragma once

#include <string>

namespace attnscope {

// Writes `bytes` to `path` atomically. Throws InputError("output path", ...) naming the path and the reason.
void writeFileAtomically(const std::string& path, const std::string& bytes);

// Reads a whole file. Throws InputError(field, ...) naming the path and the reason.
std::string readWholeFile(const std::string& path, const std::string& field);

}  // namespace attnscope
