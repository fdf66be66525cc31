// Captures (attnscope/arrays/capture.h): each layer's q after RoPE and k, written by tools/capture/
// attnscope_capture.py's attention function called exactly as transformers calls one (llama_reference.py
// --capture: module.layer_idx, query (1, H, n, hd), key and value (1, KV, n, hd), scaling, sliding_window), read
// back into maps computed on demand, against the NumPy forward's maps of the same checkpoint (and attnscope's own
// forward of it): GQA, a sliding
// window, Qwen3's q_norm / k_norm, Llama 3's scaled RoPE, two tensor-parallel ranks merged, the rows' log-sum-exp
// stored by the capture, Gemma 2's soft cap (gemma_reference.py), GPT-NeoX's partial rotary (neox_reference.py).
// Then the log-sum-exp path, layers read when asked, value norms from v and W_O, `attnscope view CAPTURE`, and
// every malformed capture refused in one line naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/arrays/capture.h"
#include "attnscope/error.h"
#include "attnscope/model/model.h"
#include "cli/import_view_support.h"
#include "model/test_model_support.h"

namespace {

using attnscope::InputError;
using attnscope::Matrix;
using attnscope::arrays::readCapture;
using nlohmann::json;

struct CaptureRow {
  const char* name;
  const char* args;                          // the reference script's
  const char* script = "llama_reference.py";  // or gemma_reference.py (soft caps)
};

// A folder holding ckpt/ (the checkpoint, with expected.json) and capture/ (its capture), from one run of the
// reference script ARGS --capture.
std::string capturedRun(const CaptureRow& row) {
  const std::string base = model_test::tempDir();
  const model_test::CommandRun r =
      model_test::run(std::string(model_test::kPython) + " '" + ATTNSCOPE_SOURCE_DIR + "/tests/model/" + row.script +
                      "' '" + base + "/ckpt' " + row.args + " --capture '" + base + "/capture'");
  if (r.status != 0) throw std::runtime_error(std::string(row.script) + " --capture failed: " + r.err);
  return base;
}

class CaptureReference : public ::testing::TestWithParam<CaptureRow> {};

// Maps from q and k stored as float32 (rounded once from NumPy's float64, 2^-24 relative) and scored in float32
// against NumPy's float64 maps of the same stored weights: the same arithmetic as the forward's own last step,
// whose bar (kWeightTol, 1e-5, test_model_support.h) holds with the forward's earlier float32 steps on top; with
// the stored log-sum-exp, w = exp(s - lse) where lse (float32, |lse| < 4 here) carries PyTorch's own rounding of
// the same sum, a relative error of a few float32 ulps of the exponent; a soft cap's tanh moves a score by at most
// its own error (slope <= 1) plus a float32 rounding of the cap. Seen: 3.8e-7 (the rows' statistics worked out
// here, soft caps and partial rotary included), 1.4e-6 to 2.3e-6 (stored log-sum-exp); the max-pooled overviews the
// same.
TEST_P(CaptureReference, MapsEqualTheNumPyForward) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("torch");
  const std::string dir = capturedRun(GetParam());
  const json expected = json::parse(model_test::slurp(dir + "/ckpt/expected.json"));
  const attnscope::arrays::AttentionTensor t = readCapture(dir + "/capture");
  ASSERT_EQ(t.forward.layout.n_layer, static_cast<int>(expected["weights"].size()));
  ASSERT_EQ(t.forward.layout.n_head, static_cast<int>(expected["weights"][0].size()));
  for (int h = 0; h < t.forward.layout.n_head && expected.contains("kv_head"); ++h)  // GPT-NeoX: no groups
    EXPECT_EQ(t.forward.layout.kvHead(h), expected["kv_head"][static_cast<std::size_t>(h)].get<int>()) << "head " << h;
  EXPECT_EQ(static_cast<int>(t.tokens.size()), t.forward.n);
  EXPECT_EQ(t.tokens[0], "<bos>");
  EXPECT_TRUE(t.forward.reader) << "a capture's layers are read when asked";
  const double worst = model_test::worstMap(t.forward, expected);
  std::printf("%s: worst map error %.3g\n", GetParam().name, worst);
  EXPECT_LE(worst, model_test::kWeightTol);
  // The max-pooled overview (the window's grid and first map: pooled_max.cpp's blocked pass, which caps and masks
  // scores on its own) against NumPy's maps pooled here: block y of 5 covers the rows ceil(y n / 5) <= i <
  // ceil((y + 1) n / 5), likewise the keys; a block's largest allowed weight, the same bar.
  const int n = t.forward.n, side = 5;
  double worst_pooled = 0;
  for (int l = 0; l < t.forward.layout.n_layer; ++l)
    for (int h = 0; h < t.forward.layout.n_head; ++h) {
      const attnscope::Tile tile =
          t.forward.tile(l, {.head = h, .pooling = attnscope::Pooling::Max, .out_rows = side, .out_cols = side});
      const json& w = expected["weights"][static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
      for (int y = 0; y < side; ++y)
        for (int x = 0; x < side; ++x) {
          double want = 0;
          for (int i = (y * n + side - 1) / side; i < ((y + 1) * n + side - 1) / side; ++i)
            for (int j = (x * n + side - 1) / side; j < ((x + 1) * n + side - 1) / side; ++j)
              want = std::max(want, w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)].get<double>());
          worst_pooled = std::max(worst_pooled, std::abs(tile.values(y, x) - want));
        }
    }
  std::printf("%s: worst max-pooled error %.3g\n", GetParam().name, worst_pooled);
  EXPECT_LE(worst_pooled, model_test::kWeightTol);
  // attnscope's own forward of the same checkpoint on the same ids: both within kWeightTol of NumPy's float64 maps,
  // so of each other within twice that.
  std::vector<int> ids;
  for (const json& id : expected["ids"]) ids.push_back(id.get<int>());
  const attnscope::model::ForwardResult own =
      attnscope::model::modelForward(attnscope::model::loadModel(dir + "/ckpt"), ids);
  double worst_own = 0;
  for (int l = 0; l < t.forward.layout.n_layer; ++l)
    for (int h = 0; h < t.forward.layout.n_head; ++h)
      worst_own = attnscope::test::worse(
          worst_own, attnscope::test::maxError(t.forward.map(l, h), own.map(l, h), {}, "maps"));
  std::printf("%s: worst error against attnscope's own forward %.3g\n", GetParam().name, worst_own);
  EXPECT_LE(worst_own, 2 * model_test::kWeightTol);
}

