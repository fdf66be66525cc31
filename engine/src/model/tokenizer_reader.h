// Reading a tokenizer.json's text: the one place it becomes JSON (tokenizer_reader.cpp), with model.vocab and
// model.merges taken from the parser's events into flat lists. Private to the engine.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnscope::model::tok {

using nlohmann::json;

// A tokenizer.json as parsed: the document, except model.vocab and model.merges (when they are an object and an
// array), which are read straight into flat lists: 150k vocabulary entries and merges as nested JSON values
// cost more to build and to free than everything else the loader does.
struct RawMerge {
  enum class Form { Joined, Pair, Other } form = Form::Other;
  std::string first, second;  // Joined: "a b" in first; Pair: a, b
  json other;                 // Other: the value (nested containers only sketched), for the message
};
struct TokenizerJson {
  json root;
  std::optional<std::vector<std::pair<std::string, json>>> vocab;
  std::optional<std::vector<RawMerge>> merges;
};

// tokenizer.json's text (InputError(name, ...) for a syntax error or nesting past 256). A bounded reader, if
// one replaces this, must keep the two flat lists or the loader slows by about a half.
TokenizerJson readTokenizerJson(const std::string& text, const std::string& name);
// A small JSON file (tokenizer_config.json) as a plain value.
json parseSmallJson(const std::string& text, const std::string& name);

}  // namespace attnscope::model::tok
