// Reading a capture: capture.json checked whole, then each layer's q and k into a forward's stats.
#include "attnscope/arrays/capture.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/safetensors.h"
#include "attnscope/scene/scene.h"
#include "compute/soft_cap.h"

namespace attnscope::arrays {

namespace {

constexpr std::size_t kMaxCaptureJsonBytes = std::size_t{64} << 20;  // token texts of a 128k-token run fit

// capture.json's integer `key`, required, in [lo, hi].
long long captureInt(const nlohmann::json& j, const std::string& name, const char* key, long long lo, long long hi) {
  const std::string field = name + ": " + key;
  if (!j.contains(key)) throw InputError(field, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi), "none");
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer())
    throw InputError(field, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi), describeJson(v));
  const long long x = v.get<long long>();
  if (x < lo || x > hi)
    throw InputError(field, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi), std::to_string(x));
  return x;
}

constexpr int kResidentLayers = 2;  // the layer on show and the one the grid's worker is on

// A capture's sizes, as capture.json gives them.
struct CaptureShape {
  int heads, kv_heads, n, d;
};

// A layer file's tensors: q (heads, n, d) and k (kv_heads, n, d), optionally lse (heads, n) and v (kv_heads, n, d)
// with w_o (heads, d, d_model), each F32, F16 or BF16 (the header's byte ranges were checked when it was opened).
void checkCaptureLayer(const model::SafetensorsFile& file, const CaptureShape& c) {
  file.checkedTensor("q", {c.heads, c.n, c.d});
  file.checkedTensor("k", {c.kv_heads, c.n, c.d});
  if (file.has("lse")) file.checkedTensor("lse", {c.heads, c.n});
  // Value norms need both v and the heads' rows of W_O (heads, d, d_model): d_model is the file's to say.
  if (file.has("v") != file.has("w_o"))
    throw InputError(file.path() + ": tensor '" + (file.has("v") ? "w_o" : "v") + "'",
                     "v and w_o together (the value norms need both)",
                     std::string("only '") + (file.has("v") ? "v" : "w_o") + "'");
  if (file.has("v")) {
    file.checkedTensor("v", {c.kv_heads, c.n, c.d});
    const std::vector<std::int64_t>& got = file.tensors().at("w_o").shape;
    file.checkedTensor("w_o", {c.heads, c.d, got.size() == 3 && got[2] >= 1 && got[2] <= (1 << 20) ? got[2] : 1});
  }
}

// Head h's value norms ||v_j W_O^h|| (n): v (n, d) its KV head's values, o (d, d_model) its rows of W_O, through the
// Gram matrix G = o o^T (d, d) in double, ||v_j o||^2 = v_j G v_j^T (a square a hair below 0 is rounding), in
// blocks of rows (no (n, d) double copy). A norm past float32's range is kept as its largest float.
RowVector captureValueNorms(const Matrix& v, const Matrix& o) {
  const Eigen::MatrixXd od = o.cast<double>();
  const Eigen::MatrixXd gram = od * od.transpose();
  RowVector out(v.rows());
  constexpr Eigen::Index kBlock = 4096;
  for (Eigen::Index r0 = 0; r0 < v.rows(); r0 += kBlock) {
    const Eigen::Index rows = std::min(kBlock, v.rows() - r0);
    const Eigen::MatrixXd vd = v.middleRows(r0, rows).cast<double>();
    const Eigen::VectorXd norms = (vd * gram).cwiseProduct(vd).rowwise().sum().cwiseMax(0.0).cwiseSqrt();
    out.segment(r0, rows) = norms.cwiseMin(std::numeric_limits<float>::max()).transpose().cast<float>();
  }
  return out;
}

// The row statistics of one head over its allowed keys: m_i the largest scaled score, l_i = sum exp(s_ij - m_i)
// (summed in double: up to 4M terms). q (n, d) scaled, k (n, d); blocks of 256 query rows against every key (one
// GEMM each). A row's allowed keys are one run [lo, hi): causal j <= i, a sliding window W j > i - W.
void captureRowStatistics(const Matrix& q, const Matrix& k, const model::HeadLayout& layout, int layer, float softcap,
                          RowVector& m, RowVector& l) {
  const int n = static_cast<int>(q.rows()), window = layout.windowOf(layer);
  m.resize(n), l.resize(n);
  constexpr int kBlock = 256;
  Matrix s;
  for (int r0 = 0; r0 < n; r0 += kBlock) {
    const int rows = std::min(kBlock, n - r0);
    s.noalias() = q.middleRows(r0, rows) * k.transpose();
    softCapScores(s, softcap);
    for (int r = 0; r < rows; ++r) {
      const int i = r0 + r;
      const int lo = window > 0 ? std::max(0, i - window + 1) : 0, hi = layout.causal ? i + 1 : n;
      if (hi <= lo) {
        m[i] = -std::numeric_limits<float>::infinity(), l[i] = 0;
        continue;
      }
      auto run = s.row(r).segment(lo, hi - lo).array();
      if (!layout.key_padding.empty())  // a padded key takes no part: -inf, exp gives 0
        for (int j = lo; j < hi; ++j)
          if (layout.key_padding[static_cast<std::size_t>(j)]) run[j - lo] = -std::numeric_limits<float>::infinity();
      const float top = run.maxCoeff();
      if (top == -std::numeric_limits<float>::infinity()) {  // every key of the row padded
        m[i] = top, l[i] = 0;
        continue;
      }
      m[i] = top, l[i] = static_cast<float>((run - top).exp().template cast<double>().sum());
    }
  }
}