INSTANTIATE_TEST_SUITE_P(
    Families, CaptureReference,
    ::testing::Values(CaptureRow{"llama_gqa", "--family llama --heads 4 --kv-heads 2"},
                      CaptureRow{"mistral_window_two_ranks", "--family mistral --window 5 --kv-heads 2 --capture-ranks 2"},
                      CaptureRow{"qwen3_qk_norm", "--family qwen3 --head-dim 12 --seed 5"},
                      // The rows' log-sum-exp computed by the capture (attnscope_capture.row_log_sum_exp, in
                      // float32 where q and k are) and stored: opened without attnscope's own pass over the keys.
                      CaptureRow{"mistral_window_stored_lse",
                                 "--family mistral --window 5 --kv-heads 2 --capture-ranks 2 --capture-lse"},
                      CaptureRow{"llama3_rope_scaling", "--family llama --rope-scaling llama3 --kv-heads 1"},
                      // Gemma 2: scores soft-capped at 1 (tanh bites: the tiny model's scores reach several units),
                      // a sliding window on even layers, GQA, query_pre_attn_scalar's scale; with and without the
                      // stored log-sum-exp (of the capped scores).
                      CaptureRow{"gemma2_softcap", "--family gemma2 --softcap 1", "gemma_reference.py"},
                      CaptureRow{"gemma2_softcap_stored_lse", "--family gemma2 --softcap 1 --capture-lse",
                                 "gemma_reference.py"},
                      // GPT-NeoX (Pythia): the rotary on the first quarter of each head's dims only.
                      CaptureRow{"neox_partial_rotary", "--rotary-pct 0.25", "neox_reference.py"}),
    [](const ::testing::TestParamInfo<CaptureRow>& row) { return std::string(row.param.name); });

// A copy of a capture folder to break one piece of.
std::string copyOf(const std::string& capture) {
  const std::string to = model_test::tempDir() + "/capture";
  std::filesystem::copy(capture, to);
  return to;
}

json readJson(const std::string& path) { return json::parse(model_test::slurp(path)); }
void writeJson(const std::string& path, const json& j) { std::ofstream(path) << j.dump(); }

