// Scene files: JSON -> Scene (every malformed value named by its JSON path), Scene -> JSON that loads back
// bit for bit, the built-in worked example, and the Result as JSON (`attnscope compute`).
#include "attnscope/scene/scene_json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/text_bounds.h"

namespace attnscope {

// assets/scenes/worked_example.json, embedded at build time (generated/worked_example_json.cpp).
extern const char kWorkedExampleJson[];

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// "string \"abc\"", "array [1,2]": what a wrong value was, short enough for a one-line message. A long string is
// elided before it is dumped, a large container described by its size: never a dump of megabytes.
std::string describe(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_structured() && v.size() > 8) return describeJson(v);
  const json shown = v.is_string() ? json(elideLabel(v.get_ref<const std::string&>(), 40)) : v;
  std::string text = elideLabel(shown.dump(-1, ' ', false, json::error_handler_t::replace), 40);
  return std::string(v.type_name()) + " " + text;
}

std::string at(const std::string& path, std::size_t index) { return path + "[" + std::to_string(index) + "]"; }

// A JSON number as float32. Files may hold float64; a value float32 cannot hold (1e39) is refused.
float parseFloat(const json& v, const std::string& path) {
  if (!v.is_number()) throw InputError(path, "a number", describe(v));
  const double d = v.get<double>();
  const float f = static_cast<float>(d);
  if (!std::isfinite(d) || !std::isfinite(f))  // JSON text cannot hold inf or NaN, but a json built in code can
    throw InputError(path, "a finite number within float32 range (magnitude below 3.4e38)",
                     std::isnan(d)   ? "nan"
                     : std::isinf(d) ? (d > 0 ? "inf" : "-inf")
                                     : v.dump());
  return f;
}

std::uint8_t parseFlag(const json& v, const std::string& path) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_number_integer() && (v.get<std::int64_t>() == 0 || v.get<std::int64_t>() == 1))
    return static_cast<std::uint8_t>(v.get<std::int64_t>());
  throw InputError(path, "0 or 1 (or false/true)", describe(v));
}

// A matrix as a list of rows (lists). want_cols >= 0 demands that width of every row; otherwise every row
// must be as long as row 0. M is Matrix or MaskMatrix; parse turns one JSON value into one entry.
template <typename M, typename Parse>
M parseRows(const json& v, const std::string& path, long want_cols, Parse parse) {
  if (!v.is_array()) throw InputError(path, "a list of rows (each a list of numbers)", describe(v));
  const long rows = static_cast<long>(v.size());
  const bool fixed = want_cols >= 0;
  long cols = want_cols;
  if (!fixed) cols = rows > 0 && v[0].is_array() ? static_cast<long>(v[0].size()) : 0;
  M m(rows, cols);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& row = v[i];
    const std::string row_path = at(path, i);
    const std::string width = std::to_string(cols) + " numbers" + (fixed || i == 0 ? "" : " (as in row 0)");
    if (!row.is_array()) throw InputError(row_path, "a row of " + width, describe(row));
    if (static_cast<long>(row.size()) != cols) throw InputError(row_path, width, std::to_string(row.size()));
    for (std::size_t j = 0; j < row.size(); ++j)
      m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = parse(row[j], at(row_path, j));
  }
  return m;
}

Matrix parseMatrix(const json& v, const std::string& path, long want_cols = -1) {
  return parseRows<Matrix>(v, path, want_cols, parseFloat);
}

RowVector parseVector(const json& v, const std::string& path) {
  if (!v.is_array()) throw InputError(path, "a list of numbers", describe(v));
  RowVector b(static_cast<Eigen::Index>(v.size()));
  for (std::size_t i = 0; i < v.size(); ++i) b[static_cast<Eigen::Index>(i)] = parseFloat(v[i], at(path, i));
  return b;
}

std::vector<std::string> parseTokens(const json& v, const std::string& path) {
  if (!v.is_array()) throw InputError(path, "a list of strings", describe(v));
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) throw InputError(at(path, i), "a string", describe(v[i]));
    tokens.push_back(v[i].get<std::string>());
  }
  return tokens;
}

// Every key of `object` must be in `allowed`; `path` prefixes the key in the message ("heads[1].").
void checkKeys(const json& object, const std::string& path, const std::vector<std::string>& allowed) {
  for (const auto& item : object.items()) {
    bool known = false;
    for (const std::string& a : allowed) known = known || a == item.key();
    if (known) continue;
    std::string listed;
    for (const std::string& a : allowed) listed += (listed.empty() ? "" : ", ") + a;
    throw InputError(path + elideLabel(item.key(), 60), "one of the keys " + listed, "an unknown key");
  }
}

