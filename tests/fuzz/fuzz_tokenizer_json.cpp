// libFuzzer target: the tokenizer.json reader (Tokenizer::fromTokenizerJson) on any bytes; a file it accepts
// then encodes and decodes a fixed text that touches every stage. Refusals are InputErrors; anything else
// (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnscope/error.h"
#include "attnscope/model/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const attnscope::model::Tokenizer t = attnscope::model::Tokenizer::fromTokenizerJson(text);
    for (const bool special : {true, false}) {
      const std::vector<int> ids =
          t.encode("Hello  world! It's 42\r\n\t<s> <|endoftext|> caf\u00e9 \u2581x \U0001F44B\U0001F3FD", special);
      (void)t.decode(ids);
      for (int id : ids) (void)t.label(id);
    }
  } catch (const attnscope::InputError&) {
  }
  return 0;
}
