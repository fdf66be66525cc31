// `attnscope import` end to end: each layout's state dict, written by the test as safetensors and converted to
// .npz by NumPy, becomes a scene whose computed weights equal the framework's own formula written out here in
// double (and PyTorch's nn.MultiheadAttention itself where torch imports); hostile files exit 2 with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <random>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/scene/scene_json.h"
#include "cli/import_view_support.h"

using namespace attnscope;
using attnscope::test::TestTensor;

namespace {

using Mat = Eigen::MatrixXd;  // the reference's own column-major double matrices

TestTensor randomTensor(std::vector<std::int64_t> shape, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.6f);
  std::size_t count = 1;
  for (std::int64_t s : shape) count *= static_cast<std::size_t>(s);
  TestTensor t{std::move(shape), std::vector<float>(count)};
  for (float& v : t.data) v = normal(rng);
  return t;
}

// A 2-D tensor (rows, cols) in C order as a double matrix.
Mat asMat(const TestTensor& t) {
  Mat m(t.shape[0], t.shape[1]);
  for (int r = 0; r < m.rows(); ++r)
    for (int c = 0; c < m.cols(); ++c) m(r, c) = t.data[static_cast<std::size_t>(r * m.cols() + c)];
  return m;
}

// softmax(q k^T * scale) with key j > i masked when causal.
Mat softmaxWeights(const Mat& q, const Mat& k, double scale, bool causal) {
  Mat s = q * k.transpose() * scale;
  for (int i = 0; i < s.rows(); ++i) {
    double top = -1e300;
    for (int j = 0; j < s.cols(); ++j)
      if (!causal || j <= i) top = std::max(top, s(i, j));
    double sum = 0;
    for (int j = 0; j < s.cols(); ++j) sum += s(i, j) = (!causal || j <= i) ? std::exp(s(i, j) - top) : 0.0;
    s.row(i) /= sum;
  }
  return s;
}

std::vector<Mat> computedWeights(const std::string& scene_path) {
  const Scene scene = loadSceneFile(scene_path);
  CpuBackend cpu(1);
  Result result;
  cpu.computeInto(scene, result);
  std::vector<Mat> maps;
  for (const HeadResult& h : result.heads) maps.push_back(h.weights.cast<double>());
  return maps;
}

double maxError(const std::vector<Mat>& got, const std::vector<Mat>& want) {
  EXPECT_EQ(got.size(), want.size());
  double error = 0;
  for (std::size_t h = 0; h < got.size() && h < want.size(); ++h) error = std::max(error, (got[h] - want[h]).cwiseAbs().maxCoeff());
  return error;
}

constexpr int kN = 5, kE = 8, kHeads = 2, kHd = kE / kHeads;
// float32 engine against the double formula: seen 1.6e-7 at most (torch-mha) on these sizes.
constexpr double kTolerance = 1e-5;

// Writes `tensors` as FILE.safetensors and NumPy's FILE.npz; runs import on both with `args`; both scenes'
// weights must equal `want`.
void expectImportGives(const std::map<std::string, TestTensor>& tensors, const std::string& args,
                       const std::vector<Mat>& want) {
  const std::string dir = test::tempDir("import");
  test::writeSafetensors(dir + "/layer.safetensors", tensors);
  std::vector<std::string> files = {dir + "/layer.safetensors"};
  const test::CommandRun npz = test::safetensorsToNpz(dir + "/layer.safetensors", dir + "/layer.npz");
  if (npz.status == 0) files.push_back(dir + "/layer.npz");
  else if (test::underCi()) ADD_FAILURE() << "NumPy could not write the .npz: " << npz.err;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const test::CommandRun r = test::runAttnscope("import '" + file + "' " + args +
                                                  " --tokens a,b,c,d,e --scene-out '" + dir + "/s.json'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_LT(maxError(computedWeights(dir + "/s.json"), want), kTolerance);
  }
}

}  // namespace

TEST(ImportCli, TorchMhaEqualsTheTorchFormula) {
  std::mt19937 rng(11);
  std::map<std::string, TestTensor> t = {{"in_proj_weight", randomTensor({3 * kE, kE}, rng)},
                                         {"in_proj_bias", randomTensor({3 * kE}, rng)},
                                         {"out_proj.weight", randomTensor({kE, kE}, rng)},
                                         {"out_proj.bias", randomTensor({kE}, rng)},
                                         {"x", randomTensor({kN, kE}, rng)}};
  // qkv = x W_in^T + b_in; q, k = the first two blocks of E; head i = columns i*hd .. (i+1)*hd.
  const Mat x = asMat(t["x"]), w = asMat(t["in_proj_weight"]);
  Mat qkv = x * w.transpose();
  for (int c = 0; c < 3 * kE; ++c) qkv.col(c).array() += t["in_proj_bias"].data[static_cast<std::size_t>(c)];
  std::vector<Mat> want;
  for (int h = 0; h < kHeads; ++h)
    want.push_back(softmaxWeights(qkv.middleCols(h * kHd, kHd), qkv.middleCols(kE + h * kHd, kHd),
                                  1.0 / std::sqrt(kHd), false));
  expectImportGives(t, "--layout torch-mha --heads 2", want);
}

