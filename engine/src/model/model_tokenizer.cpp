// The Tokenizer: GPT-2's vocab.json + merges.txt turned into the same pipeline as a tokenizer.json, and that
// pipeline run as tokenizer.rs encode_single_sequence does: added tokens cut out of the raw text, the rest
// normalised (then normalised added tokens cut out), pre-tokenized, each piece through the BPE model, then
// the post-processor. Decoding runs the decoder over the tokens' strings.
#include <unicode/uchar.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/tokenizer.h"
#include "attnscope/text_bounds.h"
#include "model/tokenizer_spec.h"

namespace attnscope::model {

using tok::codePointAt;
using tok::utf8Length;

namespace {

// GPT-2's vocab.json is 1 MB and merges.txt 456 KB; 64 times that is room for any real BPE vocabulary.
constexpr std::size_t kMaxVocabBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxMergesBytes = std::size_t{64} << 20;

// Length of the valid UTF-8 character at s[i], or 0.
std::size_t validCharLength(const std::string& s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  if (len == 2 && b < 0xC2) return 0;  // overlong
  return len;
}

// Rust regex's Unicode \w (Alphabetic, marks, Nd, Pc, Join_Control) and \s (White_Space), for added tokens'
// single_word, lstrip and rstrip.
bool isWordChar(char32_t c) {
  const auto u = static_cast<UChar32>(c);
  const auto t = static_cast<UCharCategory>(u_charType(u));
  return u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || t == U_NON_SPACING_MARK || t == U_COMBINING_SPACING_MARK ||
         t == U_ENCLOSING_MARK || t == U_DECIMAL_DIGIT_NUMBER || t == U_CONNECTOR_PUNCTUATION ||
         u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL);
}
bool isSpace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

std::size_t previousCharStart(const std::string& s, std::size_t i) {  // i > 0
  do --i;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
  return i;
}

struct Segment {
  std::string text;
  int id;  // an added token's id, or -1 for text
  bool at_origin;
};

// added_vocabulary.rs split_with_indices: `sentence` cut around the added tokens `m` finds, honouring
// single_word (no word character on either side), lstrip and rstrip (the white space beside it joins it).
void splitAdded(const tok::Spec& spec, const tok::AddedMatcher& m, const std::string& sentence, bool at_origin,
                std::vector<Segment>& out) {
  std::size_t start_offset = 0, pos = 0;
  const std::size_t n = sentence.size();
  while (!m.patterns.empty() && pos < n) {
    const auto [found, which] = m.find(sentence, pos);
    if (found == std::string::npos) break;
    const tok::AddedToken& t = spec.added[m.token[which]];
    std::size_t start = found, stop = found + m.patterns[which].size();
    pos = stop;
    if (t.single_word) {
      const bool word_before = start > 0 && isWordChar(codePointAt(sentence, previousCharStart(sentence, start)));
      const bool word_after = stop < n && isWordChar(codePointAt(sentence, stop));
      if (word_before || word_after) continue;
    }
    if (t.lstrip) {
      std::size_t s = start;
      while (s > 0 && isSpace(codePointAt(sentence, previousCharStart(sentence, s))))
        s = previousCharStart(sentence, s);
      start = std::max(s, start_offset);
    }
    if (t.rstrip)
      while (stop < n && isSpace(codePointAt(sentence, stop)))
        stop += utf8Length(static_cast<unsigned char>(sentence[stop]));
    if (start > start_offset)
      out.push_back({sentence.substr(start_offset, start - start_offset), -1, at_origin && start_offset == 0});
    out.push_back({sentence.substr(start, stop - start), t.id, false});
    start_offset = stop;
    pos = std::max(pos, stop);
  }
  if (start_offset < n) out.push_back({sentence.substr(start_offset), -1, at_origin && start_offset == 0});
}

void postProcess(const tok::PostProcessor& p, std::vector<int>& ids) {
  switch (p.kind) {
    case tok::PostProcessor::Kind::ByteLevel:
      return;  // offsets only
    case tok::PostProcessor::Kind::Sequence:
      for (const tok::PostProcessor& child : p.children) postProcess(child, ids);
      return;
    case tok::PostProcessor::Kind::TemplateProcessing: {
      std::vector<int> out;
      for (const auto& item : p.single)
        out.insert(out.end(), item.is_sequence ? ids.begin() : item.ids.begin(),
                   item.is_sequence ? ids.end() : item.ids.end());
      ids.swap(out);
      return;
    }
  }
}

}  // namespace