// The message of readCapture's refusal of `dir`, or of its first layer's when asked (a layer's numbers are read
// then), "" when every layer reads.
std::string refusal(const std::string& dir) {
  try {
    const attnscope::arrays::AttentionTensor t = readCapture(dir);
    for (int l = 0; l < t.forward.layout.n_layer; ++l) t.forward.layerStats(l);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Layer `layer` of capture `dir` rewritten with q and k of 0.1 everywhere, the tensors `extra` beside them, and a
// NaN at flat index `at` of tensor `nan_in` ("q" or "k"; "" none).
void rewriteLayer(const std::string& dir, int layer, const std::string& nan_in, int at,
                  const std::map<std::string, attnscope::test::TestTensor>& extra = {}) {
  const json info = readJson(dir + "/capture.json");
  const int heads = info["n_head"], kv = info["n_kv_head"], n = info["n_tokens"], d = info["head_dim"];
  std::map<std::string, attnscope::test::TestTensor> tensors = {
      {"q", {{heads, n, d}, std::vector<float>(static_cast<std::size_t>(heads * n * d), 0.1f)}},
      {"k", {{kv, n, d}, std::vector<float>(static_cast<std::size_t>(kv * n * d), 0.1f)}}};
  for (auto& [name, tensor] : tensors)
    if (name == nan_in) tensor.data[static_cast<std::size_t>(at)] = NAN;
  tensors.insert(extra.begin(), extra.end());
  attnscope::test::writeSafetensors(dir + "/" + info["files"][static_cast<std::size_t>(layer)].get<std::string>(),
                                    tensors);
}

// Row statistics from a stored log-sum-exp (lse_i = m_i + ln l_i, worked here from the one-pass statistics) give
// the same maps: w = exp(s - lse) against exp(s - m) / l, within a float32 rounding of the exponent (lse rounded
// to float32: |lse| < 20 here, an ulp of 2e-6 in s - lse, a relative 2e-6 in w). Seen: 8.9e-7.
TEST(Capture, AStoredLogSumExpGivesTheSameMaps) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("torch");
  const std::string dir = capturedRun({"lse", "--family llama --heads 4 --kv-heads 2"});
  const attnscope::arrays::AttentionTensor plain = readCapture(dir + "/capture");
  const std::string with_lse = copyOf(dir + "/capture");
  const json info = readJson(with_lse + "/capture.json");
  const int heads = info["n_head"], kv = info["n_kv_head"], n = info["n_tokens"], d = info["head_dim"];
  const double scale = info["scale"];
  for (int l = 0; l < info["n_layer"].get<int>(); ++l) {
    const std::string file = with_lse + "/" + info["files"][static_cast<std::size_t>(l)].get<std::string>();
    const attnscope::Result& r = *plain.forward.layerStats(l);
    attnscope::test::TestTensor q{{heads, n, d}, {}}, k{{kv, n, d}, {}}, lse{{heads, n}, {}};
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < n; ++i) {
        for (int c = 0; c < d; ++c) q.data.push_back(static_cast<float>(r.heads[h].q(i, c) / scale));
        lse.data.push_back(r.heads[h].row_max[i] + std::log(r.heads[h].row_sum[i]));
      }
    for (int g = 0; g < kv; ++g)
      for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c) k.data.push_back(r.heads[g * (heads / kv)].k()(i, c));
    attnscope::test::writeSafetensors(file, {{"q", q}, {"k", k}, {"lse", lse}});
  }
  const attnscope::arrays::AttentionTensor from_lse = readCapture(with_lse);
  double worst = 0;
  for (int l = 0; l < plain.forward.layout.n_layer; ++l)
    for (int h = 0; h < heads; ++h)
      worst = std::max(worst, static_cast<double>((from_lse.forward.map(l, h) - plain.forward.map(l, h)).cwiseAbs().maxCoeff()));
  std::printf("maps from the stored log-sum-exp: worst difference %.3g\n", worst);
  EXPECT_LE(worst, 1e-5);
}

// `attnscope view CAPTURE`: the analysis JSON and the grid figure, titled with the captured model's name; the
// tokens are the capture's own (--tokens is refused beside it).
TEST(Capture, ViewReadsACaptureFolder) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("torch");
  const std::string dir = capturedRun({"view", "--family mistral --window 5 --kv-heads 2"});
  const std::string out = model_test::tempDir();
  const model_test::CommandRun r = attnscope::test::runAttnscope("view '" + dir + "/capture' -o '" + out +
                                                                 "/v.json' --grid-out '" + out + "/g.svg'");
  ASSERT_EQ(r.status, 0) << r.err;
  const json v = readJson(out + "/v.json");
  EXPECT_EQ(v["layers"], 2);
  EXPECT_EQ(v["tokens"][0], "<bos>");
  EXPECT_NE(model_test::slurp(out + "/g.svg").find("tiny mistral"), std::string::npos);
  const model_test::CommandRun twice =
      attnscope::test::runAttnscope("view '" + dir + "/capture' --tokens '[\"a\"]'");
  EXPECT_EQ(twice.status, 2);
  EXPECT_NE(twice.err.find("--tokens"), std::string::npos) << twice.err;
}