TEST(ImportCli, Seed002FusedEqualsItsCausalFormula) {
  std::mt19937 rng(12);
  std::map<std::string, TestTensor> t = {{"attn.weight", randomTensor({3 * kE, kE}, rng)},
                                         {"attn.bias", randomTensor({3 * kE}, rng)},
                                         {"x", randomTensor({kN, kE}, rng)}};
  const Mat x = asMat(t["x"]);
  Mat qkv = x * asMat(t["attn.weight"]).transpose();
  for (int c = 0; c < 3 * kE; ++c) qkv.col(c).array() += t["attn.bias"].data[static_cast<std::size_t>(c)];
  // qkv.split(n_embd) then view(B, T, heads, d_h); the seed's tril buffer masks the future.
  std::vector<Mat> want;
  for (int h = 0; h < kHeads; ++h)
    want.push_back(softmaxWeights(qkv.middleCols(h * kHd, kHd), qkv.middleCols(kE + h * kHd, kHd),
                                  1.0 / std::sqrt(kHd), true));
  expectImportGives(t, "--layout fused-qkv-002 --heads 2", want);
}

TEST(ImportCli, Seed003FusedEqualsItsFormula) {
  std::mt19937 rng(13);
  std::map<std::string, TestTensor> t = {{"qkv_linear.weight", randomTensor({3 * kE, kE}, rng)},
                                         {"qkv_linear.bias", randomTensor({3 * kE}, rng)},
                                         {"fc_out.weight", randomTensor({kE, kE}, rng)},
                                         {"x", randomTensor({kN, kE}, rng)}};
  const Mat x = asMat(t["x"]);
  Mat qkv = x * asMat(t["qkv_linear.weight"]).transpose();
  for (int c = 0; c < 3 * kE; ++c) qkv.col(c).array() += t["qkv_linear.bias"].data[static_cast<std::size_t>(c)];
  // reshape(B, T, heads, 3 d_h) then chunk(3): head i's q are columns 3 d_h i .. + d_h, its k the next d_h.
  std::vector<Mat> want;
  for (int h = 0; h < kHeads; ++h)
    want.push_back(softmaxWeights(qkv.middleCols(3 * kHd * h, kHd), qkv.middleCols(3 * kHd * h + kHd, kHd),
                                  1.0 / std::sqrt(kHd), false));
  expectImportGives(t, "--layout fused-qkv-003 --heads 2", want);
}

TEST(ImportCli, KerasMhaEqualsItsEinsumFormula) {
  std::mt19937 rng(14);
  const int key_dim = 3, value_dim = 5;
  std::map<std::string, TestTensor> t = {{"query/kernel", randomTensor({kE, kHeads, key_dim}, rng)},
                                         {"query/bias", randomTensor({kHeads, key_dim}, rng)},
                                         {"key/kernel", randomTensor({kE, kHeads, key_dim}, rng)},
                                         {"key/bias", randomTensor({kHeads, key_dim}, rng)},
                                         {"value/kernel", randomTensor({kE, kHeads, value_dim}, rng)},
                                         {"attention_output/kernel", randomTensor({kHeads, value_dim, kE}, rng)},
                                         {"x", randomTensor({kN, kE}, rng)}};
  // Keras: q[t, h, d] = sum_e x[t, e] K[e, h, d] + b[h, d]; scores scaled by 1/sqrt(key_dim).
  const Mat x = asMat(t["x"]);
  const auto project = [&](const std::string& name, int h) {
    const TestTensor& k = t[name + "/kernel"];
    const TestTensor& b = t[name + "/bias"];
    Mat out(kN, key_dim);
    for (int i = 0; i < kN; ++i)
      for (int d = 0; d < key_dim; ++d) {
        double v = b.data[static_cast<std::size_t>(h * key_dim + d)];
        for (int e = 0; e < kE; ++e) v += x(i, e) * k.data[static_cast<std::size_t>((e * kHeads + h) * key_dim + d)];
        out(i, d) = v;
      }
    return out;
  };
  std::vector<Mat> want;
  for (int h = 0; h < kHeads; ++h)
    want.push_back(softmaxWeights(project("query", h), project("key", h), 1.0 / std::sqrt(key_dim), false));
  expectImportGives(t, "--layout keras-mha", want);
}

