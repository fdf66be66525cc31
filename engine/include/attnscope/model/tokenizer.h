// GPT-2's byte-level BPE tokenizer: the pre-tokenizer regex done by hand over code points, the byte-to-unicode
// map, merges applied by rank, and decoding back to bytes. Loads a user's vocab.json and merges.txt unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnscope::model {

// GPT-2's pre-tokenizer, `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
// over the code points of UTF-8 `text` (InputError("text", ...) when it is not valid UTF-8). Returns the
// pieces as byte strings; their concatenation is `text`.
std::vector<std::string> preTokenize(const std::string& text);

// The 256 byte values to the printable code points GPT-2 writes them as (bytes_to_unicode), as UTF-8.
const std::vector<std::string>& byteToUnicode();

class Tokenizer {
 public:
  Tokenizer() = default;
  // vocab.json: {"token": id, ...}; merges.txt: an optional "#version" line, then "a b" per line, by rank.
  // Every byte's symbol must be in the vocabulary, every merge's parts and result too. Errors name the file
  // (the given paths) and the line or entry.
  static Tokenizer load(const std::string& vocab_path, const std::string& merges_path);
  static Tokenizer fromText(const std::string& vocab_json, const std::string& merges_text,
                            const std::string& vocab_name = "vocab.json",
                            const std::string& merges_name = "merges.txt");

  std::vector<int> encode(const std::string& text) const;
  // As encode, refusing (InputError("text", ...)) a text of more than max_tokens tokens as soon as that is
  // certain: before pre-tokenizing when its bytes exceed max_tokens x the longest token's bytes (no token
  // covers more), then word by word. A 60 MB text costs a comparison, not a tokenization.
  std::vector<int> encode(const std::string& text, std::size_t max_tokens) const;
  std::size_t longestTokenBytes() const { return longest_token_bytes_; }
  std::string decode(const std::vector<int>& ids) const;  // bytes (may split a UTF-8 character between ids)
  std::string piece(int id) const;                        // one id's bytes
  // A label for the window and exports: the piece's bytes, spaces shown as '␣' (U+2423), newlines as '↵'
  // (U+21B5), tabs as '⇥' (U+21E5), bytes that are not whole UTF-8 characters as <0xNN>.
  std::string label(int id) const;
  int vocabSize() const { return static_cast<int>(id_to_token_.size()); }
  int maxId() const { return max_id_; }

 private:
  void bpe(const std::string& word, std::vector<int>& out) const;  // word: the byte-mapped UTF-8 symbols
  std::unordered_map<std::string, int> token_to_id_;
  std::vector<std::string> id_to_token_;             // indexed by id (empty where unused)
  std::unordered_map<std::string, int> merge_rank_;  // "a b" -> rank
  std::unordered_map<std::string, std::uint8_t> unicode_to_byte_;
  int max_id_ = -1;
  std::size_t longest_token_bytes_ = 0;  // the most bytes one token's piece decodes to
};

// A label for a byte string (as Tokenizer::label).
std::string tokenLabel(const std::string& bytes);

}  // namespace attnscope::model
