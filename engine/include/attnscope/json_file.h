// The one way the program reads JSON from outside (scenes, config.json, vocab.json, safetensors headers,
// tokenizer.json): the size bounded before reading, the nesting bounded by a linear scan before nlohmann
// recurses, and every error one short line naming the file, the line and column, and a quoted fragment.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attnscope {

// Deeper than any file the program reads needs (a scene is 5 deep, a safetensors header 3), shallow enough
// that nlohmann's recursive parse, copy and dump stay far from the stack's end.
constexpr int kMaxJsonDepth = 64;

// Parses `text`: one value, and only whitespace after it. `name` (a path, "tensor header of x.safetensors") starts every error:
//   NAME: expected JSON nested at most 64 deep, got deeper nesting at line 1, column 65
//   NAME: expected valid JSON, got a syntax error at line 3, column 7: ... - invalid literal, near '…'
//   NAME: expected finite numbers, got '1e999' at line 2, column 10 (too large for a double)
// Throws InputError; never lets a nlohmann exception (whose text may quote megabytes) escape.
nlohmann::json parseJsonText(std::string_view text, const std::string& name, int max_depth = kMaxJsonDepth);

// nlohmann's lexer reads a NUL byte as the end of the text, so "{...}\0garbage" would parse as the value alone:
// every parse of outside text calls this first. A NUL is never valid JSON (inside a string it must be \u0000).
// InputError(name, "one JSON value and nothing after it but whitespace", "a NUL byte at line L, column C ...").
void refuseNulBytes(std::string_view text, const std::string& name);

// Reads `path` (at most `max_bytes`, see readWholeFile) and parses it; errors name the path.
nlohmann::json readJsonFile(const std::string& path, std::size_t max_bytes, int max_depth = kMaxJsonDepth);

// A JSON value in an error message: a scalar quoted (bounded), a container by its kind and size
// ("an array of 3 items"), never dumped whole.
std::string describeJson(const nlohmann::json& value);

// Line and column (from 1) of byte `offset` of `text`: "line 3, column 7".
std::string lineColumn(std::string_view text, std::size_t offset);

}  // namespace attnscope