TEST(ImportCli, TorchMultiheadAttentionItselfAgrees) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("torch");  // Debian's python3-torch, installed by setup-deps.sh --test
  // PyTorch saves its own state dict and x, and its own per-head weights (average_attn_weights=False).
  const std::string dir = test::tempDir("import_torch");
  const test::CommandRun py = test::run(
      "/usr/bin/python3 -c \"import sys, numpy as np, torch\n"
      "torch.manual_seed(0); m = torch.nn.MultiheadAttention(8, 2, batch_first=True); x = torch.randn(1, 6, 8)\n"
      "_, w = m(x, x, x, need_weights=True, average_attn_weights=False)\n"
      "np.savez(sys.argv[1] + '/layer.npz', x=x[0].numpy(), **{k: v.detach().numpy() for k, v in m.state_dict().items()})\n"
      "np.save(sys.argv[1] + '/torch_weights.npy', w[0].detach().numpy())\" '" + dir + "'");
  ASSERT_EQ(py.status, 0) << py.err;
  const test::CommandRun r = test::runAttnscope("import '" + dir + "/layer.npz' --layout torch-mha --heads 2 "
                                                "--text 'a b c d e f' --scene-out '" + dir + "/s.json'");
  ASSERT_EQ(r.status, 0) << r.err;
  // Torch's weights read back through NumPy's own text output, not through attnscope's reader.
  const test::CommandRun dump = test::run("/usr/bin/python3 -c \"import numpy as np, sys\n"
                                          "print(' '.join(repr(float(v)) for v in np.load(sys.argv[1]).ravel()))\" '" +
                                          dir + "/torch_weights.npy'");
  ASSERT_EQ(dump.status, 0) << dump.err;
  std::istringstream values(dump.out);
  const std::vector<Mat> got = computedWeights(dir + "/s.json");
  ASSERT_EQ(got.size(), 2u);
  double error = 0;
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) {
        double v = 0;
        values >> v;
        error = std::max(error, std::abs(got[static_cast<std::size_t>(h)](i, j) - v));
      }
  EXPECT_LT(error, 1e-5);  // both float32; seen 3e-8
}

TEST(ImportCli, HostileFilesExitTwoNamingTheKey) {
  std::mt19937 rng(15);
  const std::string dir = test::tempDir("import_hostile");
  std::map<std::string, TestTensor> good = {{"attn.weight", randomTensor({3 * kE, kE}, rng)},
                                            {"x", randomTensor({kN, kE}, rng)}};
  const auto importFile = [&](const std::string& file, const std::string& heads = "2",
                              const std::string& tokens = "a,b,c,d,e") {
    return test::runAttnscope("import '" + file + "' --layout fused-qkv-002 --heads " + heads + " --tokens " + tokens +
                              " --scene-out '" + dir + "/s.json'");
  };
  const auto expectRefusal = [&](const test::CommandRun& r, const std::string& mentions) {
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::ifstream(dir + "/s.json").good());
  };
  auto missing = good;
  missing.erase("attn.weight");
  test::writeSafetensors(dir + "/missing.safetensors", missing);
  expectRefusal(importFile(dir + "/missing.safetensors"), "'attn.weight': expected a tensor");
  auto wrong = good;
  wrong["attn.weight"] = randomTensor({3 * kE, kE + 1}, rng);
  test::writeSafetensors(dir + "/wrong.safetensors", wrong);
  expectRefusal(importFile(dir + "/wrong.safetensors"), "'attn.weight': expected shape (3E, E), got shape (24, 9)");
  auto wrong_x = good;
  wrong_x["x"] = randomTensor({kN, kE - 1}, rng);
  test::writeSafetensors(dir + "/x.safetensors", wrong_x);
  expectRefusal(importFile(dir + "/x.safetensors"), "'x': expected shape (5, 8), got shape (5, 7)");
  auto nan = good;
  nan["attn.weight"].data[7] = std::nanf("");
  test::writeSafetensors(dir + "/nan.safetensors", nan);
  expectRefusal(importFile(dir + "/nan.safetensors"), "'attn.weight': expected finite");
  test::writeSafetensors(dir + "/good.safetensors", good);
  expectRefusal(importFile(dir + "/good.safetensors", "2", "a,b"), "--tokens: expected 5 tokens (one per row of x), got 2");
  expectRefusal(importFile(dir + "/good.safetensors", "3"), "--heads: expected a divisor of E = 8");
  std::ofstream(dir + "/not.npz") << "this is not a zip archive at all, just text";
  expectRefusal(importFile(dir + "/not.npz"), "not a zip");
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  ASSERT_EQ(test::safetensorsToNpz(dir + "/good.safetensors", dir + "/good.npz").status, 0);
  const std::string bytes = test::slurp(dir + "/good.npz");
  std::ofstream(dir + "/cut.npz", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expectRefusal(importFile(dir + "/cut.npz"), "cut.npz: expected a zip archive");
  ASSERT_EQ(test::safetensorsToNpz(dir + "/good.safetensors", dir + "/small.npz", true).status, 0);
  expectRefusal(importFile(dir + "/small.npz"), "np.savez_compressed");
  ASSERT_EQ(test::run("/usr/bin/python3 -c \"import numpy as np, sys\n"
                      "np.savez(sys.argv[1], **{'attn.weight': np.zeros((24, 8), np.int32), 'x': np.zeros((5, 8), np.float32)})\" '" +
                      dir + "/int.npz'").status, 0);
  expectRefusal(importFile(dir + "/int.npz"), "int.npz: 'attn.weight': expected a float array (float32, float64 or float16), got int32 of shape (24, 8)");
}
