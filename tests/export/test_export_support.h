// Shared by the export tests: a small scene whose weights are worked out by hand, decoders for the exported
// formats (PNG through stb_image, NPY and CSV by hand), and temporary folders.
#pragma once

#include <stb/stb_image.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "attnscope/export/colormap.h"
#include "attnscope/scene/scene.h"

namespace attnscope::testing {

// 3 tokens (with a comma, quotes and markup in them, for the CSV and SVG escapes), d_model 2, two heads of
// d_k = d_v = 1, causal mask, no W_O. Inputs x0 = (1, 0), x1 = (0, 1), x2 = (1, 1).
// Head 1: W_Q = 0, so every score is 0 and each row is uniform over the keys it may see:
//   [[1, 0, 0], [1/2, 1/2, 0], [1/3, 1/3, 1/3]].
// Head 2: W_Q = (1, 0)^T, W_K = (ln 3, 0)^T, scale 1: q = (1, 0, 1), k = (ln 3, 0, ln 3), score_ij = q_i k_j.
//   row 0: [1]; row 1: q = 0 -> [1/2, 1/2]; row 2: exp(ln 3, 0, ln 3) = (3, 1, 3) / 7.
inline Scene handScene() {
  Scene s;
  s.d_model = 2;
  s.query_tokens = {"a,b", "say \"hi\"", "<tag>&"};
  s.query.resize(3, 2);
  s.query << 1, 0, 0, 1, 1, 1;
  HeadParams h1, h2;
  h1.w_q = Matrix::Zero(2, 1);
  h1.w_k = Matrix::Ones(2, 1);
  h1.w_v = Matrix::Ones(2, 1);
  h2.w_q.resize(2, 1);
  h2.w_q << 1, 0;
  h2.w_k.resize(2, 1);
  h2.w_k << static_cast<float>(std::log(3.0)), 0;
  h2.w_v = Matrix::Ones(2, 1);
  s.heads = {h1, h2};
  s.mask = MaskKind::Causal;
  return s;
}

// The hand-worked weights above: kHandWeights[head][query][key].
inline const double kHandWeights[2][3][3] = {{{1, 0, 0}, {0.5, 0.5, 0}, {1.0 / 3, 1.0 / 3, 1.0 / 3}},
                                             {{1, 0, 0}, {0.5, 0.5, 0}, {3.0 / 7, 1.0 / 7, 3.0 / 7}}};

// Cosine of the two flattened maps: dot = 1 + 1/4 + 1/4 + (1/3)(3/7 + 1/7 + 3/7) = 11/6;
// |h1|^2 = 1 + 1/2 + 1/3 = 11/6; |h2|^2 = 1 + 1/2 + 19/49 = 185/98. cos = sqrt((11/6) / (185/98)).
inline double handCosine() { return std::sqrt((11.0 / 6.0) / (185.0 / 98.0)); }

struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
  Rgb8 at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

inline Image decodePng(const std::string& bytes) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load_from_memory(reinterpret_cast<const unsigned char*>(bytes.data()),
                                              static_cast<int>(bytes.size()), &img.width, &img.height, &channels, 3);
  if (!data) return img;
  img.rgb.assign(data, data + static_cast<std::size_t>(img.width) * img.height * 3);
  stbi_image_free(data);
  return img;
}

// A fresh empty folder under the system's temporary folder, removed with the object.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "attnscope-export-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path)) names.push_back(e.path().filename().string());
    return names;
  }
};

// RFC 4180 records (CRLF or LF line ends, quoted fields with doubled quotes).
inline std::vector<std::vector<std::string>> parseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field), field.clear();
      rows.emplace_back();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty()) rows.back().push_back(field);
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// A decoded NPY file: the header dict text, and the float32 payload.
struct Npy {
  int major = 0, minor = 0;
  std::size_t header_len = 0;
  std::string dict;
  std::vector<float> values;
};

inline Npy decodeNpy(const std::string& bytes) {
  Npy n;
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return n;
  n.major = static_cast<unsigned char>(bytes[6]);
  n.minor = static_cast<unsigned char>(bytes[7]);
  n.header_len =
      static_cast<unsigned char>(bytes[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
  n.dict = bytes.substr(10, n.header_len);
  const std::size_t data = 10 + n.header_len;
  n.values.resize((bytes.size() - data) / 4);
  for (std::size_t i = 0; i < n.values.size(); ++i) {
    // Little-endian float32, assembled byte by byte (independent of the writer's memcpy).
    std::uint32_t u = 0;
    for (int b = 0; b < 4; ++b)
      u |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[data + 4 * i + b])) << (8 * b);
    float f;
    std::memcpy(&f, &u, 4);
    n.values[i] = f;
  }
  return n;
}

}  // namespace attnscope::testing