namespace tok {

void AddedMatcher::add(std::string pattern, std::size_t token_index) {
  if (pattern.empty()) return;
  patterns.push_back(std::move(pattern));
  token.push_back(token_index);
}

std::uint32_t AddedMatcher::child(std::uint32_t state, unsigned char byte) const {
  const auto& edges = states_[state].next;
  const auto it =
      std::lower_bound(edges.begin(), edges.end(), byte,
                       [](const std::pair<unsigned char, std::uint32_t>& e, unsigned char b) { return e.first < b; });
  return it != edges.end() && it->first == byte ? it->second : 0;
}

std::uint32_t AddedMatcher::step(std::uint32_t state, unsigned char byte) const {
  for (;;) {
    if (const std::uint32_t next = child(state, byte)) return next;
    if (state == 0) return 0;
    state = states_[state].fail;
  }
}

void AddedMatcher::finish() {
  states_.assign(1, State{});
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    std::uint32_t s = 0;
    for (const char c : patterns[k]) {
      const auto byte = static_cast<unsigned char>(c);
      std::uint32_t next = child(s, byte);
      if (next == 0) {
        next = static_cast<std::uint32_t>(states_.size());
        State fresh;
        fresh.depth = states_[s].depth + 1;
        states_.push_back(std::move(fresh));
        auto& edges = states_[s].next;
        edges.insert(std::lower_bound(edges.begin(), edges.end(), std::make_pair(byte, std::uint32_t{0})),
                     {byte, next});
      }
      s = next;
    }
    if (states_[s].pattern < 0) states_[s].pattern = static_cast<std::int64_t>(k);  // the first of equal ones
  }
  // Failure links breadth first (a state's link is shallower, so it is done before the state).
  std::vector<std::uint32_t> queue{0};
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const std::uint32_t s = queue[q];
    State& here = states_[s];
    here.longest = here.pattern >= 0 ? here.pattern : s == 0 ? -1 : states_[here.fail].longest;
    for (const auto& [byte, next] : states_[s].next) {
      states_[next].fail = s == 0 ? 0 : step(states_[s].fail, byte);
      queue.push_back(next);
    }
  }
}

std::pair<std::size_t, std::size_t> AddedMatcher::find(const std::string& text, std::size_t from) const {
  std::size_t best_begin = std::string::npos, best = 0;
  std::uint32_t s = 0;
  for (std::size_t j = from; j < text.size(); ++j) {
    s = step(s, static_cast<unsigned char>(text[j]));
    // Every match ending from here on starts at or after j + 1 - depth: past the best start, none can win.
    if (best_begin != std::string::npos && j + 1 - states_[s].depth > best_begin) break;
    const std::int64_t k = states_[s].longest;  // the earliest-starting match ending here
    if (k < 0) continue;
    const std::size_t begin = j + 1 - patterns[static_cast<std::size_t>(k)].size();
    if (best_begin == std::string::npos || begin <= best_begin) best_begin = begin, best = static_cast<std::size_t>(k);
  }
  return {best_begin, best};
}

}  // namespace tok

const std::vector<std::string>& byteToUnicode() {
  // bytes_to_unicode(): the printable bytes ! .. ~, ¡ .. ¬, ® .. ÿ stand for themselves; the other 68 bytes
  // take U+0100, U+0101, ... in byte order.
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[static_cast<std::size_t>(b)] = tok::utf8(printable ? static_cast<char32_t>(b) : next++);
    }
    return t;
  }();
  return table;
}