const json& required(const json& object, const std::string& key, const std::string& path, const std::string& expected) {
  const auto it = object.find(key);
  if (it == object.end()) throw InputError(path + key, expected, "nothing (the key is missing)");
  return *it;
}

const std::vector<std::string> kSceneKeys = {"format",     "version", "description", "d_model",     "query_tokens",
                                             "key_tokens", "query",   "key",         "value",       "heads",
                                             "w_o",        "b_o",     "mask",        "key_padding", "scale",
                                             "kv_heads",   "rope",    "query_positions", "key_positions",
                                             "q_norm",     "k_norm"};
const std::vector<std::string> kHeadKeys = {"w_q", "w_k", "w_v", "b_q", "b_k", "b_v"};
const std::vector<std::string> kGroupedHeadKeys = {"w_q", "b_q", "kv"};
const std::vector<std::string> kKvHeadKeys = {"w_k", "w_v", "b_k", "b_v"};
const std::vector<std::string> kRopeKeys = {"theta", "dims", "scaling"};
const std::vector<std::string> kScalingKeys = {"rope_type", "factor", "low_freq_factor", "high_freq_factor",
                                               "original_max_position_embeddings"};
const std::vector<std::string> kNormKeys = {"weight", "eps"};
constexpr const char* kFormat = "attnscope-scene";
constexpr int kVersion = 1;

// A whole number in [lo, hi]: kv indices, rope dims, positions.
int parseInt(const json& v, const std::string& path, std::int64_t lo, const std::string& expected) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > std::numeric_limits<int>::max())
    throw InputError(path, expected, describe(v));
  return static_cast<int>(v.get<std::int64_t>());
}

std::vector<int> parsePositions(const json& v, const std::string& path) {
  if (!v.is_array()) throw InputError(path, "a list of positions (whole numbers from 0)", describe(v));
  std::vector<int> positions;
  for (std::size_t i = 0; i < v.size(); ++i) positions.push_back(parseInt(v[i], at(path, i), 0, "a whole number from 0"));
  return positions;
}

double parseNumber(const json& v, const std::string& path, const std::string& expected) {
  if (!v.is_number()) throw InputError(path, expected, describe(v));
  return v.get<double>();
}

