// libFuzzer target: GPT-2's vocab.json and merges.txt (Tokenizer::fromText), the input split at its first NUL
// byte into the two files; a tokenizer that loads then encodes a fixed text. Refusals are InputErrors of bounded
// length; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "attnscope/error.h"
#include "attnscope/model/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string vocab = input.substr(0, nul), merges = nul == std::string::npos ? "" : input.substr(nul + 1);
  try {
    const attnscope::model::Tokenizer t = attnscope::model::Tokenizer::fromText(vocab, merges);
    (void)t.encodeAtMost("Hello, world! 123 \xc3\xa9t\xc3\xa9", 64);
  } catch (const attnscope::InputError& e) {
    if (std::strlen(e.what()) > 2000) __builtin_trap();
  }
  return 0;
}
