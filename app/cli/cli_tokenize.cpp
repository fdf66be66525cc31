// attnscope tokenize: a tokenizer (a Hugging Face tokenizer.json, or GPT-2's vocab.json + merges.txt) on the
// user's text, as JSON: the ids, each token's label (as the heatmap's axes show it) and the decoded text.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/model/tokenizer.h"
#include "cli/cli.h"

namespace attnscope::cli {

namespace {

constexpr const char* kTokenizeHelp =
    "usage: attnscope tokenize DIR_OR_FILE (--text TEXT | --text-file FILE) [--no-special] [-o OUT.json]\n"
    "  DIR_OR_FILE   a tokenizer.json, or a folder holding one (with tokenizer_config.json when present), or\n"
    "                a GPT-2 folder holding vocab.json and merges.txt\n"
    "  --text        the text to tokenize (UTF-8); --text-file reads it from a file\n"
    "  --no-special  leave out the post-processor's special tokens (a BOS, say); added tokens written in the\n"
    "                text are matched either way\n"
    "  -o            write the JSON there instead of standard output\n"
    "prints {\"ids\": [...], \"tokens\": [labels: a space as U+2423, newline U+21B5, tab U+21E5, partial bytes\n"
    "<0xF0>], \"text\": the decoder's text for the ids}\n";

model::Tokenizer loadTokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec) && !fs::exists(fs::path(path) / "tokenizer.json", ec) &&
      fs::exists(fs::path(path) / "vocab.json", ec) && fs::exists(fs::path(path) / "merges.txt", ec))
    return model::Tokenizer::load((fs::path(path) / "vocab.json").string(), (fs::path(path) / "merges.txt").string());
  if (!fs::exists(path, ec)) throw InputError(path, "a tokenizer.json or a folder holding one", "nothing there");
  return model::Tokenizer::loadTokenizerJson(path);
}

}  // namespace

int runTokenize(Args& args) {
  if (args.takeFlag("--help") || args.takeFlag("-h")) {
    std::fputs(kTokenizeHelp, stdout);
    return 0;
  }
  std::optional<std::string> text = args.take("--text");
  const std::optional<std::string> text_file = args.take("--text-file");
  const bool no_special = args.takeFlag("--no-special");
  const std::optional<std::string> out = args.take("--out", "-o");
  const std::vector<std::string> paths = args.positionals(1);
  if (paths.empty()) throw InputError("tokenize", "a tokenizer: attnscope tokenize DIR_OR_FILE --text ...", "none");
  if (text && text_file) throw InputError("--text", "either --text or --text-file", "both");
  if (text_file) text = readWholeFile(*text_file, "--text-file");
  if (!text) throw InputError("--text", "the text to tokenize", "nothing (see attnscope tokenize --help)");

  const model::Tokenizer tokenizer = loadTokenizer(paths[0]);
  const std::vector<int> ids = tokenizer.encode(*text, !no_special);
  nlohmann::json result = {{"ids", ids}, {"tokens", nlohmann::json::array()}, {"text", tokenizer.decode(ids)}};
  for (int id : ids) result["tokens"].push_back(tokenizer.label(id));
  // A decoded text may end inside a UTF-8 character (GPT-2's byte tokens): shown as U+FFFD, never refused.
  writeOutput(result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", out);
  return 0;
}

}  // namespace attnscope::cli
