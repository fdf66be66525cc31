// The tokenizer.json reader: nlohmann's SAX parser feeding its own DOM builder, except for model.vocab and
// model.merges, which go straight into flat lists (150k entries as JSON values cost more to build and free
// than everything else the loader does). Nesting is capped at 256 levels.
#include "model/tokenizer_reader.h"

#include "attnscope/error.h"
#include "attnscope/json_file.h"

namespace attnscope::model::tok {

namespace {

constexpr std::size_t kMaxDepth = 256;  // tokenizer.json nests about 5 deep

// nlohmann's SAX events: forwarded to its DOM builder, but for the two captured lists.
class CapturingSax {
 public:
  CapturingSax(TokenizerJson& out, const std::string& name) : out_(out), dom_(out.root, true), name_(name) {}

  bool null() { return mode_ == Mode::None ? dom_.null() : capture(json(nullptr)); }
  bool boolean(bool v) { return mode_ == Mode::None ? dom_.boolean(v) : capture(json(v)); }
  bool number_integer(json::number_integer_t v) {
    return mode_ == Mode::None ? dom_.number_integer(v) : capture(json(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return mode_ == Mode::None ? dom_.number_unsigned(v) : capture(json(v));
  }
  bool number_float(json::number_float_t v, const json::string_t& text) {
    return mode_ == Mode::None ? dom_.number_float(v, text) : capture(json(v));
  }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool string(json::string_t& v) {
    if (mode_ == Mode::Merges && nested_ == 0) {
      RawMerge m;
      m.form = RawMerge::Form::Joined;
      m.first = std::move(v);
      out_.merges->push_back(std::move(m));
      return true;
    }
    if (mode_ == Mode::Merges && nested_ == 1 && in_pair_) {
      pair_.push_back(std::move(v));
      return true;
    }
    if (mode_ != Mode::None) return capture(json(v));
    return dom_.string(v);
  }
  bool key(json::string_t& k) {
    if (mode_ == Mode::None) {
      if (depth_ == 1) key1_ = k;
      if (depth_ == 2) key2_ = k;
      return dom_.key(k);
    }
    if (mode_ == Mode::Vocab && nested_ == 0) pending_key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t n) {
    if (mode_ != Mode::None) {
      if (mode_ == Mode::Merges && nested_ == 1) pair_ok_ = false;  // ["a", "b", {...}] is no pair
      return open(json::object());
    }
    enter();
    if (depth_ == 3 && in_model_ && key2_ == "vocab") {
      mode_ = Mode::Vocab;
      out_.vocab.emplace();
      return true;
    }
    if (depth_ == 2) in_model_ = root_is_object_ && key1_ == "model";
    if (depth_ == 1) root_is_object_ = true;
    return dom_.start_object(n);
  }
  bool start_array(std::size_t n) {
    if (mode_ != Mode::None) {
      if (mode_ == Mode::Merges && nested_ == 0) {
        in_pair_ = true;
        pair_ok_ = true;
        pair_.clear();
        ++nested_;
        return true;
      }
      if (mode_ == Mode::Merges && nested_ == 1) pair_ok_ = false;
      return open(json::array());
    }
    enter();
    if (depth_ == 3 && in_model_ && key2_ == "merges") {
      mode_ = Mode::Merges;
      out_.merges.emplace();
      return true;
    }
    if (depth_ == 2) in_model_ = false;
    return dom_.start_array(n);
  }
  bool end_object() { return close(true); }
  bool end_array() { return close(false); }
  bool parse_error(std::size_t position, const std::string& last, const nlohmann::detail::exception& e) {
    return dom_.parse_error(position, last, e);
  }

 private:
  enum class Mode { None, Vocab, Merges };

  void enter() {
    if (++depth_ > kMaxDepth)
      throw InputError(name_, "JSON nested at most " + std::to_string(kMaxDepth) + " deep", "deeper");
  }
  bool capture(json v) {  // a scalar inside a captured list
    if (mode_ == Mode::Vocab && nested_ == 0) {
      out_.vocab->emplace_back(std::move(pending_key_), std::move(v));
    } else if (mode_ == Mode::Merges && nested_ == 0) {
      out_.merges->push_back({RawMerge::Form::Other, {}, {}, std::move(v)});
    } else if (mode_ == Mode::Merges && nested_ == 1 && in_pair_) {
      pair_ok_ = false;
    }
    return true;
  }
  bool open(json placeholder) {  // a container inside a captured list: recorded as empty, its inside skipped
    if (++nested_ + depth_ > kMaxDepth)
      throw InputError(name_, "JSON nested at most " + std::to_string(kMaxDepth) + " deep", "deeper");
    if (nested_ == 1 && mode_ == Mode::Vocab) out_.vocab->emplace_back(std::move(pending_key_), std::move(placeholder));
    if (nested_ == 1 && mode_ == Mode::Merges)
      out_.merges->push_back({RawMerge::Form::Other, {}, {}, std::move(placeholder)});
    return true;
  }
  bool close(bool object) {
    if (mode_ == Mode::None) {
      --depth_;
      if (depth_ == 1) in_model_ = false;
      return object ? dom_.end_object() : dom_.end_array();
    }
    if (nested_ > 0) {
      if (--nested_ == 0 && mode_ == Mode::Merges && in_pair_) {
        RawMerge m;
        if (pair_ok_ && pair_.size() == 2) {
          m.form = RawMerge::Form::Pair;
          m.first = std::move(pair_[0]);
          m.second = std::move(pair_[1]);
        } else {
          m.other = json(pair_);
        }
        out_.merges->push_back(std::move(m));
        in_pair_ = false;
      }
      return true;
    }
    // The captured list ends: the document keeps an empty one in its place.
    const Mode was = mode_;
    mode_ = Mode::None;
    --depth_;
    if (was == Mode::Vocab) return dom_.start_object(0) && dom_.end_object();
    return dom_.start_array(0) && dom_.end_array();
  }

  TokenizerJson& out_;
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& name_;
  std::size_t depth_ = 0, nested_ = 0;
  bool root_is_object_ = false, in_model_ = false, in_pair_ = false, pair_ok_ = false;
  std::string key1_, key2_, pending_key_;
  std::vector<std::string> pair_;
  Mode mode_ = Mode::None;
};

}  // namespace

TokenizerJson readTokenizerJson(const std::string& text, const std::string& name) {
  TokenizerJson out;
  CapturingSax sax(out, name);
  refuseNulBytes(text, name);  // else the text would end at the first NUL
  try {
    json::sax_parse(text, &sax);
  } catch (const json::exception& e) {
    throw InputError(name, "JSON", std::string("a syntax error (") + e.what() + ")");
  }
  return out;
}

json parseSmallJson(const std::string& text, const std::string& name) {
  refuseNulBytes(text, name);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(name, "JSON", std::string("a syntax error (") + e.what() + ")");
  }
}

}  // namespace attnscope::model::tok