// rope.scaling, as Hugging Face's rope_scaling: {"rope_type": "linear" | "llama3", "factor", and for llama3
// "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}. validateScene checks the numbers.
RopeScaling parseRopeScaling(const json& v) {
  const std::string p = "rope.scaling.";
  if (!v.is_object()) throw InputError("rope.scaling", "an object with rope_type and factor", describe(v));
  checkKeys(v, p, kScalingKeys);
  RopeScaling s;
  const json& type = required(v, "rope_type", p, "\"linear\" or \"llama3\"");
  if (type == "linear") s.type = RopeScaling::Type::Linear;
  else if (type == "llama3") s.type = RopeScaling::Type::Llama3;
  else throw InputError(p + "rope_type", "\"linear\" or \"llama3\"", describe(type));
  s.factor = parseNumber(required(v, "factor", p, "a finite number above 0"), p + "factor", "a finite number above 0");
  if (s.type == RopeScaling::Type::Linear) {
    for (const char* key : {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
      if (v.contains(key)) throw InputError(p + key, "no such key with rope_type \"linear\"", describe(v[key]));
    return s;
  }
  if (v.contains("low_freq_factor")) s.low_freq_factor = parseNumber(v["low_freq_factor"], p + "low_freq_factor", "a number");
  if (v.contains("high_freq_factor"))
    s.high_freq_factor = parseNumber(v["high_freq_factor"], p + "high_freq_factor", "a number");
  if (v.contains("original_max_position_embeddings"))
    s.original_max_position_embeddings = parseInt(v["original_max_position_embeddings"],
                                                  p + "original_max_position_embeddings", 1, "a whole number from 1");
  return s;
}

// q_norm / k_norm: {"weight": [d_k numbers], "eps": number (default 1e-6)}.
SceneHeadNorm parseHeadNorm(const json& v, const std::string& path) {
  if (!v.is_object()) throw InputError(path, "an object with weight (d_k numbers) and eps", describe(v));
  checkKeys(v, path + ".", kNormKeys);
  SceneHeadNorm norm;
  norm.weight = parseVector(required(v, "weight", path + ".", "a list of d_k numbers"), path + ".weight");
  if (v.contains("eps")) norm.eps = parseNumber(v["eps"], path + ".eps", "a finite number above 0");
  return norm;
}

KvHeadParams parseKvHead(const json& v, const std::string& path) {
  if (!v.is_object()) throw InputError(path, "a key/value head object with w_k, w_v", describe(v));
  const std::string p = path + ".";
  checkKeys(v, p, kKvHeadKeys);
  KvHeadParams kv;
  kv.w_k = parseMatrix(required(v, "w_k", p, "a d_model x d_k matrix"), p + "w_k");
  kv.w_v = parseMatrix(required(v, "w_v", p, "a d_model x d_v matrix"), p + "w_v");
  if (v.contains("b_k")) kv.b_k = parseVector(v["b_k"], p + "b_k");
  if (v.contains("b_v")) kv.b_v = parseVector(v["b_v"], p + "b_v");
  return kv;
}

// grouped: the scene has kv_heads, so a head is w_q, b_q and kv (its K/V are the kv head's).
HeadParams parseHead(const json& v, const std::string& path, bool grouped) {
  if (!v.is_object())
    throw InputError(path, grouped ? "a head object with w_q and kv" : "a head object with w_q, w_k, w_v", describe(v));
  const std::string p = path + ".";
  checkKeys(v, p, grouped ? kGroupedHeadKeys : kHeadKeys);
  HeadParams head;
  head.w_q = parseMatrix(required(v, "w_q", p, "a d_model x d_k matrix"), p + "w_q");
  if (grouped) {
    if (v.contains("b_q")) head.b_q = parseVector(v["b_q"], p + "b_q");
    head.kv = parseInt(required(v, "kv", p, "the index of its key/value head"), p + "kv", 0,
                       "a kv_heads index (a whole number from 0)");
    return head;
  }
  head.w_k = parseMatrix(required(v, "w_k", p, "a d_model x d_k matrix"), p + "w_k");
  head.w_v = parseMatrix(required(v, "w_v", p, "a d_model x d_v matrix"), p + "w_v");
  if (v.contains("b_q")) head.b_q = parseVector(v["b_q"], p + "b_q");
  if (v.contains("b_k")) head.b_k = parseVector(v["b_k"], p + "b_k");
  if (v.contains("b_v")) head.b_v = parseVector(v["b_v"], p + "b_v");
  return head;
}

// [SECTION] writing numbers

// The shortest decimal that reads back as exactly this float: 0.1f is written 0.1, not 0.10000000149.
// Integral values are written as integers. NaN and infinities (masked scores) become null.
ordered_json floatJson(float f) {
  if (!std::isfinite(f)) return nullptr;
  if (f == 0.0f && std::signbit(f)) return -0.0;
  if (f == std::trunc(f) && std::fabs(f) < 9.0e15f) return static_cast<std::int64_t>(f);
  std::array<char, 32> buf{};
  const auto written = std::to_chars(buf.data(), buf.data() + buf.size(), f);
  *written.ptr = '\0';
  double d = std::strtod(buf.data(), nullptr);
  if (static_cast<float>(d) != f) d = static_cast<double>(f);  // double rounding: fall back to the exact value
  return d;
}

template <typename Derived>
ordered_json matrixJson(const Eigen::MatrixBase<Derived>& m) {
  ordered_json rows = ordered_json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    ordered_json row = ordered_json::array();
    for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back(floatJson(static_cast<float>(m(i, j))));
    rows.push_back(std::move(row));
  }
  return rows;
}

ordered_json vectorJson(const RowVector& v) {
  ordered_json out = ordered_json::array();
  for (Eigen::Index i = 0; i < v.size(); ++i) out.push_back(floatJson(v[i]));
  return out;
}

// Bytes that are not UTF-8 (a token typed in the window, say) are written as U+FFFD rather than failing the save.
std::string dumpScalar(const ordered_json& v) { return v.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

// The text goes into `out`, which is handed to `sink` whenever it passes kFlushBytes (a streamed output then
// holds about that much of itself in memory); `matrices` are written where their placeholders stand.
constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

struct Formatter {
  const JsonMatrices* matrices;
  const std::function<void(std::string_view)>* sink;
  std::string out;

  void maybeFlush() {
    if (sink && out.size() >= kFlushBytes) {
      (*sink)(out);
      out.clear();
    }
  }

  // As a list of rows of numbers in the tree would be written: "[\n  [1, 2],\n  [3, 4]\n]", or "[]".
  void matrix(const JsonMatrices::Entry& m, int indent) {
    Matrix made;  // an entry made now, dropped when written
    const float* data = m.data;
    if (m.make) {
      made = m.make();
      data = made.data();
    }
    if (m.rows == 0) {
      out += "[]";
      return;
    }
    const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
    out += "[\n";
    for (long i = 0; i < m.rows; ++i) {
      out += i ? ",\n" : "";
      out += pad;
      out += "[";
      for (long j = 0; j < m.cols; ++j) {
        if (j) out += ", ";
        out += dumpScalar(floatJson(data[i * m.cols + j]));
      }
      out += "]";
      maybeFlush();
    }
    out += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + "]";
  }

  void value(const ordered_json& j, int indent) {
    if (j.is_binary() && matrices && j.get_binary().has_subtype()) {
      matrix(matrices->at(static_cast<std::size_t>(j.get_binary().subtype())), indent);
      return;
    }
    const auto scalar = [](const ordered_json& v) { return !v.is_array() && !v.is_object() && !v.is_binary(); };
    if (scalar(j)) {
      out += dumpScalar(j);
      return;
    }
    const bool flat = j.empty() || (j.is_array() && std::all_of(j.begin(), j.end(), scalar));
    if (flat) {  // a list of numbers (a matrix row) stays on one line: [1, 0, 2]
      out += j.is_array() ? "[" : "{";
      for (auto it = j.begin(); it != j.end(); ++it) out += (it == j.begin() ? "" : ", ") + dumpScalar(*it);
      out += j.is_array() ? "]" : "}";
      maybeFlush();
      return;
    }
    const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
    out += j.is_array() ? "[\n" : "{\n";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      out += first ? "" : ",\n";
      first = false;
      out += pad;
      if (j.is_object()) out += dumpScalar(ordered_json(it.key())) + ": ";
      value(*it, indent + 2);
    }
    out += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + (j.is_array() ? "]" : "}");
    maybeFlush();
  }
};

}  // namespace