std::string tokenLabel(const std::string& bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const char c = bytes[i];
    if (c == ' ') {
      out += "\u2423";
    } else if (c == '\n') {
      out += "\u21B5";
    } else if (c == '\t') {
      out += "\u21E5";
    } else if (const std::size_t len = validCharLength(bytes, i); len > 0 && static_cast<unsigned char>(c) >= 0x20) {
      out += bytes.substr(i, len);
      i += len;
      continue;
    } else {
      static const char* hex = "0123456789ABCDEF";
      const auto b = static_cast<unsigned char>(c);
      out += std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
    }
    ++i;
  }
  return out;
}

namespace {

// A label's bytes: tokenLabel undone ('\u2423' a space, '\u21B5' a newline, '\u21E5' a tab, <0xNN> the byte).
std::string labelBytes(const std::string& label) {
  std::string out;
  for (std::size_t i = 0; i < label.size();) {
    if (label.compare(i, 3, "\u2423") == 0) {
      out += ' ', i += 3;
    } else if (label.compare(i, 3, "\u21B5") == 0) {
      out += '\n', i += 3;
    } else if (label.compare(i, 3, "\u21E5") == 0) {
      out += '\t', i += 3;
    } else if (i + 6 <= label.size() && label.compare(i, 3, "<0x") == 0 && label[i + 5] == '>' &&
               std::isxdigit(static_cast<unsigned char>(label[i + 3])) &&
               std::isxdigit(static_cast<unsigned char>(label[i + 4]))) {
      out += static_cast<char>(std::stoi(label.substr(i + 3, 2), nullptr, 16)), i += 6;
    } else {
      out += label[i++];
    }
  }
  return out;
}

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\t'; }

// `bytes` as text: whole UTF-8 characters kept, any other byte U+FFFD.
std::string wholeCharacters(const std::string& bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t len = validCharLength(bytes, i);
    if (len > 0) {
      out += bytes.substr(i, len), i += len;
    } else {
      out += "\uFFFD", ++i;
    }
  }
  return out;
}

}  // namespace

std::vector<TokenWord> tokenWords(const std::vector<std::string>& labels) {
  std::vector<std::string> bytes;
  bool any_space = false;  // byte-level and SentencePiece pieces carry their spaces; WordPiece's and users' do not
  for (const std::string& label : labels) {
    bytes.push_back(labelBytes(label));
    any_space = any_space || (!bytes.back().empty() && isSpace(bytes.back().front()));
  }
  std::vector<TokenWord> words;
  std::string joined;  // the current word's bytes
  const auto close = [&](int last) {
    TokenWord& w = words.back();
    w.last = last;
    const std::size_t a = joined.find_first_not_of(" \n\t"), b = joined.find_last_not_of(" \n\t");
    const std::string text = a == std::string::npos ? "" : wholeCharacters(joined.substr(a, b - a + 1));
    // Nothing a reader can read (white space alone; one token of a lone byte or a control character: random
    // tokens, say): the token's label, which names it ("<0xD7>").
    const bool readable = !text.empty() && text.find("\uFFFD") == std::string::npos &&
                          std::none_of(text.begin(), text.end(), [](char c) {
                            return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
                          });
    w.text = readable || (!text.empty() && w.first != last) ? text : labels[static_cast<std::size_t>(w.first)];
  };
  for (std::size_t t = 0; t < labels.size(); ++t) {
    const std::string& b = bytes[t];
    const bool continues = b.rfind("##", 0) == 0;  // WordPiece's continuation
    const bool starts = t == 0 || (!b.empty() && isSpace(b.front())) ||
                        (!bytes[t - 1].empty() && isSpace(bytes[t - 1].back())) || (!any_space && !continues);
    if (starts) {
      if (!words.empty()) close(static_cast<int>(t) - 1);
      words.push_back({static_cast<int>(t), static_cast<int>(t), ""});
      joined.clear();
    }
    joined += continues && !starts ? b.substr(2) : b;
  }
  if (!words.empty()) close(static_cast<int>(labels.size()) - 1);
  return words;
}

