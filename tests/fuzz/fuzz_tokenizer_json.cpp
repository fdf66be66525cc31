// libFuzzer target: the tokenizer.json reader (Tokenizer::fromTokenizerJson) on any bytes; a file it accepts
// then encodes and decodes a fixed text that touches every stage. Refusals are InputErrors; anything else
// (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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
    // Runs that a heavy regex backtracks over, that a growing normalizer multiplies, that added tokens with a
    // shared prefix nearly match: each is refused or done well within the fuzzer's -timeout.
    static const std::string runs = [] {
      std::string s;
      for (int i = 0; i < 128; ++i) s += "ab";
      return s + std::string(256, 'a') + std::string(128, ' ') + "x\n" + std::string(301, 'a') + "007";
    }();
    (void)t.decode(t.encode(runs, false));
  } catch (const attnscope::InputError&) {
  }
  return 0;
}