ordered_json floatToJson(float f) { return floatJson(f); }
ordered_json matrixToJson(const Matrix& m) { return matrixJson(m); }

// [SECTION] reading

Scene sceneFromJson(const json& j) {
  if (!j.is_object())
    throw InputError("scene", std::string("a JSON object with \"format\": \"") + kFormat + "\"", describe(j));
  checkKeys(j, "", kSceneKeys);
  const json& format = required(j, "format", "", std::string("\"") + kFormat + "\"");
  if (format != kFormat) throw InputError("format", std::string("\"") + kFormat + "\"", describe(format));
  const json& version = required(j, "version", "", std::to_string(kVersion));
  if (!version.is_number_integer() || version.get<std::int64_t>() != kVersion)
    throw InputError("version", std::to_string(kVersion) + " (the only version this program reads)", describe(version));

  Scene scene;
  if (j.contains("description")) {
    if (!j["description"].is_string()) throw InputError("description", "a string", describe(j["description"]));
    scene.description = j["description"].get<std::string>();
  }
  const json& d_model = required(j, "d_model", "", "a positive integer");
  if (!d_model.is_number_integer() || d_model.get<std::int64_t>() < 1 ||
      d_model.get<std::int64_t>() > std::numeric_limits<int>::max())
    throw InputError("d_model", "a positive integer", describe(d_model));
  scene.d_model = static_cast<int>(d_model.get<std::int64_t>());

  scene.query_tokens =
      parseTokens(required(j, "query_tokens", "", "a list of strings (one per query row)"), "query_tokens");
  if (j.contains("key_tokens")) scene.key_tokens = parseTokens(j["key_tokens"], "key_tokens");
  scene.query = parseMatrix(required(j, "query", "", "a list of rows of d_model numbers"), "query", scene.d_model);
  if (j.contains("key")) scene.key = parseMatrix(j["key"], "key", scene.d_model);
  if (j.contains("value")) scene.value = parseMatrix(j["value"], "value", scene.d_model);

  const json& heads = required(j, "heads", "", "a list of head objects");
  if (!heads.is_array()) throw InputError("heads", "a list of head objects", describe(heads));
  if (j.contains("kv_heads")) {
    const json& kv = j["kv_heads"];
    if (!kv.is_array() || kv.empty()) throw InputError("kv_heads", "a non-empty list of key/value head objects", describe(kv));
    for (std::size_t i = 0; i < kv.size(); ++i) scene.kv_heads.push_back(parseKvHead(kv[i], at("kv_heads", i)));
  }
  for (std::size_t i = 0; i < heads.size(); ++i)
    scene.heads.push_back(parseHead(heads[i], at("heads", i), scene.grouped()));
  if (j.contains("rope")) {
    const json& rope = j["rope"];
    if (!rope.is_object()) throw InputError("rope", "an object with theta and dims", describe(rope));
    checkKeys(rope, "rope.", kRopeKeys);
    const json& theta = required(rope, "theta", "rope.", "a finite number above 0");
    if (!theta.is_number()) throw InputError("rope.theta", "a finite number above 0", describe(theta));
    scene.rope = SceneRope{theta.get<double>(),
                           parseInt(required(rope, "dims", "rope.", "an even number of at least 2"), "rope.dims",
                                    std::numeric_limits<int>::min(), "an even whole number of at least 2")};
    if (rope.contains("scaling")) scene.rope->scaling = parseRopeScaling(rope["scaling"]);
  }
  if (j.contains("q_norm")) scene.q_norm = parseHeadNorm(j["q_norm"], "q_norm");
  if (j.contains("k_norm")) scene.k_norm = parseHeadNorm(j["k_norm"], "k_norm");
  if (j.contains("query_positions")) scene.query_positions = parsePositions(j["query_positions"], "query_positions");
  if (j.contains("key_positions")) scene.key_positions = parsePositions(j["key_positions"], "key_positions");
  if (j.contains("w_o")) scene.w_o = parseMatrix(j["w_o"], "w_o");
  if (j.contains("b_o")) scene.b_o = parseVector(j["b_o"], "b_o");

  if (j.contains("mask")) {
    const json& mask = j["mask"];
    if (mask == "none") {
      scene.mask = MaskKind::None;
    } else if (mask == "causal") {
      scene.mask = MaskKind::Causal;
    } else if (mask.is_array()) {
      scene.mask = MaskKind::Explicit;
      scene.explicit_mask = parseRows<MaskMatrix>(mask, "mask", -1, parseFlag);
    } else {
      throw InputError("mask", "\"none\", \"causal\" or a list of rows of 0/1 (1 = may attend)", describe(mask));
    }
  }
  if (j.contains("key_padding")) {
    const json& padding = j["key_padding"];
    if (!padding.is_array()) throw InputError("key_padding", "a list of 0/1 (1 = padded)", describe(padding));
    for (std::size_t i = 0; i < padding.size(); ++i)
      scene.key_padding.push_back(parseFlag(padding[i], at("key_padding", i)));
  }
  if (j.contains("scale")) scene.scale = parseFloat(j["scale"], "scale");

  validateScene(scene);
  return scene;
}