// Each malformed capture: one line naming the field, nothing read past it.
TEST(Capture, MalformedCapturesAreRefusedNamingTheField) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("torch");
  const std::string dir = capturedRun({"bad", "--family llama --heads 4 --kv-heads 2"});
  const std::string good = dir + "/capture";
  ASSERT_EQ(refusal(good), "");
  struct Case {
    const char* want;  // in the message
    std::function<void(json&)> edit;
  };
  const std::vector<Case> cases = {
      {"format", [](json& j) { j["format"] = "something-else"; }},
      {"version", [](json& j) { j["version"] = 2; }},
      {"n_head", [](json& j) { j.erase("n_head"); }},
      {"n_kv_head", [](json& j) { j["n_kv_head"] = 3; }},
      {"n_tokens", [](json& j) { j["n_tokens"] = 0; }},
      {"scale", [](json& j) { j["scale"] = -1; }},
      {"softcap", [](json& j) { j["softcap"] = -30.0; }},
      {"sliding_window", [](json& j) { j["sliding_window"] = {5}; }},
      {"key_padding", [](json& j) { j["key_padding"] = {1, 0}; }},  // 2 flags for 30 keys
      {"tokens", [](json& j) { j["tokens"].erase(0); }},
      {"files", [](json& j) { j["files"][0] = "../elsewhere.safetensors"; }},
      {"'q' shape", [](json& j) { j["head_dim"] = 9; }},  // the layer file's q is then of another shape
  };
  for (const Case& c : cases) {
    const std::string broken = copyOf(good);
    json j = readJson(broken + "/capture.json");
    c.edit(j);
    writeJson(broken + "/capture.json", j);
    const std::string message = refusal(broken);
    EXPECT_NE(message.find(c.want), std::string::npos) << c.want << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // A NaN in a layer's k.
  const std::string nan = copyOf(good);
  rewriteLayer(nan, 0, "k", 5);
  EXPECT_NE(refusal(nan).find("tensor 'k': expected finite"), std::string::npos) << refusal(nan);
  // v without the heads' rows of W_O: the value norms need both.
  const std::string half = copyOf(good);
  const json info = readJson(half + "/capture.json");
  const int kv = info["n_kv_head"], n = info["n_tokens"], d = info["head_dim"];
  rewriteLayer(half, 0, "", 0, {{"v", {{kv, n, d}, std::vector<float>(static_cast<std::size_t>(kv * n * d), 0.1f)}}});
  EXPECT_NE(refusal(half).find("w_o"), std::string::npos) << refusal(half);
  // Past the memory budget: refused before any layer is read.
  try {
    readCapture(good, 1000);
    ADD_FAILURE() << "a 1000-byte budget read a capture";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("capture.json"), std::string::npos) << e.what();
  }
}

// Opening reads capture.json and each layer file's header only; a layer's numbers are read when a map of it is
// first asked, two layers held at a time. Seen here by breaking layer 1's numbers after the capture is open: layer
// 0's maps still come, layer 1's are refused naming the tensor, and layer 0, dropped for layers 2 and 3, reads
// again.
TEST(Capture, LayersAreReadWhenAsked) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("torch");
  const std::string dir = capturedRun({"lazy", "--family llama --heads 4 --kv-heads 2 --layers 4"});
  const std::string capture = copyOf(dir + "/capture");
  const attnscope::arrays::AttentionTensor t = readCapture(capture);
  const int n = readJson(capture + "/capture.json")["n_tokens"];
  rewriteLayer(capture, 1, "q", 7);
  const json expected = json::parse(model_test::slurp(dir + "/ckpt/expected.json"));
  const Matrix first = t.forward.map(0, 1);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      EXPECT_NEAR(first(i, j), expected["weights"][0][1][i][j].get<double>(), model_test::kWeightTol) << i << "," << j;
  try {
    t.forward.map(1, 0);
    ADD_FAILURE() << "layer 1's NaN was not seen";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'q': expected finite"), std::string::npos) << e.what();
  }
  // Layers 2 and 3 asked: layer 0, the least recently asked, is dropped, and read again when asked.
  EXPECT_NEAR(t.forward.weight(2, 3, n - 1, 0), expected["weights"][2][3][n - 1][0].get<double>(),
              model_test::kWeightTol);
  EXPECT_NEAR(t.forward.weight(3, 2, n - 1, 1), expected["weights"][3][2][n - 1][1].get<double>(),
              model_test::kWeightTol);
  EXPECT_NEAR(t.forward.weight(0, 0, n - 1, 0), expected["weights"][0][0][n - 1][0].get<double>(),
              model_test::kWeightTol);
}

