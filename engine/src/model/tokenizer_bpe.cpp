// The BPE model as `tokenizers`' models/bpe (model.rs merge_word, word.rs merge_all): a word's characters to
// ids (continuing_subword_prefix, end_of_word_suffix, byte_fallback's <0xHH> tokens, unk_token, fuse_unk),
// then merges applied lowest rank first, leftmost first among equal ranks, until none applies.
#include <algorithm>
#include <queue>

#include "model/tokenizer_spec.h"

namespace attnscope::model::tok {

namespace {

struct Symbol {
  int id;
  int prev, next;  // neighbours' indices, -1 at the ends
  bool removed;
};

struct Merge {
  int pos, rank, new_id;
  bool operator<(const Merge& o) const {  // a max-heap: the lowest rank, then the lowest position, on top
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

std::uint64_t pairKey(int a, int b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

}  // namespace

std::uint32_t BpeModel::trieChild(std::uint32_t node, unsigned char byte) const {
  const auto& edges = trie[node].next;
  const auto it =
      std::lower_bound(edges.begin(), edges.end(), byte,
                       [](const std::pair<unsigned char, std::uint32_t>& e, unsigned char b) { return e.first < b; });
  return it != edges.end() && it->first == byte ? it->second : 0;
}

void BpeModel::buildWordPieceTrie() {
  trie.assign(2, TrieNode{});
  const std::string prefix = continuing_subword_prefix ? *continuing_subword_prefix : std::string();
  const auto insert = [&](std::uint32_t node, const std::string& token, std::size_t from, int id) {
    for (std::size_t i = from; i < token.size(); ++i) {
      const auto byte = static_cast<unsigned char>(token[i]);
      std::uint32_t next = trieChild(node, byte);
      if (next == 0) {
        next = static_cast<std::uint32_t>(trie.size());
        trie.emplace_back();
        auto& edges = trie[node].next;
        edges.insert(std::lower_bound(edges.begin(), edges.end(), std::make_pair(byte, std::uint32_t{0})),
                     {byte, next});
      }
      node = next;
    }
    if (from < token.size()) trie[node].id = id;  // the prefix alone is never looked up
  };
  for (const auto& [token, id] : vocab) {
    insert(0, token, 0, id);
    if (token.compare(0, prefix.size(), prefix) == 0) insert(1, token, prefix.size(), id);
  }
}

void BpeModel::tokenize(const std::string& word, std::vector<int>& out) const {
  if (word.empty()) return;
  if (wordpiece) {  // wordpiece/mod.rs tokenize
    std::size_t chars = 0;
    for (std::size_t i = 0; i < word.size(); i += utf8Length(static_cast<unsigned char>(word[i]))) ++chars;
    const std::size_t before = out.size();
    for (std::size_t start = 0; chars <= max_input_chars_per_word && start < word.size();) {
      // The longest piece from `start` in the vocabulary (with the prefix after the first): the last token
      // met walking down the trie that ends at a character's end, as tokenizers' search from the word's end.
      std::uint32_t node = start == 0 ? 0 : 1;
      std::size_t end = start;
      int found = -1;
      for (std::size_t i = start; i < word.size(); ++i) {
        node = trieChild(node, static_cast<unsigned char>(word[i]));
        if (node == 0) break;
        const bool char_end = i + 1 == word.size() || (static_cast<unsigned char>(word[i + 1]) & 0xC0) != 0x80;
        if (trie[node].id >= 0 && char_end) found = trie[node].id, end = i + 1;
      }
      if (found < 0) {  // a part no piece matches: the whole word is unk
        out.resize(before);
        break;
      }
      out.push_back(found);
      start = end;
    }
    if (out.size() == before) out.push_back(*unk_id);  // the reader requires unk_token for WordPiece
    return;
  }
  if (ignore_merges) {
    if (const auto it = vocab.find(word); it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // merge_word: one symbol per character (or per byte through byte_fallback); unknowns become unk_id.
  std::vector<int> ids;
  int pending_unk = -1;  // an unknown not yet written: fuse_unk joins a run of them into one
  std::string s;
  for (std::size_t i = 0; i < word.size();) {
    const std::size_t len = utf8Length(static_cast<unsigned char>(word[i]));
    const bool is_first = i == 0, is_last = i + len >= word.size();
    s.assign(word, i, len);
    if (!is_first && continuing_subword_prefix) s = *continuing_subword_prefix + s;
    if (is_last && end_of_word_suffix) s += *end_of_word_suffix;
    i += len;
    if (const auto it = vocab.find(s); it != vocab.end()) {
      if (pending_unk >= 0) ids.push_back(pending_unk), pending_unk = -1;
      ids.push_back(it->second);
      continue;
    }
    if (byte_fallback) {
      bool all = true;
      for (char c : s) all = all && byte_ids[static_cast<unsigned char>(c)] >= 0;
      if (all) {  // as model.rs: the bytes go in before a pending unk is flushed
        for (char c : s) ids.push_back(byte_ids[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (unk_id) {
      if (pending_unk >= 0 && !fuse_unk) ids.push_back(pending_unk);
      pending_unk = *unk_id;
    }
  }
  if (pending_unk >= 0) ids.push_back(pending_unk);

  // merge_all: a queue of candidate merges; an entry is stale when its pair no longer produces its id.
  std::vector<Symbol> sym(ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k)
    sym[k] = {ids[k], static_cast<int>(k) - 1, k + 1 < ids.size() ? static_cast<int>(k + 1) : -1, false};
  std::priority_queue<Merge> queue;
  for (std::size_t k = 0; k + 1 < ids.size(); ++k)
    if (const auto it = merges.find(pairKey(ids[k], ids[k + 1])); it != merges.end())
      queue.push({static_cast<int>(k), it->second.first, it->second.second});
  while (!queue.empty()) {
    const Merge top = queue.top();
    queue.pop();
    Symbol& cur = sym[static_cast<std::size_t>(top.pos)];
    if (cur.removed || cur.next < 0) continue;
    Symbol& right = sym[static_cast<std::size_t>(cur.next)];
    const auto now = merges.find(pairKey(cur.id, right.id));
    if (now == merges.end() || now->second.second != top.new_id) continue;
    cur.id = top.new_id;
    right.removed = true;
    cur.next = right.next;
    if (right.next >= 0) sym[static_cast<std::size_t>(right.next)].prev = top.pos;
    if (cur.prev >= 0)
      if (const auto it = merges.find(pairKey(sym[static_cast<std::size_t>(cur.prev)].id, cur.id)); it != merges.end())
        queue.push({cur.prev, it->second.first, it->second.second});
    if (cur.next >= 0)
      if (const auto it = merges.find(pairKey(cur.id, sym[static_cast<std::size_t>(cur.next)].id)); it != merges.end())
        queue.push({top.pos, it->second.first, it->second.second});
  }
  for (const Symbol& x : sym)
    if (!x.removed) out.push_back(x.id);
}

}  // namespace attnscope::model::tok
