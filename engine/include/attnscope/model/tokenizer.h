// The tokenizers of the model families attnscope reads, run exactly as Hugging Face `tokenizers` runs them:
// a tokenizer.json (normalizer, pre-tokenizer, BPE model, added tokens, post-processor, decoder), or GPT-2's
// vocab.json + merges.txt (the same BPE behind GPT-2's ByteLevel pre-tokenizer). Regexes through Oniguruma,
// Unicode normalisation through ICU. Components beyond those listed in docs/models.md are refused, never guessed.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace attnscope::model {

namespace tok {
struct Spec;
}

// GPT-2's pre-tokenizer, `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
// (Oniguruma), over UTF-8 `text` (InputError("text", ...) when it is not valid UTF-8). Returns the pieces as
// byte strings; their concatenation is `text`.
std::vector<std::string> preTokenize(const std::string& text);

// The 256 byte values to the printable code points GPT-2 writes them as (bytes_to_unicode), as UTF-8.
const std::vector<std::string>& byteToUnicode();

class Tokenizer {
 public:
  Tokenizer() = default;
  // GPT-2's files. vocab.json: {"token": id, ...}; merges.txt: an optional "#version" line, then "a b" per
  // line, by rank. Every byte's symbol must be in the vocabulary, every merge's parts and result too. Errors
  // name the file (the given paths) and the line or entry.
  static Tokenizer load(const std::string& vocab_path, const std::string& merges_path);
  static Tokenizer fromText(const std::string& vocab_json, const std::string& merges_text,
                            const std::string& vocab_name = "vocab.json",
                            const std::string& merges_name = "merges.txt");
  // A Hugging Face tokenizer.json: `path` is the file, or a folder holding tokenizer.json (and, when present,
  // tokenizer_config.json, whose add_bos_token / add_eos_token rebuild a Llama-class template as
  // transformers does). Errors name the file and the JSON path: "tok/tokenizer.json: model.merges[3]: ...".
  static Tokenizer loadTokenizerJson(const std::string& path);
  static Tokenizer fromTokenizerJson(const std::string& json_text, const std::string& name = "tokenizer.json",
                                     const std::string& config_text = "",
                                     const std::string& config_name = "tokenizer_config.json");

  // The ids of UTF-8 `text` (InputError("text", ...) when it is not UTF-8). `add_special_tokens`: the
  // post-processor's tokens (a BOS, say), as tokenizer(text) adds them; added tokens in the text are matched
  // either way.
  std::vector<int> encode(const std::string& text, bool add_special_tokens = true) const;
  // As encode, refusing (InputError("text", ...)) a text of more than max_tokens tokens as soon as that is
  // certain: before pre-tokenizing when its bytes exceed max_tokens x the longest token's bytes (no token
  // covers more), then piece by piece. A 60 MB text costs a comparison, not a tokenization.
  std::vector<int> encodeAtMost(const std::string& text, std::size_t max_tokens, bool add_special_tokens = true) const;
  std::size_t longestTokenBytes() const { return longest_token_bytes_; }  // the most bytes one token decodes to
  // The decoder's text for `ids`, special tokens included (bytes; GPT-2's may split a UTF-8 character).
  std::string decode(const std::vector<int>& ids) const;
  std::string piece(int id) const;  // one id's bytes (a byte-fallback token is its byte; '▁' is a space)
  // A label for the window and exports: the piece's bytes, spaces shown as '␣' (U+2423), newlines as '↵'
  // (U+21B5), tabs as '⇥' (U+21E5), bytes that are not whole UTF-8 characters as <0xNN>.
  std::string label(int id) const;
  std::string token(int id) const;  // the vocabulary's own string for `id`
  int vocabSize() const;            // how many ids have a token
  int maxId() const;

 private:
  std::shared_ptr<const tok::Spec> spec_;
  std::size_t longest_token_bytes_ = 0;
  explicit Tokenizer(std::shared_ptr<const tok::Spec> spec);
};

// A label for a byte string (as Tokenizer::label).
std::string tokenLabel(const std::string& bytes);

// The words of a sequence of token labels (tokenLabel's), for a strip of tokens a reader reads as text: a word starts
// at the first token, at a token that starts with a space, newline or tab, and after one that ends with one; where
// no token starts with one (WordPiece, a user's tokens) every token but a "##" continuation starts a word. Its text:
// its tokens' bytes joined (a "##" dropped), so that bytes split across tokens merge into their character
// ("<0xC3>", "<0xA9>" read "\u00e9"), white space trimmed at both ends, any byte not part of a whole character
// U+FFFD; a word of white space alone keeps its first token's label ("\u21B5"), and so does a word of one token that
// reads as nothing printable (a lone byte, a control character: "<0xD7>"). Tokens [first, last], from 0.
struct TokenWord {
  int first = 0, last = 0;
  std::string text;
};
std::vector<TokenWord> tokenWords(const std::vector<std::string>& labels);

}  // namespace attnscope::model