// Value norms from a capture storing v and each head's rows of W_O (two tensor-parallel ranks' columns of o_proj,
// merged): ||v_j W_O^h|| per head and key against NumPy's float64 norms of the same stored weights. The norms are
// worked in double from float32 v and W_O (each rounded once from float64, 2^-24 relative), then rounded to float32:
// a relative error of a few 1e-7. Bar 1e-5 relative. Seen: printed.
TEST(Capture, ValueNormsFromVAndWO) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("torch");
  const std::string dir = capturedRun({"values", "--family llama --heads 4 --kv-heads 2 --capture-values --capture-ranks 2"});
  const json expected = json::parse(model_test::slurp(dir + "/ckpt/expected.json"));
  const attnscope::arrays::AttentionTensor t = readCapture(dir + "/capture");
  double worst = 0;
  for (int l = 0; l < t.forward.layout.n_layer; ++l) {
    const std::shared_ptr<const attnscope::Result> r = t.forward.layerStats(l);
    for (int h = 0; h < t.forward.layout.n_head; ++h) {
      const attnscope::RowVector& norms = r->heads[static_cast<std::size_t>(h)].value_norm;
      ASSERT_EQ(norms.size(), t.forward.n);
      for (int j = 0; j < t.forward.n; ++j) {
        const double want = expected["value_norms"][l][h][j].get<double>();
        worst = std::max(worst, std::abs(norms[j] - want) / want);
      }
    }
  }
  std::printf("value norms from the capture: worst relative error %.3g\n", worst);
  EXPECT_LE(worst, 1e-5);
}

// A padded batch row (capture.json's key_padding, from Capture(attention_mask=...)): the first 3 of 12 keys padded,
// never attended; the rows of padded queries (every key they may see padded) all 0. Against the softmax written out
// here in double over the stored (scaled) q and k: float32 scores of 8-term dots, within 1e-5 (seen printed). With
// the capture's own log-sum-exp too (0 for a row with no allowed key: its cells are masked).
TEST(Capture, PaddedKeysAreNeverAttended) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("torch");
  for (const bool lse : {false, true}) {
    const std::string base = model_test::tempDir(), dir = base + "/capture";
    const std::string script =
        std::string("import sys, torch; sys.path.insert(0, '") + ATTNSCOPE_SOURCE_DIR +
        "/tools/capture'); import attnscope_capture as ac\n"
        "torch.manual_seed(3); n = 12\n"
        "c = ac.Capture(sys.argv[1], model='padded', attention_mask=[0] * 3 + [1] * (n - 3), lse=" +
        (lse ? "True" : "False") +
        ")\n"
        "class M: layer_idx = 0; training = False\n"
        "allowed = torch.ones(n, n, dtype=torch.bool).tril(); allowed[3:, :3] = False\n"
        "c.attention(M(), 2 * torch.randn(1, 4, n, 8), 2 * torch.randn(1, 2, n, 8), torch.randn(1, 2, n, 8),\n"
        "            allowed[None, None], scaling=8 ** -0.5)\n"
        "c.save()\n";
    std::ofstream(base + "/padded.py") << script;
    const model_test::CommandRun r =
        model_test::run(std::string(model_test::kPython) + " '" + base + "/padded.py' '" + dir + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    const attnscope::arrays::AttentionTensor t = readCapture(dir);
    ASSERT_EQ(t.forward.layout.key_padding.size(), 12u);
    const std::shared_ptr<const attnscope::Result> layer = t.forward.layerStats(0);
    double worst = 0;
    for (int h = 0; h < 4; ++h) {
      const attnscope::HeadResult& hr = layer->heads[static_cast<std::size_t>(h)];
      const Matrix got = t.forward.map(0, h);
      for (int i = 0; i < 12; ++i) {
        std::vector<double> w(12, 0.0);
        double top = -INFINITY, sum = 0;
        for (int j = 3; j <= i; ++j) top = std::max(top, static_cast<double>(hr.q.row(i).dot(hr.k().row(j))));
        for (int j = 3; j <= i; ++j) sum += w[j] = std::exp(static_cast<double>(hr.q.row(i).dot(hr.k().row(j))) - top);
        for (int j = 0; j < 12; ++j) {
          const double want = sum > 0 ? w[j] / sum : 0.0;
          worst = std::max(worst, std::abs(got(i, j) - want));
          if (j < 3 || j > i) {
            EXPECT_EQ(got(i, j), 0.0f) << "masked cell " << i << "," << j;
          }
        }
      }
    }
    std::printf("padded keys%s: worst map error %.3g\n", lse ? ", stored lse" : "", worst);
    EXPECT_LE(worst, model_test::kWeightTol);
  }
}

}  // namespace
