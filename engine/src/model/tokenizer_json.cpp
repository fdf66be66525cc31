// Reads a Hugging Face tokenizer.json (and tokenizer_config.json beside it) into a tok::Spec, checking every
// field it uses: a component outside the supported list, a wrong type, a merge naming an absent token, an id
// out of range or given twice is refused with one line naming the file and the JSON path.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/model/tokenizer.h"
#include "model/tokenizer_reader.h"
#include "model/tokenizer_spec.h"

namespace attnscope::model {

using nlohmann::json;

namespace tok {

namespace {

constexpr long long kMaxId = 10'000'000;

std::string shown(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return std::string(j.type_name()) + " " + s;
}

// A JSON value and where it is, for messages: "tok/tokenizer.json: model.merges[3]: expected ..., got ...".
// The path is spelled out only when a message needs it (a large vocabulary has 150k entries).
struct Node {
  const json& j;
  const Node* parent;    // null at the top
  std::string_view key;  // a member's name (empty for an array element)
  std::size_t index;     // an array element's index
  const std::string& file;
  bool quoted = false;  // a vocabulary entry: ['token']

  std::string path() const {
    if (!parent) return "";
    std::string p = parent->path();
    if (quoted) return p + "['" + std::string(key.substr(0, 40)) + "']";
    if (key.empty()) return p + "[" + std::to_string(index) + "]";
    return p.empty() ? std::string(key) : p + "." + std::string(key);
  }
  [[noreturn]] void fail(const std::string& expected, const std::string& got) const {
    const std::string p = path();
    throw InputError(file + ": " + (p.empty() ? "(top level)" : p), expected, got);
  }
  [[noreturn]] void fail(const std::string& expected) const { fail(expected, shown(j)); }
  Node at(std::string_view name) const {
    static const json null_value;
    if (!j.is_object()) fail("an object");
    const auto it = j.find(name);
    return {it == j.end() ? null_value : *it, this, name, 0, file};
  }
  Node at(std::size_t i) const { return {j[i], this, {}, i, file}; }
  bool null() const { return j.is_null(); }
  bool has(const std::string& name) const { return j.is_object() && j.contains(name); }
  std::string str() const {
    if (!j.is_string()) fail("a string");
    return j.get<std::string>();
  }
  std::string oneChar() const {
    const std::string s = str();
    if (s.empty() || utf8Length(static_cast<unsigned char>(s[0])) != s.size()) fail("one character");
    return s;
  }
  bool boolean(bool fallback) const {
    if (j.is_null()) return fallback;
    if (!j.is_boolean()) fail("true or false");
    return j.get<bool>();
  }
  long long integer(long long min, long long max) const {
    if (!j.is_number_integer() || j.get<long long>() < min || j.get<long long>() > max)
      fail("an integer from " + std::to_string(min) + " to " + std::to_string(max));
    return j.get<long long>();
  }
  std::size_t size() const {
    if (!j.is_array()) fail("an array");
    return j.size();
  }
  std::string type(const std::vector<std::string>& known, const std::string& what) const {
    const Node t = at("type");
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    if (!t.j.is_string()) t.fail(what + " type, one of " + list);
    const std::string name = t.str();
    if (std::find(known.begin(), known.end(), name) == known.end())
      t.fail(what + " type, one of " + list, "'" + name + "' (not supported)");
    return name;
  }
};

Pattern pattern(const Node& n) {
  Pattern p;
  if (n.has("String")) {
    p.literal = n.at("String").str();
    if (p.literal.empty()) n.at("String").fail("a non-empty string", "\"\"");
  } else if (n.has("Regex")) {
    const Node r = n.at("Regex");
    p.regex = Regex(r.str(), r.file + ": " + r.path());
  } else {
    n.fail("{\"String\": ...} or {\"Regex\": ...}");
  }
  return p;
}

PrependScheme prependScheme(const Node& n) {
  const Node scheme = n.at("prepend_scheme");
  const Node legacy = n.at("add_prefix_space");  // before prepend_scheme existed
  if (scheme.null()) return legacy.boolean(true) ? PrependScheme::Always : PrependScheme::Never;
  const std::string s = scheme.str();
  if (s == "always") return PrependScheme::Always;
  if (s == "first") return PrependScheme::First;
  if (s == "never") return PrependScheme::Never;
  scheme.fail("always, first or never");
}

Normalizer normalizer(const Node& n) {
  Normalizer out;
  out.where = n.file + ": " + n.path();
  const std::string type =
      n.type({"NFC", "NFKC", "NFD", "NFKD", "Prepend", "Replace", "BertNormalizer", "Sequence"}, "a normalizer");
  if (type == "NFC") out.kind = Normalizer::Kind::NFC;
  if (type == "NFKC") out.kind = Normalizer::Kind::NFKC;
  if (type == "NFD") out.kind = Normalizer::Kind::NFD;
  if (type == "NFKD") out.kind = Normalizer::Kind::NFKD;
  if (type == "Prepend") out.kind = Normalizer::Kind::Prepend, out.text = n.at("prepend").str();
  if (type == "Replace")
    out.kind = Normalizer::Kind::Replace, out.pattern = pattern(n.at("pattern")), out.text = n.at("content").str();
  if (type == "BertNormalizer") {  // bert.rs's defaults; strip_accents null follows lowercase
    out.kind = Normalizer::Kind::Bert;
    out.clean_text = n.at("clean_text").boolean(true);
    out.handle_chinese_chars = n.at("handle_chinese_chars").boolean(true);
    out.lowercase = n.at("lowercase").boolean(true);
    out.strip_accents = n.at("strip_accents").boolean(out.lowercase);
  }
  if (type == "Sequence") {
    const Node list = n.at("normalizers");
    for (std::size_t i = 0; i < list.size(); ++i) out.children.push_back(normalizer(list.at(i)));
  }
  return out;
}

PreTokenizer preTokenizer(const Node& n) {
  PreTokenizer out;
  const std::string type =
      n.type({"ByteLevel", "Split", "Metaspace", "Digits", "BertPreTokenizer", "Sequence"}, "a pre-tokenizer");
  if (type == "BertPreTokenizer") {
    out.kind = PreTokenizer::Kind::Bert;
  } else if (type == "ByteLevel") {
    out.kind = PreTokenizer::Kind::ByteLevel;
    out.add_prefix_space = n.at("add_prefix_space").boolean(true);
    out.use_regex = n.at("use_regex").boolean(true);
  } else if (type == "Split") {
    out.kind = PreTokenizer::Kind::Split;
    out.pattern = pattern(n.at("pattern"));
    const Node b = n.at("behavior");
    const std::string behavior = b.str();
    const std::vector<std::pair<std::string, SplitBehavior>> names = {
        {"Removed", SplitBehavior::Removed},
        {"Isolated", SplitBehavior::Isolated},
        {"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
        {"MergedWithNext", SplitBehavior::MergedWithNext},
        {"Contiguous", SplitBehavior::Contiguous}};
    const auto it = std::find_if(names.begin(), names.end(), [&](const auto& p) { return p.first == behavior; });
    if (it == names.end()) b.fail("Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
    out.behavior = it->second;
    out.invert = n.at("invert").boolean(false);
  } else if (type == "Metaspace") {
    out.kind = PreTokenizer::Kind::Metaspace;
    out.replacement = n.at("replacement").oneChar();
    out.prepend_scheme = prependScheme(n);
    out.split = n.at("split").boolean(true);
  } else if (type == "Digits") {
    out.kind = PreTokenizer::Kind::Digits;
    out.individual_digits = n.at("individual_digits").boolean(false);
  } else {
    const Node list = n.at("pretokenizers");
    for (std::size_t i = 0; i < list.size(); ++i) out.children.push_back(preTokenizer(list.at(i)));
  }
  return out;
}

Decoder decoder(const Node& n) {
  Decoder out;
  out.where = n.file + ": " + n.path();
  const std::string type =
      n.type({"ByteLevel", "Metaspace", "Replace", "ByteFallback", "Fuse", "Strip", "WordPiece", "Sequence"},
             "a decoder");
  if (type == "ByteLevel") out.kind = Decoder::Kind::ByteLevel;
  if (type == "WordPiece") {
    out.kind = Decoder::Kind::WordPiece;
    out.content = n.at("prefix").null() ? "##" : n.at("prefix").str();
    out.cleanup = n.at("cleanup").boolean(true);
  }
  if (type == "ByteFallback") out.kind = Decoder::Kind::ByteFallback;
  if (type == "Fuse") out.kind = Decoder::Kind::Fuse;
  if (type == "Metaspace") {
    out.kind = Decoder::Kind::Metaspace;
    out.replacement = n.at("replacement").oneChar();
    out.prepend_scheme = prependScheme(n);
  }
  if (type == "Replace")
    out.kind = Decoder::Kind::Replace, out.pattern = pattern(n.at("pattern")), out.content = n.at("content").str();
  if (type == "Strip") {
    out.kind = Decoder::Kind::Strip;
    out.strip_char = n.at("content").oneChar();
    out.start = static_cast<std::size_t>(n.at("start").integer(0, 1'000'000));
    out.stop = static_cast<std::size_t>(n.at("stop").integer(0, 1'000'000));
  }
  if (type == "Sequence") {
    const Node list = n.at("decoders");
    for (std::size_t i = 0; i < list.size(); ++i) out.children.push_back(decoder(list.at(i)));
  }
  return out;
}

int knownId(const Node& id, const Spec& spec) {
  const long long v = id.integer(0, kMaxId);
  if (v >= static_cast<long long>(spec.id_to_token.size()) || spec.id_to_token[static_cast<std::size_t>(v)].empty())
    id.fail("an id with a token (model.vocab or added_tokens)");
  return static_cast<int>(v);
}

// TemplateProcessing's special_tokens: each entry {"id": name, "ids": [...], "tokens": [...]} checked whether
// a template uses it or not (tokenizers refuses ids and tokens of different lengths), each id in the vocabulary.
std::unordered_map<std::string, std::vector<int>> specialTokens(const Node& specials, const Spec& spec) {
  if (!specials.j.is_object()) specials.fail("an object of special tokens");
  std::unordered_map<std::string, std::vector<int>> out;
  for (auto it = specials.j.begin(); it != specials.j.end(); ++it) {
    const Node entry{it.value(), &specials, it.key(), 0, specials.file, true};
    const Node ids = entry.at("ids"), tokens = entry.at("tokens");
    const std::string shown_name = "'" + it.key().substr(0, 40) + "'";
    if (ids.size() != tokens.size())
      tokens.fail(std::to_string(ids.size()) + " tokens, one for each of ids", std::to_string(tokens.size()));
    std::vector<int>& list = out[it.key()];
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const Node id = ids.at(i);
      const long long v = id.integer(0, kMaxId);
      if (v >= static_cast<long long>(spec.id_to_token.size()) || spec.id_to_token[static_cast<std::size_t>(v)].empty())
        id.fail("an id with a token (model.vocab or added_tokens)",
                std::to_string(v) + " for " + shown_name + ", which has no token");
      list.push_back(static_cast<int>(v));
    }
  }
  return out;
}

// A template (`single` or `pair`): its items, each a sequence ($A, and $B in `pair`) or a special token that
// special_tokens lists. Every Node is a named local: a Node's path reads its parents, so none may be a
// temporary that is gone before a message is written.
std::vector<PostProcessor::Item> templateItems(const Node& list, bool pair,
                                               const std::unordered_map<std::string, std::vector<int>>& specials) {
  std::vector<PostProcessor::Item> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Node item = list.at(i);
    PostProcessor::Item piece;
    if (item.has("Sequence")) {
      const Node sequence = item.at("Sequence");
      const Node id = sequence.at("id");
      const std::string name = id.str();
      if (pair ? name != "A" && name != "B" : name != "A")
        id.fail(pair ? "\"A\" or \"B\"" : "\"A\" (the one sequence of `single`)", "'" + name.substr(0, 40) + "'");
      piece.is_sequence = true;
    } else if (item.has("SpecialToken")) {
      const Node special = item.at("SpecialToken");
      const Node id = special.at("id");
      const std::string name = id.str();
      const auto found = specials.find(name);
      if (found == specials.end())
        id.fail("a token named in special_tokens", "'" + name.substr(0, 40) + "', which is not");
      piece.ids = found->second;
    } else {
      item.fail("{\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
    out.push_back(std::move(piece));
  }
  return out;
}

PostProcessor postProcessor(const Node& n, const Spec& spec) {
  PostProcessor out;
  const std::string type =
      n.type({"TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel", "Sequence"}, "a post-processor");
  if (type == "ByteLevel") out.kind = PostProcessor::Kind::ByteLevel;
  if (type == "BertProcessing" || type == "RobertaProcessing") {  // cls $A sep: {"cls": ["<s>", 0], "sep": [...]}
    out.kind = PostProcessor::Kind::TemplateProcessing;  // the same one-sequence template
    const auto special = [&](const char* key) {
      const Node pair = n.at(key);
      if (pair.size() != 2) pair.fail("[token, id]");
      const Node id = pair.at(1);
      return PostProcessor::Item{false, {knownId(id, spec)}};
    };
    out.single = {special("cls"), {true, {}}, special("sep")};
  }
  if (type == "Sequence") {
    const Node list = n.at("processors");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Node child = list.at(i);
      out.children.push_back(postProcessor(child, spec));
    }
  }
  if (type == "TemplateProcessing") {
    out.kind = PostProcessor::Kind::TemplateProcessing;
    const Node single = n.at("single"), pair = n.at("pair"), special_tokens = n.at("special_tokens");
    const auto specials = specialTokens(special_tokens, spec);
    out.single = templateItems(single, false, specials);
    if (!pair.null()) templateItems(pair, true, specials);  // checked as tokenizers does; attnscope encodes one
  }
  return out;
}

void bpeModel(const Node& n, TokenizerJson& parsed, Spec& spec) {
  if (n.j.is_object() && !n.has("type") && !n.has("merges")) n.fail("a BPE model");
  const bool wordpiece = n.has("type") && n.type({"BPE", "WordPiece"}, "a model") == "WordPiece";
  BpeModel& m = spec.model;
  const Node vocab = n.at("vocab");
  if (!parsed.vocab) {  // not read as a flat list: not an object (or not where the reader looks)
    if (!vocab.j.is_object()) vocab.fail("an object of token: id");
    parsed.vocab.emplace();
    for (auto it = vocab.j.begin(); it != vocab.j.end(); ++it) parsed.vocab->emplace_back(it.key(), it.value());
  }
  std::vector<std::string>& by_id = spec.id_to_token;
  m.vocab.reserve(parsed.vocab->size());
  for (auto& [token, value] : *parsed.vocab) {
    const Node entry{value, &vocab, token, 0, n.file, true};
    const auto id = static_cast<std::size_t>(entry.integer(0, kMaxId));
    if (id >= by_id.size()) by_id.resize(id + 1);
    if (!by_id[id].empty())
      entry.fail("an id no other token has", std::to_string(id) + " (also '" + by_id[id].substr(0, 40) + "')");
    if (token.empty()) entry.fail("a non-empty token", "\"\"");
    if (!m.vocab.emplace(token, static_cast<int>(id)).second) entry.fail("a token listed once", "it again");
    by_id[id] = std::move(token);
  }
  parsed.vocab.reset();
  const auto idOf = [&](const Node& where, const std::string& token) {
    const auto it = m.vocab.find(token);
    if (it == m.vocab.end()) where.fail("tokens in model.vocab", "'" + token.substr(0, 40) + "', which is not");
    return it->second;
  };
  const Node optional_prefix = n.at("continuing_subword_prefix"), optional_suffix = n.at("end_of_word_suffix");
  if (!optional_prefix.null()) m.continuing_subword_prefix = optional_prefix.str();
  if (!optional_suffix.null()) m.end_of_word_suffix = optional_suffix.str();
  const std::size_t prefix_len = m.continuing_subword_prefix ? m.continuing_subword_prefix->size() : 0;
  const Node merges = n.at("merges");
  if (!parsed.merges && !merges.null()) {
    parsed.merges.emplace();
    for (std::size_t i = 0; i < merges.size(); ++i) {
      const json& v = merges.j[i];
      if (v.is_string())
        parsed.merges->push_back({RawMerge::Form::Joined, v.get<std::string>(), {}, {}});
      else if (v.is_array() && v.size() == 2 && v[0].is_string() && v[1].is_string())
        parsed.merges->push_back({RawMerge::Form::Pair, v[0].get<std::string>(), v[1].get<std::string>(), {}});
      else
        parsed.merges->push_back({RawMerge::Form::Other, {}, {}, v});
    }
  }
  if (parsed.merges) {
    m.merges.reserve(parsed.merges->size());
    std::string a, b;
    for (std::size_t i = 0; i < parsed.merges->size(); ++i) {
      RawMerge& raw = (*parsed.merges)[i];
      // Where a message points (the value built only when one is written).
      const auto fail = [&](const std::string& expected, const std::optional<std::string>& got = std::nullopt) {
        const json shown_value = raw.form == RawMerge::Form::Joined ? json(raw.first) : raw.other;
        const Node merge{shown_value, &merges, {}, i, n.file};
        if (got) merge.fail(expected, *got);
        merge.fail(expected);
      };
      if (raw.form == RawMerge::Form::Joined) {  // "a b": exactly one space
        const std::size_t space = raw.first.find(' ');
        if (space == std::string::npos || raw.first.find(' ', space + 1) != std::string::npos)
          fail("\"a b\" (two tokens, one space)");
        a.assign(raw.first, 0, space);
        b.assign(raw.first, space + 1);
      } else if (raw.form == RawMerge::Form::Pair) {
        a.swap(raw.first);
        b.swap(raw.second);
      } else {
        fail("\"a b\" or [\"a\", \"b\"]");
      }
      const auto idOrFail = [&](const std::string& token) {
        const auto it = m.vocab.find(token);
        if (it == m.vocab.end()) fail("tokens in model.vocab", "'" + token.substr(0, 40) + "', which is not");
        return it->second;
      };
      const int ia = idOrFail(a), ib = idOrFail(b);
      // model.rs: the merged token is a + b without b's continuing_subword_prefix (its length, as tokenizers cuts it).
      a.append(b, std::min(prefix_len, b.size()));
      const std::uint64_t key = (static_cast<std::uint64_t>(ia) << 32) | static_cast<std::uint32_t>(ib);
      m.merges[key] = {static_cast<int>(i), idOrFail(a)};
    }
    parsed.merges.reset();
  }
  const Node dropout = n.at("dropout");
  if (!dropout.null() && !(dropout.j.is_number() && dropout.j.get<double>() == 0.0))
    dropout.fail("null or 0 (dropout makes encoding random)");
  const Node unk = n.at("unk_token");
  if (!unk.null()) m.unk_id = idOf(unk, unk.str());
  if (wordpiece) {  // wordpiece/mod.rs: unk_token "[UNK]", "##", 100 characters by default
    m.wordpiece = true;
    if (unk.null()) m.unk_id = idOf(unk, "[UNK]");
    if (optional_prefix.null()) m.continuing_subword_prefix = "##";
    const Node max_chars = n.at("max_input_chars_per_word");
    m.max_input_chars_per_word = max_chars.null() ? 100 : static_cast<std::size_t>(max_chars.integer(0, 1LL << 40));
    for (const auto& entry : m.vocab)
      if (entry.first.size() > kMaxWordPieceTokenBytes) {
        const Node token{vocab.j, &vocab, entry.first, 0, n.file, true};
        token.fail("WordPiece tokens of at most " + std::to_string(kMaxWordPieceTokenBytes) +
                       " bytes (the longest-match search walks that far from each piece)",
                   std::to_string(entry.first.size()) + " bytes");
      }
    m.buildWordPieceTrie();
  }
  m.byte_fallback = n.at("byte_fallback").boolean(false);
  m.fuse_unk = n.at("fuse_unk").boolean(false);
  m.ignore_merges = n.at("ignore_merges").boolean(false);
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const auto it = m.vocab.find(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    m.byte_ids[static_cast<std::size_t>(b)] = it == m.vocab.end() ? -1 : it->second;
  }
}

void addedTokens(const Node& n, Spec& spec) {
  if (n.null()) return;
  std::unordered_map<int, std::string> seen;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const Node t = n.at(i);
    AddedToken a;
    a.id = static_cast<int>(t.at("id").integer(0, kMaxId));
    a.content = t.at("content").str();
    if (a.content.empty()) t.at("content").fail("a non-empty string", "\"\"");
    a.special = t.at("special").boolean(false);
    a.single_word = t.at("single_word").boolean(false);
    a.lstrip = t.at("lstrip").boolean(false);
    a.rstrip = t.at("rstrip").boolean(false);
    a.normalized = t.at("normalized").boolean(!a.special);
    if (const auto it = seen.find(a.id); it != seen.end() && it->second != a.content)
      t.at("id").fail("an id no other added token has",
                      std::to_string(a.id) + " (also '" + it->second.substr(0, 40) + "')");
    seen[a.id] = a.content;
    spec.added.push_back(std::move(a));
  }
}

// transformers' LlamaTokenizerFast (and its kin) rebuild the template from add_bos_token / add_eos_token.
void applyConfig(const Node& config, Spec& spec) {
  if (!config.j.is_object()) config.fail("an object");
  const Node cls = config.at("tokenizer_class");
  std::string name = cls.null() ? "" : cls.str();
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Fast") == 0) name.resize(name.size() - 4);
  if (name != "LlamaTokenizer" && name != "CodeLlamaTokenizer" && name != "GemmaTokenizer") return;
  const Node add_bos = config.at("add_bos_token"), add_eos = config.at("add_eos_token");
  if (add_bos.null() && add_eos.null()) return;
  PostProcessor p;
  p.kind = PostProcessor::Kind::TemplateProcessing;
  const auto special = [&](const char* key) {
    const Node t = config.at(key);
    const std::string content = t.j.is_object() ? t.at("content").str() : t.str();
    for (const AddedToken& a : spec.added)
      if (a.content == content) return a.id;
    if (const auto it = spec.model.vocab.find(content); it != spec.model.vocab.end()) return it->second;
    t.fail("a token of the vocabulary", "'" + content + "'");
  };
  if (add_bos.boolean(true)) p.single.push_back({false, {special("bos_token")}});
  p.single.push_back({true, {}});
  if (add_eos.boolean(false)) p.single.push_back({false, {special("eos_token")}});
  spec.post_processor = p;
}

}  // namespace

void finishSpec(Spec& spec) {
  for (std::size_t k = 0; k < spec.added.size(); ++k) {
    const AddedToken& a = spec.added[k];
    if (static_cast<std::size_t>(a.id) >= spec.id_to_token.size())
      spec.id_to_token.resize(static_cast<std::size_t>(a.id) + 1);
    spec.id_to_token[static_cast<std::size_t>(a.id)] = a.content;
    // added_vocabulary.rs: normalized tokens are matched as the normalizer writes them.
    if (a.normalized)
      spec.normalized_matcher.add(spec.normalizer ? normalize(*spec.normalizer, a.content) : a.content, k);
    else
      spec.raw_matcher.add(a.content, k);
  }
  spec.raw_matcher.finish();
  spec.normalized_matcher.finish();
  spec.token_count = static_cast<int>(
      std::count_if(spec.id_to_token.begin(), spec.id_to_token.end(), [](const std::string& t) { return !t.empty(); }));
}

}  // namespace tok

Tokenizer Tokenizer::fromTokenizerJson(const std::string& json_text, const std::string& name,
                                       const std::string& config_text, const std::string& config_name) {
  tok::TokenizerJson parsed = tok::readTokenizerJson(json_text, name);
  const json& root = parsed.root;
  const tok::Node top{root, nullptr, {}, 0, name};
  if (!root.is_object()) top.fail("an object");
  auto spec = std::make_shared<tok::Spec>();
  for (const char* unused : {"truncation", "padding"})
    if (!top.at(unused).null()) top.at(unused).fail("null (attnscope encodes the whole text, unpadded)");
  if (!top.at("normalizer").null()) spec->normalizer = tok::normalizer(top.at("normalizer"));
  if (!top.at("pre_tokenizer").null()) spec->pre_tokenizer = tok::preTokenizer(top.at("pre_tokenizer"));
  if (top.at("model").null()) top.at("model").fail("the model");
  tok::bpeModel(top.at("model"), parsed, *spec);
  tok::addedTokens(top.at("added_tokens"), *spec);
  tok::finishSpec(*spec);
  if (!top.at("post_processor").null()) spec->post_processor = tok::postProcessor(top.at("post_processor"), *spec);
  if (!top.at("decoder").null()) spec->decoder = tok::decoder(top.at("decoder"));
  if (!config_text.empty()) {
    const json config = tok::parseSmallJson(config_text, config_name);
    tok::applyConfig({config, nullptr, {}, 0, config_name}, *spec);
  }
  return Tokenizer(std::move(spec));
}

Tokenizer Tokenizer::loadTokenizerJson(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  const std::string file = is_dir ? (fs::path(path) / "tokenizer.json").string() : path;
  const std::string config = (fs::path(file).parent_path() / "tokenizer_config.json").string();
  const std::string config_text = fs::exists(config, ec) ? readWholeFile(config, config) : "";
  return fromTokenizerJson(readWholeFile(file, file), file, config_text, config);
}

}  // namespace attnscope::model
