// The inside of a Tokenizer: every Hugging Face `tokenizers` component attnscope runs, as plain data that
// tokenizer_json.cpp fills and tokenizer_{normalize,pretokenize,bpe,decode}.cpp run. Private to the engine.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnscope::model::tok {

// An Oniguruma regex (UTF-8, the default syntax: what `tokenizers` compiles through the onig crate).
class Regex {
 public:
  Regex() = default;
  // Throws InputError(field, ...) when Oniguruma refuses the pattern.
  Regex(const std::string& pattern, const std::string& field);
  // Every match in `text` as [begin, end) byte offsets, searched over the whole text (look-arounds see it
  // all), empty matches handled as the onig crate's find_iter does.
  std::vector<std::pair<std::size_t, std::size_t>> findAll(const std::string& text) const;
  bool valid() const { return impl_ != nullptr; }

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// A `{"String": s}` or `{"Regex": r}` pattern, as Split, Replace (normalizer and decoder) use it.
struct Pattern {
  std::string literal;  // String: matched literally (non-empty)
  Regex regex;          // Regex, when valid()
  // The text cut into its matches and the gaps between them, in order: [begin, end, is_match], as
  // `tokenizers`' Pattern::find_matches (an empty text is one empty gap).
  struct Piece {
    std::size_t begin, end;
    bool is_match;
  };
  std::vector<Piece> findMatches(const std::string& text) const;
};

struct Normalizer {
  enum class Kind { NFC, NFKC, NFD, NFKD, Prepend, Replace, Bert, Sequence } kind = Kind::Sequence;
  // BertNormalizer (normalizers/bert.rs), in its order: clean_text drops NUL, U+FFFD and control characters (Cc,
  // Cf, Cn, Co, Cs but tab, LF, CR) and writes white space as ' '; handle_chinese_chars puts spaces around CJK
  // ideographs; strip_accents (null in the file: as lowercase) NFD and drops Mn; lowercase, character by character.
  bool clean_text = true, handle_chinese_chars = true, strip_accents = true, lowercase = true;
  std::string text;   // Prepend: what is prepended; Replace: the replacement
  Pattern pattern;    // Replace
  std::string where;  // "tokenizer.json: normalizer.normalizers[1]", for a refusal
  std::vector<Normalizer> children;
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
enum class PrependScheme { Always, First, Never };

struct PreTokenizer {
  // Bert: BertPreTokenizer, split at white space (removed) and at punctuation (isolated, one character each).
  enum class Kind { ByteLevel, Split, Metaspace, Digits, Bert, Sequence } kind = Kind::Sequence;
  bool add_prefix_space = false, use_regex = true;  // ByteLevel
  Pattern pattern;                                  // Split
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  std::string replacement = "\u2581";  // Metaspace (one character)
  PrependScheme prepend_scheme = PrependScheme::Always;
  bool split = true;
  bool individual_digits = false;  // Digits
  std::vector<PreTokenizer> children;
};

// One piece of text on its way to the model; `at_origin` when it starts at byte 0 of the user's text
// (Metaspace's prepend_scheme "first").
struct Piece {
  std::string text;
  bool at_origin = false;
};

struct BpeModel {
  std::unordered_map<std::string, int> vocab;
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<std::uint64_t, std::pair<int, int>> merges;
  std::optional<int> unk_id;
  bool byte_fallback = false, fuse_unk = false, ignore_merges = false;
  std::optional<std::string> continuing_subword_prefix, end_of_word_suffix;
  std::array<int, 256> byte_ids{};  // <0xHH> ids for byte_fallback, -1 where absent
  // model.type WordPiece (wordpiece/mod.rs): a word of more than max_input_chars_per_word characters is unk;
  // otherwise longest-match-first, pieces after the first with continuing_subword_prefix ("##"); a word with a
  // part no piece matches is unk as a whole. The vocab and unk_id as BPE's; no merges.
  bool wordpiece = false;
  std::size_t max_input_chars_per_word = 100;
  // WordPiece's vocabulary as a byte trie with two roots: every token is spelled from node 0, the tokens that
  // start with continuing_subword_prefix are spelled without it from node 1. The longest match from a position
  // is one walk down it, which stops where no token goes on: a word costs O(bytes x the longest token), never a
  // lookup of each candidate end (a 1 MB token made that O(bytes x its length squared)).
  struct TrieNode {
    std::vector<std::pair<unsigned char, std::uint32_t>> next;  // sorted by byte
    int id = -1;
  };
  std::vector<TrieNode> trie;
  void buildWordPieceTrie();
  std::uint32_t trieChild(std::uint32_t node, unsigned char byte) const;  // 0 where none (no node points to a root)

