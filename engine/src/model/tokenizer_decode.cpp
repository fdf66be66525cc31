// Decoders (ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence) as `tokenizers`' decoders/:
// each turns the list of token strings into another list; decode() joins the last one.
#include <unordered_map>

#include "attnscope/model/tokenizer.h"
#include "model/tokenizer_spec.h"

namespace attnscope::model::tok {

namespace {

const std::unordered_map<char32_t, unsigned char>& charToByte() {
  static const std::unordered_map<char32_t, unsigned char> table = [] {
    std::unordered_map<char32_t, unsigned char> t;
    const std::vector<std::string>& b2u = byteToUnicode();
    for (int b = 0; b < 256; ++b)
      t.emplace(codePointAt(b2u[static_cast<std::size_t>(b)], 0), static_cast<unsigned char>(b));
    return t;
  }();
  return table;
}

// "<0xHH>" -> the byte, as byte_fallback.rs reads it (6 characters, two hex digits).
int fallbackByte(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  int v = 0;
  for (std::size_t k = 3; k < 5; ++k) {
    const char c = token[k];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

bool validUtf8(const std::string& s) {
  try {
    checkUtf8(s, "");
    return true;
  } catch (...) {
    return false;
  }
}

// Every `from` in s replaced by `to`, left to right (Rust's str::replace).
std::string replaceAll(const std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size())
    out.append(s, at, hit - at).append(to);
  return out.append(s, at, std::string::npos);
}

// decoders/wordpiece.rs cleanup: the spaces before punctuation and English contractions taken back.
std::string wordPieceCleanup(std::string s) {
  static const char* const kPairs[][2] = {{" .", "."},     {" ?", "?"},     {" !", "!"},          {" ,", ","},
                                          {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"},        {" do not", " don't"},
                                          {" 's", "'s"},   {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& p : kPairs) s = replaceAll(s, p[0], p[1]);
  return s;
}

}  // namespace

std::vector<std::string> decodeChain(const Decoder& d, std::vector<std::string> tokens, bool alone) {
  switch (d.kind) {
    case Decoder::Kind::Sequence:
      for (const Decoder& child : d.children) tokens = decodeChain(child, std::move(tokens), alone);
      return tokens;
    case Decoder::Kind::ByteLevel: {
      // Each token's characters mapped back to bytes; a token with any character outside the map is kept
      // as its own bytes. All of it becomes one string.
      std::string bytes;
      const auto& table = charToByte();
      for (const std::string& t : tokens) {
        std::string mapped;
        bool all = true;
        for (std::size_t i = 0; i < t.size() && all; i += utf8Length(static_cast<unsigned char>(t[i]))) {
          const auto it = table.find(codePointAt(t, i));
          if (it == table.end())
            all = false;
          else
            mapped += static_cast<char>(it->second);
        }
        bytes += all ? mapped : t;
      }
      return {bytes};
    }
    case Decoder::Kind::Metaspace:
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        std::string out;
        const std::string& t = tokens[i];
        const bool drop = i == 0 && !alone && d.prepend_scheme != PrependScheme::Never;
        for (std::size_t at = 0; at < t.size();) {
          if (t.compare(at, d.replacement.size(), d.replacement) == 0) {
            if (!drop) out += ' ';
            at += d.replacement.size();
          } else {
            out += t[at++];
          }
        }
        tokens[i] = out;
      }
      return tokens;
    case Decoder::Kind::Replace: {
      // Counted before anything is written: every match of every token becomes `content`.
      std::size_t in = 0, out = 0;
      std::vector<std::vector<Pattern::Piece>> pieces;
      for (const std::string& t : tokens) {
        in += t.size();
        pieces.push_back(d.pattern.findMatches(t));
        const std::size_t add = replacedSize(pieces.back(), d.content);
        out = add > SIZE_MAX - out ? SIZE_MAX : out + add;
      }
      checkGrowth(d.where + " (Replace)", in, out);
      for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = replacePieces(tokens[i], pieces[i], d.content);
      return tokens;
    }
    case Decoder::Kind::ByteFallback: {
      std::vector<std::string> out;
      std::string pending;
      const auto flush = [&] {
        if (pending.empty()) return;
        if (alone || validUtf8(pending))
          out.push_back(pending);
        else
          for (std::size_t k = 0; k < pending.size(); ++k) out.push_back("\uFFFD");
        pending.clear();
      };
      for (std::string& t : tokens) {
        const int b = fallbackByte(t);
        if (b >= 0) {
          pending += static_cast<char>(b);
        } else {
          flush();
          out.push_back(std::move(t));
        }
      }
      flush();
      return out;
    }
    case Decoder::Kind::WordPiece:  // a token after the first: its prefix taken off, or a space before it
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        std::string& t = tokens[i];
        if (i > 0) t = t.compare(0, d.content.size(), d.content) == 0 ? t.substr(d.content.size()) : " " + t;
        if (d.cleanup) t = wordPieceCleanup(std::move(t));
      }
      return tokens;
    case Decoder::Kind::Fuse: {
      std::string all;
      for (const std::string& t : tokens) all += t;
      return {all};
    }
    case Decoder::Kind::Strip:
      if (alone) return tokens;
      for (std::string& t : tokens) {
        const std::size_t w = d.strip_char.size();
        std::size_t begin = 0, end = t.size();
        for (std::size_t k = 0; k < d.start && begin + w <= end && t.compare(begin, w, d.strip_char) == 0; ++k)
          begin += w;
        for (std::size_t k = 0; k < d.stop && end >= begin + w && t.compare(end - w, w, d.strip_char) == 0; ++k)
          end -= w;
        t = t.substr(begin, end - begin);
      }
      return tokens;
  }
  return tokens;
}

}  // namespace attnscope::model::tok