Scene loadSceneFile(const std::string& path) {
  return sceneFromJson(parseJsonText(readWholeFile(path, "scene file", kMaxSceneFileBytes), path));
}

Scene workedExampleScene() {
  static const Scene scene = sceneFromJson(json::parse(kWorkedExampleJson));
  return scene;
}

// [SECTION] writing

ordered_json sceneToJson(const Scene& scene) {
  ordered_json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  if (!scene.description.empty()) j["description"] = scene.description;
  j["d_model"] = scene.d_model;
  j["query_tokens"] = scene.query_tokens;
  if (!scene.key_tokens.empty()) j["key_tokens"] = scene.key_tokens;
  j["query"] = matrixJson(scene.query);
  if (scene.key) j["key"] = matrixJson(*scene.key);
  if (scene.value) j["value"] = matrixJson(*scene.value);
  if (scene.grouped()) {
    ordered_json kv_heads = ordered_json::array();
    for (const KvHeadParams& kv : scene.kv_heads) {
      ordered_json g;
      g["w_k"] = matrixJson(kv.w_k);
      g["w_v"] = matrixJson(kv.w_v);
      if (kv.b_k) g["b_k"] = vectorJson(*kv.b_k);
      if (kv.b_v) g["b_v"] = vectorJson(*kv.b_v);
      kv_heads.push_back(std::move(g));
    }
    j["kv_heads"] = std::move(kv_heads);
  }
  ordered_json heads = ordered_json::array();
  for (const HeadParams& head : scene.heads) {
    ordered_json h;
    h["w_q"] = matrixJson(head.w_q);
    if (scene.grouped()) {
      if (head.b_q) h["b_q"] = vectorJson(*head.b_q);
      h["kv"] = head.kv;
      heads.push_back(std::move(h));
      continue;
    }
    h["w_k"] = matrixJson(head.w_k);
    h["w_v"] = matrixJson(head.w_v);
    if (head.b_q) h["b_q"] = vectorJson(*head.b_q);
    if (head.b_k) h["b_k"] = vectorJson(*head.b_k);
    if (head.b_v) h["b_v"] = vectorJson(*head.b_v);
    heads.push_back(std::move(h));
  }
  j["heads"] = std::move(heads);
  if (scene.w_o) j["w_o"] = matrixJson(*scene.w_o);
  if (scene.b_o) j["b_o"] = vectorJson(*scene.b_o);
  switch (scene.mask) {
    case MaskKind::None:
      j["mask"] = "none";
      break;
    case MaskKind::Causal:
      j["mask"] = "causal";
      break;
    case MaskKind::Explicit:
      j["mask"] = matrixJson(scene.explicit_mask.cast<float>());
      break;
  }
  if (!scene.key_padding.empty()) {
    ordered_json padding = ordered_json::array();
    for (std::uint8_t flag : scene.key_padding) padding.push_back(static_cast<int>(flag));
    j["key_padding"] = std::move(padding);
  }
  if (scene.scale) j["scale"] = floatJson(*scene.scale);
  if (scene.rope) {
    ordered_json rope;
    const double theta = scene.rope->theta;  // a double: written so that it reads back exactly
    if (theta == std::trunc(theta) && std::fabs(theta) < 9.0e15) rope["theta"] = static_cast<std::int64_t>(theta);
    else rope["theta"] = theta;
    rope["dims"] = scene.rope->dims;
    const RopeScaling& scaling = scene.rope->scaling;
    if (scaling.type != RopeScaling::Type::None) {
      ordered_json s;
      const bool llama3 = scaling.type == RopeScaling::Type::Llama3;
      s["rope_type"] = llama3 ? "llama3" : "linear";
      s["factor"] = scaling.factor;
      if (llama3) {
        s["low_freq_factor"] = scaling.low_freq_factor;
        s["high_freq_factor"] = scaling.high_freq_factor;
        s["original_max_position_embeddings"] = scaling.original_max_position_embeddings;
      }
      rope["scaling"] = std::move(s);
    }
    j["rope"] = std::move(rope);
  }
  for (const auto& [key, norm] : {std::pair{"q_norm", &scene.q_norm}, std::pair{"k_norm", &scene.k_norm}})
    if (*norm) j[key] = ordered_json{{"weight", vectorJson((*norm)->weight)}, {"eps", (*norm)->eps}};
  if (!scene.query_positions.empty()) j["query_positions"] = scene.query_positions;
  if (!scene.key_positions.empty()) j["key_positions"] = scene.key_positions;
  return j;
}

