// GPT-2's byte-level BPE: vocab.json and merges.txt loaded and checked, each pre-tokenized piece mapped byte
// by byte to GPT-2's printable symbols, merged by rank exactly as GPT-2's encoder.py does, and decoded back.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/text_bounds.h"
#include "attnscope/model/tokenizer.h"

namespace attnscope::model {

namespace {

// GPT-2's vocab.json is 1 MB and merges.txt 456 KB; 64 times that is room for any real BPE vocabulary.
constexpr std::size_t kMaxVocabBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxMergesBytes = std::size_t{64} << 20;

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

// Splits a symbol string (UTF-8) into its code points' byte strings.
std::vector<std::string> symbols(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0xF0)
      len = 4;
    else if (b >= 0xE0)
      len = 3;
    else if (b >= 0xC0)
      len = 2;
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

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

}  // namespace

const std::vector<std::string>& byteToUnicode() {
  // bytes_to_unicode(): the printable bytes ! .. ~, ¡ .. ¬, ® .. ÿ stand for themselves; the other 68 bytes
  // take U+0100, U+0101, ... in byte order.
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[static_cast<std::size_t>(b)] = utf8(printable ? static_cast<char32_t>(b) : next++);
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

Tokenizer Tokenizer::fromText(const std::string& vocab_json, const std::string& merges_text,
                              const std::string& vocab_name, const std::string& merges_name) {
  Tokenizer t;
  const nlohmann::json vocab = parseJsonText(vocab_json, vocab_name);
  if (!vocab.is_object() || vocab.empty()) throw InputError(vocab_name, "a JSON object of token: id", describeJson(vocab));
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<long long>() < 0 || it.value().get<long long>() > 10'000'000)
      throw InputError(vocab_name + ": token " + quoteFragment(it.key(), 40), "an id from 0 to 10000000",
                       describeJson(it.value()));
    const int id = it.value().get<int>();
    if (static_cast<std::size_t>(id) >= t.id_to_token_.size()) t.id_to_token_.resize(static_cast<std::size_t>(id) + 1);
    if (!t.id_to_token_[static_cast<std::size_t>(id)].empty())
      throw InputError(vocab_name + ": token " + quoteFragment(it.key(), 40), "an id no other token has",
                       std::to_string(id) + " (also " + quoteFragment(t.id_to_token_[static_cast<std::size_t>(id)], 40) + ")");
    if (it.key().empty())
      throw InputError(vocab_name, "non-empty tokens", "an empty token with id " + std::to_string(id));
    t.id_to_token_[static_cast<std::size_t>(id)] = it.key();
    t.token_to_id_.emplace(it.key(), id);
    t.max_id_ = std::max(t.max_id_, id);
  }
  const std::vector<std::string>& table = byteToUnicode();
  for (int b = 0; b < 256; ++b) {
    const std::string& sym = table[static_cast<std::size_t>(b)];
    if (!t.token_to_id_.count(sym))
      throw InputError(vocab_name, "a token for every byte (GPT-2's byte symbols)",
                       "none for byte " + std::to_string(b) + " (" + quoteFragment(sym) + ")");
    t.unicode_to_byte_.emplace(sym, static_cast<std::uint8_t>(b));
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
      if (!t.token_to_id_.count(*part))
        throw InputError(field, "symbols in " + vocab_name, quoteFragment(*part) + ", which is not");
    if (!t.token_to_id_.count(a + b))
      throw InputError(field, "a merge whose result is in " + vocab_name, quoteFragment(a + b) + ", which is not");
    t.merge_rank_[a + " " + b] = rank++;  // a repeated pair takes its last rank, as dict(zip(...)) in encoder.py
  }
  for (int id = 0; id <= t.max_id_; ++id)
    if (!t.id_to_token_[static_cast<std::size_t>(id)].empty())
      t.longest_token_bytes_ = std::max(t.longest_token_bytes_, t.piece(id).size());
  return t;
}

Tokenizer Tokenizer::load(const std::string& vocab_path, const std::string& merges_path) {
  return fromText(readWholeFile(vocab_path, vocab_path, kMaxVocabBytes),
                  readWholeFile(merges_path, merges_path, kMaxMergesBytes), vocab_path, merges_path);
}

// encoder.py's bpe(): repeatedly merge every occurrence (left to right) of the adjacent pair with the lowest
// rank, until no adjacent pair has a rank.
void Tokenizer::bpe(const std::string& word, std::vector<int>& out) const {
  std::vector<std::string> parts = symbols(word);
  while (parts.size() > 1) {
    int best = INT_MAX;
    std::size_t best_at = 0;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto it = merge_rank_.find(parts[i] + " " + parts[i + 1]);
      if (it != merge_rank_.end() && it->second < best) best = it->second, best_at = i;
    }
    if (best == INT_MAX) break;
    const std::string first = parts[best_at], second = parts[best_at + 1];
    std::vector<std::string> merged;
    merged.reserve(parts.size());
    for (std::size_t i = 0; i < parts.size();) {
      if (i + 1 < parts.size() && parts[i] == first && parts[i + 1] == second) {
        merged.push_back(first + second);
        i += 2;
      } else {
        merged.push_back(parts[i]);
        ++i;
      }
    }
    parts.swap(merged);
  }
  for (const std::string& p : parts) out.push_back(token_to_id_.at(p));  // merges' results are in the vocab
}

std::vector<int> Tokenizer::encode(const std::string& text) const { return encode(text, SIZE_MAX); }

std::vector<int> Tokenizer::encode(const std::string& text, std::size_t max_tokens) const {
  const std::size_t longest = std::max<std::size_t>(1, longest_token_bytes_);
  const auto refuse = [&](const std::string& found) {
    throw InputError("text", "at most " + std::to_string(max_tokens) + " tokens", found);
  };
  if (max_tokens != SIZE_MAX && text.size() / longest > max_tokens)
    refuse(std::to_string(text.size()) + " bytes, more than " + std::to_string(max_tokens) + " tokens of at most " +
           std::to_string(longest) + " bytes each");
  const std::vector<std::string>& table = byteToUnicode();
  std::vector<int> ids;
  for (const std::string& piece : preTokenize(text)) {
    if (max_tokens != SIZE_MAX && ids.size() + (piece.size() + longest - 1) / longest > max_tokens)
      refuse("more (counted to " + std::to_string(ids.size()) + ", then a word of " + std::to_string(piece.size()) +
             " bytes)");
    std::string word;
    for (char c : piece) word += table[static_cast<unsigned char>(c)];
    bpe(word, ids);
    if (ids.size() > max_tokens) refuse("more (counted to " + std::to_string(ids.size()) + ", then stopped)");
  }
  return ids;
}

std::string Tokenizer::piece(int id) const {
  if (id < 0 || id > max_id_ || id_to_token_[static_cast<std::size_t>(id)].empty())
    throw InputError("token id", "an id in the vocabulary (0 to " + std::to_string(max_id_) + ")", std::to_string(id));
  std::string bytes;
  for (const std::string& sym : symbols(id_to_token_[static_cast<std::size_t>(id)])) {
    const auto it = unicode_to_byte_.find(sym);
    // A vocabulary token outside GPT-2's byte alphabet (a user's special token) decodes to its own text.
    if (it == unicode_to_byte_.end())
      bytes += sym;
    else
      bytes += static_cast<char>(it->second);
  }
  return bytes;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) out += piece(id);
  return out;
}

std::string Tokenizer::label(int id) const { return tokenLabel(piece(id)); }

}  // namespace attnscope::model