// One layer of a capture (checkCaptureLayer passed at open): each head's q scaled, read straight into its matrix,
// k once per KV head, and m = lse, l = 1 where the layer stores lse (w_ij = exp(s_ij - lse_i)); else the row
// statistics are left to the reader's first use of the head. A NaN or infinity is refused naming the tensor and
// the cell.
Result readCaptureLayer(const std::string& path, const CaptureShape& c, float scale, float softcap) {
  const model::SafetensorsFile file(path);
  checkCaptureLayer(file, c);  // the file may have changed since the capture was opened
  const int n = c.n, d = c.d, group = c.heads / c.kv_heads;
  const Matrix lse = file.has("lse") ? file.readMatrix("lse", {c.heads, n}) : Matrix();
  Result r;
  r.score_cap = softcap;
  r.heads.resize(static_cast<std::size_t>(c.heads));
  for (int h = 0; h < c.heads; ++h) {
    HeadResult& hr = r.heads[static_cast<std::size_t>(h)];
    hr.q.resize(n, d);
    file.readRowsInto("q", {c.heads, n, d}, static_cast<std::size_t>(h) * n, static_cast<std::size_t>(n), hr.q.data());
    hr.q *= scale;
    if (h % group == 0) {
      Matrix& k = hr.ownK();
      k.resize(n, d);
      file.readRowsInto("k", {c.kv_heads, n, d}, static_cast<std::size_t>(h / group) * n, static_cast<std::size_t>(n),
                        k.data());
    } else {
      hr.shareKeyValues(r.heads[static_cast<std::size_t>(h - h % group)]);
    }
    if (lse.size() > 0) hr.row_max = lse.row(h), hr.row_sum = RowVector::Ones(n);
  }
  if (file.has("v")) {  // each KV head's values read once, for its group's heads; neither v nor W_O is held
    const std::int64_t d_model = file.tensors().at("w_o").shape[2];
    Matrix v(n, d), o(d, d_model);
    for (int h = 0; h < c.heads; ++h) {
      if (h % group == 0)
        file.readRowsInto("v", {c.kv_heads, n, d}, static_cast<std::size_t>(h / group) * n, static_cast<std::size_t>(n),
                          v.data());
      file.readRowsInto("w_o", {c.heads, d, d_model}, static_cast<std::size_t>(h) * d, static_cast<std::size_t>(d),
                        o.data());
      r.heads[static_cast<std::size_t>(h)].value_norm = captureValueNorms(v, o);
    }
  }
  return r;
}

}  // namespace

bool isCaptureFolder(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::is_regular_file(path + "/capture.json", ec);
}