Tokenizer Tokenizer::fromText(const std::string& vocab_json, const std::string& merges_text,
                              const std::string& vocab_name, const std::string& merges_name) {
  auto spec = std::make_shared<tok::Spec>();
  tok::BpeModel& model = spec->model;
  const nlohmann::json vocab = parseJsonText(vocab_json, vocab_name);  // depth-bounded, errors quoted
  if (!vocab.is_object() || vocab.empty()) throw InputError(vocab_name, "a JSON object of token: id", describeJson(vocab));
  std::vector<std::string>& by_id = spec->id_to_token;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<long long>() < 0 || it.value().get<long long>() > 10'000'000)
      throw InputError(vocab_name + ": token " + quoteFragment(it.key(), 40), "an id from 0 to 10000000",
                       describeJson(it.value()));
    const int id = it.value().get<int>();
    if (static_cast<std::size_t>(id) >= by_id.size()) by_id.resize(static_cast<std::size_t>(id) + 1);
    if (!by_id[static_cast<std::size_t>(id)].empty())
      throw InputError(vocab_name + ": token " + quoteFragment(it.key(), 40), "an id no other token has",
                       std::to_string(id) + " (also " + quoteFragment(by_id[static_cast<std::size_t>(id)], 40) + ")");
    if (it.key().empty())
      throw InputError(vocab_name, "non-empty tokens", "an empty token with id " + std::to_string(id));
    by_id[static_cast<std::size_t>(id)] = it.key();
    model.vocab.emplace(it.key(), id);
  }
  const std::vector<std::string>& table = byteToUnicode();
  for (int b = 0; b < 256; ++b) {
    const std::string& sym = table[static_cast<std::size_t>(b)];
    if (!model.vocab.count(sym))
      throw InputError(vocab_name, "a token for every byte (GPT-2's byte symbols)",
                       "none for byte " + std::to_string(b) + " (" + quoteFragment(sym) + ")");
  }

  std::istringstream in(merges_text);
  std::string line;
  int line_no = 0, rank = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1 && line.rfind("#version", 0) == 0) continue;
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    const std::string field = merges_name + ": line " + std::to_string(line_no);
    if (space == std::string::npos || space == 0 || space + 1 >= line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw InputError(field, "two symbols separated by one space", quoteFragment(line));
    const std::string a = line.substr(0, space), b = line.substr(space + 1);
    for (const std::string* part : {&a, &b})
      if (!model.vocab.count(*part))
        throw InputError(field, "symbols in " + vocab_name, quoteFragment(*part) + ", which is not");
    const auto merged = model.vocab.find(a + b);
    if (merged == model.vocab.end())
      throw InputError(field, "a merge whose result is in " + vocab_name, quoteFragment(a + b) + ", which is not");
    // A repeated pair takes its last rank, as dict(zip(...)) in encoder.py and the HashMap in tokenizers.
    const std::uint64_t key =
        (static_cast<std::uint64_t>(model.vocab.at(a)) << 32) | static_cast<std::uint32_t>(model.vocab.at(b));
    model.merges[key] = {rank++, merged->second};
  }
  tok::PreTokenizer byte_level;
  byte_level.kind = tok::PreTokenizer::Kind::ByteLevel;
  spec->pre_tokenizer = byte_level;
  tok::Decoder decoder;
  decoder.kind = tok::Decoder::Kind::ByteLevel;
  spec->decoder = decoder;
  tok::finishSpec(*spec);
  return Tokenizer(std::move(spec));
}

Tokenizer Tokenizer::load(const std::string& vocab_path, const std::string& merges_path) {
  return fromText(readWholeFile(vocab_path, vocab_path, kMaxVocabBytes),
                  readWholeFile(merges_path, merges_path, kMaxMergesBytes), vocab_path, merges_path);
}