  // One pre-tokenized word's ids, appended to `out` (model.rs tokenize: ignore_merges, merge_word, merge_all).
  void tokenize(const std::string& word, std::vector<int>& out) const;
};

// The longest token a WordPiece vocabulary may hold: the longest-match search walks up to this many bytes from
// each piece's start, so 1 MB of text costs at most 256 M steps. Real vocabularies stay far below (BERT's
// longest entries are about 20 bytes; multilingual ones under 100).
constexpr std::size_t kMaxWordPieceTokenBytes = 256;

struct AddedToken {
  int id = 0;
  std::string content;
  bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = false;
};

struct PostProcessor {
  enum class Kind { TemplateProcessing, ByteLevel, Sequence } kind = Kind::Sequence;
  // TemplateProcessing's `single`: each item is the sequence (empty ids) or a special token's ids.
  struct Item {
    bool is_sequence = false;
    std::vector<int> ids;
  };
  std::vector<Item> single;
  std::vector<PostProcessor> children;
};

struct Decoder {
  // WordPiece (decoders/wordpiece.rs): tokens after the first lose `content` (the prefix, "##") or gain a space;
  // with `cleanup`, " ." " ?" " !" " ," " ' " " n't" " 'm" " do not" " 's" " 've" " 're" are tidied.
  enum class Kind { ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, WordPiece, Sequence };
  Kind kind = Kind::Sequence;
  bool cleanup = true;  // WordPiece
  std::string replacement = "\u2581";  // Metaspace
  PrependScheme prepend_scheme = PrependScheme::Always;
  Pattern pattern;  // Replace
  std::string content;
  std::string where;             // "tokenizer.json: decoder.decoders[2]", for a refusal
  std::string strip_char = " ";  // Strip: one character, `start` and `stop` of them at most
  std::size_t start = 0, stop = 0;
  std::vector<Decoder> children;
};

// Added tokens found in text leftmost-longest, as the Aho-Corasick automaton of added_vocabulary.rs: at the
// first position where any matches, the longest (the first added of equal ones). `patterns[k]` is what
// added[token[k]] is matched as. An Aho-Corasick automaton over the patterns' bytes finds each match in time
// linear in the bytes it scans: to the match's end, and past it only while a longer match may still start
// there (model_tokenizer.cpp).
struct AddedMatcher {
  std::vector<std::string> patterns;
  std::vector<std::size_t> token;
  void add(std::string pattern, std::size_t token_index);
  void finish();  // builds the automaton: after the last add
  // The leftmost-longest match starting at or after `from`: {begin, pattern index}; begin == npos for none.
  std::pair<std::size_t, std::size_t> find(const std::string& text, std::size_t from) const;

