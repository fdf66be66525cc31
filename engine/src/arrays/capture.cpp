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

// The row statistics of one head over its allowed keys: m_i the largest scaled score, l_i = sum exp(s_ij - m_i)
// (summed in double: up to 4M terms). q (n, d) scaled, k (n, d); blocks of 256 query rows against every key (one
// GEMM each). A row's allowed keys are one run [lo, hi): causal j <= i, a sliding window W j > i - W.
void captureRowStatistics(const Matrix& q, const Matrix& k, const model::HeadLayout& layout, int layer, RowVector& m,
                          RowVector& l) {
  const int n = static_cast<int>(q.rows()), window = layout.windowOf(layer);
  m.resize(n), l.resize(n);
  constexpr int kBlock = 256;
  Matrix s;
  for (int r0 = 0; r0 < n; r0 += kBlock) {
    const int rows = std::min(kBlock, n - r0);
    s.noalias() = q.middleRows(r0, rows) * k.transpose();
    for (int r = 0; r < rows; ++r) {
      const int i = r0 + r;
      const int lo = window > 0 ? std::max(0, i - window + 1) : 0, hi = layout.causal ? i + 1 : n;
      if (hi <= lo) {
        m[i] = -std::numeric_limits<float>::infinity(), l[i] = 0;
        continue;
      }
      const auto run = s.row(r).segment(lo, hi - lo).array();
      const float top = run.maxCoeff();
      m[i] = top, l[i] = static_cast<float>((run - top).exp().template cast<double>().sum());
    }
  }
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
  if (j.contains("softcap") && !j["softcap"].is_null() && !(j["softcap"].is_number() && j["softcap"].get<double>() == 0))
    throw InputError(name + ": softcap", "0 or none (soft-capped captures are not read yet)", describeJson(j["softcap"]));
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
  // Held: every layer's q (heads) and k (kv heads) as float32, and the row statistics; one layer's file read at a
  // time beside them.
  const std::size_t per_layer = static_cast<std::size_t>(heads + kv_heads) * n * d + std::size_t{2} * heads * n;
  checkMemoryBudget(name, "the capture's queries and keys (" + std::to_string(layers) + " layers of " +
                              std::to_string(heads) + " heads, " + std::to_string(n) + " tokens)",
                    (per_layer * layers + per_layer) * sizeof(float), budget);

  t.forward.layout = layout;
  t.forward.resize(n, layers * heads, false);
  const int group = heads / kv_heads;
  for (int l = 0; l < layers; ++l) {
    const std::string path = (std::filesystem::path(dir) / files[static_cast<std::size_t>(l)]).string();
    // Read head by head straight into the forward's matrices (no second copy of the layer); a NaN or infinity is
    // refused naming the tensor and the cell.
    const model::SafetensorsFile file(path);
    Matrix lse;
    if (file.has("lse")) {
      lse = file.readMatrix("lse", {heads, n});
    }
    Result& r = t.forward.stats[static_cast<std::size_t>(l)];
    r.heads.resize(static_cast<std::size_t>(heads));
    for (int h = 0; h < heads; ++h) {
      HeadResult& hr = r.heads[static_cast<std::size_t>(h)];
      hr.q.resize(n, d);
      file.readRowsInto("q", {heads, n, d}, static_cast<std::size_t>(h) * n, static_cast<std::size_t>(n), hr.q.data());
      hr.q *= scale;
      if (h % group == 0) {
        Matrix& k = hr.ownK();
        k.resize(n, d);
        file.readRowsInto("k", {kv_heads, n, d}, static_cast<std::size_t>(h / group) * n, static_cast<std::size_t>(n),
                          k.data());
      } else {
        hr.shareKeyValues(r.heads[static_cast<std::size_t>(h - h % group)]);
      }
      if (lse.size() > 0) {  // w_ij = exp(s_ij - lse_i): m = lse, l = 1
        hr.row_max = lse.row(h);
        hr.row_sum = RowVector::Ones(n);
      } else {
        captureRowStatistics(hr.q, hr.k(), layout, l, hr.row_max, hr.row_sum);
      }
    }
  }
  t.forward.n = n;
  return t;
}

}  // namespace attnscope::arrays