// A token's vocabulary string is never shorter than the bytes it decodes to (a byte-level symbol is 1 or 2
// UTF-8 bytes a byte, '▁' 3 bytes for a space, <0xHH> 6 for one byte), so the longest string bounds every
// piece without decoding 150k tokens at load.
Tokenizer::Tokenizer(std::shared_ptr<const tok::Spec> spec) : spec_(std::move(spec)) {
  for (const std::string& token : spec_->id_to_token) longest_token_bytes_ = std::max(longest_token_bytes_, token.size());
}

std::vector<int> Tokenizer::encode(const std::string& text, bool add_special_tokens) const {
  return encodeAtMost(text, SIZE_MAX, add_special_tokens);
}

std::vector<int> Tokenizer::encodeAtMost(const std::string& text, std::size_t max_tokens,
                                         bool add_special_tokens) const {
  const bool bounded = max_tokens != SIZE_MAX;
  const std::size_t longest = std::max<std::size_t>(1, longest_token_bytes_);
  const auto refuse = [&](const std::string& found) {
    throw InputError("text", "at most " + std::to_string(max_tokens) + " tokens", found);
  };
  if (bounded && text.size() / longest > max_tokens)
    refuse(std::to_string(text.size()) + " bytes, more than " + std::to_string(max_tokens) + " tokens of at most " +
           std::to_string(longest) + " bytes each");
  tok::checkUtf8(text, "text");
  std::vector<int> ids;
  if (!spec_) return ids;
  const tok::Spec& s = *spec_;
  std::vector<Segment> raw, segments;
  splitAdded(s, s.raw_matcher, text, true, raw);
  for (Segment& seg : raw) {
    if (seg.id >= 0) {
      segments.push_back(std::move(seg));
      continue;
    }
    const std::string normalized = s.normalizer ? tok::normalize(*s.normalizer, seg.text) : seg.text;
    splitAdded(s, s.normalized_matcher, normalized, seg.at_origin, segments);
  }
  std::unordered_map<std::string, std::vector<int>> cache;  // a word's ids, for the words that repeat
  std::vector<tok::Piece> pieces;
  for (const Segment& seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    pieces.assign(1, {seg.text, seg.at_origin});
    if (s.pre_tokenizer) tok::preTokenize(*s.pre_tokenizer, pieces);
    for (const tok::Piece& p : pieces) {
      auto [it, fresh] = cache.try_emplace(p.text);
      if (fresh) s.model.tokenize(p.text, it->second);
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      if (bounded && ids.size() > max_tokens) refuse("more (counted to " + std::to_string(ids.size()) + ", then stopped)");
    }
    if (cache.size() > 200'000) cache.clear();  // bounded memory on text with few repeats
  }
  if (add_special_tokens && s.post_processor) postProcess(*s.post_processor, ids);
  if (bounded && ids.size() > max_tokens) refuse(std::to_string(ids.size()) + " with the special tokens");
  return ids;
}

std::string Tokenizer::token(int id) const {
  if (!spec_ || id < 0 || id > maxId() || spec_->id_to_token[static_cast<std::size_t>(id)].empty())
    throw InputError("token id", "an id in the vocabulary (0 to " + std::to_string(maxId()) + ")", std::to_string(id));
  return spec_->id_to_token[static_cast<std::size_t>(id)];
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int id : ids) tokens.push_back(token(id));
  std::string out;
  if (!spec_ || !spec_->decoder) {  // tokenizers joins the bare tokens with spaces when there is no decoder
    for (std::size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const std::string& t : tok::decodeChain(*spec_->decoder, std::move(tokens), false)) out += t;
  return out;
}

std::string Tokenizer::piece(int id) const {
  std::string t = token(id);
  if (!spec_->decoder) return t;
  std::string out;
  for (const std::string& part : tok::decodeChain(*spec_->decoder, {t}, true)) out += part;
  return out;
}

std::string Tokenizer::label(int id) const { return tokenLabel(piece(id)); }
int Tokenizer::vocabSize() const { return spec_ ? spec_->token_count : 0; }
int Tokenizer::maxId() const { return spec_ ? static_cast<int>(spec_->id_to_token.size()) - 1 : -1; }

}  // namespace attnscope::model