AttentionTensor readCapture(const std::string& dir, std::size_t budget) {
  const std::string name = (std::filesystem::path(dir) / "capture.json").string();
  const nlohmann::json j = readJsonFile(name, kMaxCaptureJsonBytes);
  if (!j.is_object()) throw InputError(name, "a JSON object", describeJson(j));
  if (!j.contains("format") || j["format"] != kCaptureFormat)
    throw InputError(name + ": format", std::string("\"") + kCaptureFormat + "\"",
                     j.contains("format") ? describeJson(j["format"]) : "none");
  const long long version = captureInt(j, name, "version", 0, 1 << 20);
  if (version != kCaptureVersion)
    throw InputError(name + ": version", std::to_string(kCaptureVersion) + " (this reader's)", std::to_string(version));
  const int layers = static_cast<int>(captureInt(j, name, "n_layer", 1, 4096));
  const int heads = static_cast<int>(captureInt(j, name, "n_head", 1, 4096));
  const int kv_heads = static_cast<int>(captureInt(j, name, "n_kv_head", 1, heads));
  if (heads % kv_heads != 0)
    throw InputError(name + ": n_kv_head", "a divisor of n_head (" + std::to_string(heads) + ")", std::to_string(kv_heads));
  const int d = static_cast<int>(captureInt(j, name, "head_dim", 1, 4096));
  const int n = static_cast<int>(captureInt(j, name, "n_tokens", 1, 1 << 22));
  if (!j.contains("scale") || !j["scale"].is_number() || !(j["scale"].get<double>() > 0) ||
      !std::isfinite(j["scale"].get<double>()))
    throw InputError(name + ": scale", "a finite number > 0 (1/sqrt(head_dim) unless the model says otherwise)",
                     j.contains("scale") ? describeJson(j["scale"]) : "none");
  const float scale = static_cast<float>(j["scale"].get<double>());
  float softcap = 0;  // the scores' soft cap, s -> c tanh(s / c) before the mask (Result::score_cap); 0: none
  if (j.contains("softcap") && !j["softcap"].is_null()) {
    const nlohmann::json& c = j["softcap"];
    if (!c.is_number() || !std::isfinite(c.get<double>()) || c.get<double>() < 0 || c.get<double>() > 1e6)
      throw InputError(name + ": softcap", "a number from 0 (none) to 1e6, or null", describeJson(c));
    softcap = static_cast<float>(c.get<double>());
  }
  bool causal = true;
  if (j.contains("causal")) {
    if (!j["causal"].is_boolean()) throw InputError(name + ": causal", "true or false", describeJson(j["causal"]));
    causal = j["causal"].get<bool>();
  }
  model::HeadLayout layout(layers, heads, kv_heads);
  layout.causal = causal;
  if (j.contains("sliding_window") && !j["sliding_window"].is_null()) {
    const nlohmann::json& w = j["sliding_window"];
    if (!w.is_array() || static_cast<int>(w.size()) != layers)
      throw InputError(name + ": sliding_window", std::to_string(layers) + " window sizes (0: none), one a layer",
                       describeJson(w));
    for (const nlohmann::json& x : w) {
      if (!x.is_number_integer() || x.get<long long>() < 0 || x.get<long long>() > (1 << 22))
        throw InputError(name + ": sliding_window", "integers from 0 (none) to 4194304", describeJson(x));
      layout.window.push_back(static_cast<int>(x.get<long long>()));
    }
  }
  if (j.contains("key_padding") && !j["key_padding"].is_null()) {
    const nlohmann::json& p = j["key_padding"];
    if (!p.is_array() || static_cast<int>(p.size()) != n)
      throw InputError(name + ": key_padding", std::to_string(n) + " flags (n_tokens), 1 for a padded key",
                       describeJson(p));
    for (const nlohmann::json& x : p) {
      if (!(x.is_boolean() || (x.is_number_integer() && (x.get<long long>() == 0 || x.get<long long>() == 1))))
        throw InputError(name + ": key_padding", "0 or 1 (or false or true) for each key", describeJson(x));
      layout.key_padding.push_back(x.is_boolean() ? x.get<bool>() : x.get<long long>() == 1);
    }
    if (std::none_of(layout.key_padding.begin(), layout.key_padding.end(), [](std::uint8_t f) { return f != 0; }))
      layout.key_padding.clear();  // none padded: no rule to apply
  }
  AttentionTensor t;
  t.tensor_name = j.contains("model") && j["model"].is_string() ? j["model"].get<std::string>() : "";
  if (!j.contains("tokens") || !j["tokens"].is_array() || static_cast<int>(j["tokens"].size()) != n)
    throw InputError(name + ": tokens", std::to_string(n) + " token texts (n_tokens)",
                     j.contains("tokens") ? describeJson(j["tokens"]) : "none");
  for (const nlohmann::json& token : j["tokens"]) {
    if (!token.is_string()) throw InputError(name + ": tokens", "strings", describeJson(token));
    t.tokens.push_back(token.get<std::string>());
  }
  if (!j.contains("files") || !j["files"].is_array() || static_cast<int>(j["files"].size()) != layers)
    throw InputError(name + ": files", std::to_string(layers) + " file names, one a layer (n_layer)",
                     j.contains("files") ? describeJson(j["files"]) : "none");
  std::vector<std::string> files;
  for (const nlohmann::json& f : j["files"]) {
    const std::string file = f.is_string() ? f.get<std::string>() : "";
    if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file == "." ||
        file == "..")
      throw InputError(name + ": files", "file names inside the capture's folder", describeJson(f));
    files.push_back(file);
  }
  // Held: at most kResidentLayers layers' q (heads) and k (kv heads) as float32 with the row statistics, and one
  // more being read: O(n d) a layer, whatever the layer count.
  const std::size_t per_layer = static_cast<std::size_t>(heads + kv_heads) * n * d + std::size_t{2} * heads * n;
  checkMemoryBudget(name, "the capture's queries and keys (" + std::to_string(kResidentLayers + 1) + " layers of " +
                              std::to_string(heads) + " heads, " + std::to_string(n) + " tokens at a time)",
                    per_layer * (kResidentLayers + 1) * sizeof(float), budget);

  // Every layer's file checked now (its header: tensors, dtypes and shapes against bytes), its numbers when read.
  const CaptureShape shape{heads, kv_heads, n, d};
  std::vector<std::string> paths;
  t.value_norms = true;
  for (const std::string& file : files) {
    paths.push_back((std::filesystem::path(dir) / file).string());
    const model::SafetensorsFile layer(paths.back());
    checkCaptureLayer(layer, shape);
    t.value_norms = t.value_norms && layer.has("v");
  }
  t.forward.layout = layout;
  t.forward.n = n;
  t.forward.maps = layers * heads;
  t.forward.reader = std::make_shared<const model::LayerReader>(
      [paths, shape, scale, softcap](int l) { return readCaptureLayer(paths.at(static_cast<std::size_t>(l)), shape, scale, softcap); },
      [layout, softcap](int l, HeadResult& hr) { captureRowStatistics(hr.q, hr.k(), layout, l, softcap, hr.row_max, hr.row_sum); },
      kResidentLayers);
  return t;
}

}  // namespace attnscope::arrays