void saveSceneFile(const Scene& scene, const std::string& path) {
  validateScene(scene);
  writeFileAtomically(path, formatJson(sceneToJson(scene)));
}

std::string formatJson(const ordered_json& j, const JsonMatrices* matrices) {
  Formatter f{matrices, nullptr, {}};
  f.value(j, 0);
  f.out += "\n";
  return std::move(f.out);
}

void formatJsonTo(const ordered_json& j, const JsonMatrices& matrices, const std::function<void(std::string_view)>& sink) {
  Formatter f{&matrices, &sink, {}};
  f.value(j, 0);
  f.out += "\n";
  sink(f.out);
}

ordered_json JsonMatrices::add(const float* data, long rows, long cols) {
  entries_.push_back({data, rows, cols, {}});
  return ordered_json::binary({}, static_cast<std::uint64_t>(entries_.size() - 1));
}

nlohmann::ordered_json JsonMatrices::addMade(long rows, long cols, std::function<Matrix()> make) {
  entries_.push_back({nullptr, rows, cols, std::move(make)});
  return ordered_json::binary({}, static_cast<std::uint64_t>(entries_.size() - 1));
}

std::size_t JsonMatrices::numbers() const {
  std::size_t n = 0;
  for (const Entry& e : entries_) n += static_cast<std::size_t>(e.rows) * static_cast<std::size_t>(e.cols);
  return n;
}

}  // namespace attnscope