 private:
  // A trie node of the patterns' bytes: its edges (sorted by byte), its failure link (the node of the
  // longest proper suffix of its string that is in the trie), its depth, and the longest pattern that is a
  // suffix of its string (-1: none).
  struct State {
    std::vector<std::pair<unsigned char, std::uint32_t>> next;
    std::uint32_t fail = 0, depth = 0;
    std::int64_t pattern = -1, longest = -1;
  };
  std::vector<State> states_;
  std::uint32_t child(std::uint32_t state, unsigned char byte) const;  // 0 (the root) where none
  std::uint32_t step(std::uint32_t state, unsigned char byte) const;   // the goto function, through failures
};

struct Spec {
  std::optional<Normalizer> normalizer;
  std::optional<PreTokenizer> pre_tokenizer;
  BpeModel model;
  std::vector<AddedToken> added;  // as listed
  std::optional<PostProcessor> post_processor;
  std::optional<Decoder> decoder;
  std::vector<std::string> id_to_token;          // model vocab, then added tokens over it; empty where unused
  int token_count = 0;                           // ids with a token
  AddedMatcher raw_matcher, normalized_matcher;  // added tokens with normalized false / true
};

// Fills id_to_token, token_count and the matchers from model.vocab and added (tokenizer_json.cpp).
void finishSpec(Spec& spec);

// [SECTION] the stages (one file each)
// The most normalization may grow a text: NFKC writes U+FDFA (3 bytes) as 33, Llama's Replace writes a space
// (1 byte) as '▁' (3); the slack covers a Prepend on a short text.
constexpr std::size_t kMaxNormalizedGrowth = 32;
constexpr std::size_t kNormalizedSlack = 4096;
// What a text of `origin` bytes may grow to in normalization or decoding: kMaxNormalizedGrowth x origin +
// kNormalizedSlack, and at most a quarter of the memory budget (the text, its pieces, copies downstream).
std::size_t growthLimit(std::size_t origin);
// InputError naming `where` ("tokenizer.json: decoder.decoders[0] (Replace)") past growthLimit(origin).
void checkGrowth(const std::string& where, std::size_t origin, std::size_t bytes);
// A Replace's text, its size counted from the pieces before anything is written.
std::size_t replacedSize(const std::vector<Pattern::Piece>& pieces, const std::string& content);
std::string replacePieces(const std::string& text, const std::vector<Pattern::Piece>& pieces,
                          const std::string& content);
// InputError naming n.where when the text would grow past growthLimit(its size), checked before each
// component writes its text.
std::string normalize(const Normalizer& n, const std::string& text);    // tokenizer_normalize.cpp
void preTokenize(const PreTokenizer& p, std::vector<Piece>& pieces);    // tokenizer_pretokenize.cpp
std::vector<std::string> splitByteLevelRegex(const std::string& text);  // GPT-2's regex, Isolated
std::string byteLevelMap(const std::string& text);                      // bytes -> GPT-2 symbols
// Decoders over token strings (decoders' decode_chain). `alone`: one token's bytes for its label (no Strip,
// no first-token rule, byte-fallback and byte-level bytes kept raw).
std::vector<std::string> decodeChain(const Decoder& d, std::vector<std::string> tokens,
                                     bool alone);  // tokenizer_decode.cpp

// The longest run of combining marks (non-starters: canonical combining class not 0, each character counted
// as its NFKD decomposition) a Unicode normalization (NFC, NFKC, NFD, NFKD, BertNormalizer's strip_accents)
// accepts. ICU puts a run in canonical order by insertion, which costs the square of its length: a million
// marks of alternating classes took minutes. Unicode's Stream-Safe Text Format (UAX #15) caps a run at 30;
// real text stays far below (Vietnamese stacks 2, Tibetan a handful). 2 MB of runs of 256 alternating marks
// took 0.19 s through NFC, check included.
constexpr std::size_t kMaxCombiningRun = 256;
// InputError naming `where` at the first run longer than kMaxCombiningRun (tokenizer_normalize.cpp).
void checkCombiningRuns(const std::string& text, const std::string& where);

// UTF-8 helpers (tokenizer_normalize.cpp).
std::size_t utf8Length(unsigned char lead);  // 1..4 for a lead byte of valid UTF-8
std::string utf8(char32_t c);
char32_t codePointAt(const std::string& s, std::size_t i);  // the character at byte i (valid UTF-8)
void checkUtf8(const std::string& text, const std::string& field);

}  // namespace attnscope::model::tok
