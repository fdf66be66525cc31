// Value-norm weighting (Kobayashi et al. 2020) on every family `attnscope model` reads: model::valueNorms and
// the weighted maps alpha_ij * ||(x_j W_V + b_V) W_O^h|| against each family reference's NumPy float64 forward
// (expected.json's "value_norms", computed there from its own v and o_proj; the norm taken before any norm after
// attention: Gemma 2/3's and OLMo 2's post_attention_layernorm, BERT's output LayerNorm), on generated checkpoints
// with grouped-query heads and biases; then `attnscope model --out --weighting value-norm` as JSON and NPY, with
// the maps kept and recomputed from tiles, and its refusal without --out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attnscope/model/head_finding.h"
#include "attnscope/model/model.h"
#include "attnscope/export/export_layout.h"
#include "attnscope/model/model_export.h"
#include "compare.h"
#include "export/test_export_support.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace model = attnscope::model;

namespace {

// weighted = alpha N. Its error is at most |d alpha| N + alpha |d N|, with |d alpha| <= kWeightTol (1e-5: the
// model tests' map tolerance, float32 forward against float64) and alpha <= 1. N = ||x_j W_V O_h + b_V O_h|| reads
// the layer's float32 attention input x_j, within the model tests' 5e-5 per coordinate of float64's (their hidden
// tolerance) on normed rows of about unit scale: a relative change of x of ~5e-5, moved into N by the head's
// gain, which for these random weights stays within a factor of 2 of N's own spread, bounded by kNormRel of the
// head's largest N. Every error is measured as a fraction of that largest N: within kWeightTol + kNormRel.
// Seen (each case prints its own) on the build machine: GPT-2 1.5e-5, every other family at most 3.6e-6; the bar is
// 7x above the worst.
constexpr double kWeightTol = 1e-5, kNormRel = 1e-4;

struct Case {
  const char* script;
  const char* args;
};

// The worst error of the weighted maps of `forward` (valueNorms of each layer) against expected.json's weights
// times its value norms, each head's error as a fraction of its largest norm; asserted within the bar.
double weightedError(const model::Model& m, const model::ForwardResult& forward, const json& expected) {
  const int layers = m.layout().n_layer, heads = m.layout().n_head;
  EXPECT_EQ(expected["value_norms"].size(), static_cast<std::size_t>(layers));
  model::KeyScales scales;
  for (int l = 0; l < layers; ++l) scales.push_back(model::valueNorms(m, forward, l));
  double worst = 0, spread = 0;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const json& e = expected["value_norms"][static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
      const Eigen::MatrixXd alpha = attnscope::test::jsonMatrix(
          expected["weights"][static_cast<std::size_t>(l)][static_cast<std::size_t>(h)]);
      Eigen::RowVectorXd norms(static_cast<Eigen::Index>(e.size()));
      for (std::size_t j = 0; j < e.size(); ++j) norms[static_cast<Eigen::Index>(j)] = e[j].get<double>();
      const double largest = norms.maxCoeff();
      spread = std::max(spread, largest / norms.minCoeff());
      const Eigen::MatrixXd want = alpha.array().rowwise() * norms.array();
      const attnscope::Matrix got = model::weightedMap(forward, l, h, &scales);
      const double error = attnscope::test::maxError(got, want, {}, "weighted map") / largest;
      EXPECT_LE(error, kWeightTol + kNormRel) << "layer " << l << " head " << h;
      worst = attnscope::test::worse(worst, error);
    }
  // The norms differ between keys: a weighting of all ones would have passed nothing.
  EXPECT_GT(spread, 1.2);
  return worst;
}

class ValueNorms : public ::testing::TestWithParam<Case> {};

TEST_P(ValueNorms, WeightedMapsMatchNumPy) {
  const Case c = GetParam();
  const std::string dir = model_test::referenceCheckpoint(c.script, c.args);
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  const model::Model m = model::loadModel(dir);
  const model::ForwardResult f = model::modelForward(m, model_test::idsOf(expected), {.keep_ln1 = true});
  const double worst = weightedError(m, f, expected);
  std::printf("[ %s %s ] value-norm maps vs NumPy: %.2g of the largest norm\n", c.script, c.args, worst);
}

INSTANTIATE_TEST_SUITE_P(
    Families, ValueNorms,
    ::testing::Values(Case{"gpt2_reference.py", ""},  // conv1d, biases on c_attn and c_proj
                      Case{"llama_reference.py", "--family qwen2 --attention-bias --heads 4 --kv-heads 2"},
                      Case{"llama_reference.py", "--family llama --attention-bias --heads 8 --kv-heads 2 --tie"},
                      Case{"neox_reference.py", ""},                    // fused, interleaved query_key_value
                      Case{"gemma_reference.py", "--family gemma"},     // tied, no sandwich norms
                      Case{"gemma_reference.py", "--family gemma2"},    // sandwich norms, soft cap
                      Case{"gemma_reference.py", "--family gemma3"},    // sandwich norms, q/k norms
                      Case{"llama_kin_reference.py", "--family phi3"},     // fused qkv_proj
                      Case{"llama_kin_reference.py", "--family olmo2"},    // no input norm, post norms
                      Case{"llama_kin_reference.py", "--family mixtral"},  // grouped heads, routed MLP
                      Case{"bert_reference.py", ""},                    // post-norm encoder, not causal
                      Case{"bert_reference.py", "--family roberta"}),
    [](const ::testing::TestParamInfo<Case>& param) {  // gpt2_reference_py_0, llama_reference_py_1, ...
      std::string name = std::string(param.param.script) + "_" + std::to_string(param.index);
      std::replace(name.begin(), name.end(), '.', '_');
      return name;
    });

// The figure of the weighted grid (the window's Export tab, every layer): each panel alpha_ij * norm(h, j) as
// NumPy works it out, titled and labelled as weighted, its Fixed bar up to the largest norm; the same when the
// forward kept no maps (each map recomputed from Q and K, then pooled per pixel: here a pixel or more a cell, so
// each pool is one cell), with the same masked cells.
TEST(ValueNormsFigure, GridPanelsAreNumPysWeightedMapsKeptOrNot) {
  const std::string dir = model_test::referenceCheckpoint("gpt2_reference.py", "");
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  const model::Model m = model::loadModel(dir);
  const std::vector<int> ids = model_test::idsOf(expected);
  const model::HeadLayout c = m.layout();
  const std::vector<std::string> tokens(ids.size(), "t");
  double top = 0;
  for (const auto& layer : expected["value_norms"])
    for (const auto& head : layer)
      for (const auto& v : head) top = std::max(top, v.get<double>());
  std::vector<attnscope::Figure> figures;
  for (const attnscope::MapPolicy maps : {attnscope::MapPolicy::Keep, attnscope::MapPolicy::Drop}) {
    const model::ForwardResult f = model::modelForward(m, ids, {.keep_ln1 = true, .maps = maps});
    ASSERT_EQ(f.keepsMaps(), maps == attnscope::MapPolicy::Keep);
    model::KeyScales norms;
    for (int l = 0; l < c.n_layer; ++l) norms.push_back(model::valueNorms(m, f, l));
    figures.push_back(model::modelGridFigure(f, c, tokens, -1, {}, "GPT-2", &norms));
    const attnscope::Figure& fig = figures.back();
    EXPECT_EQ(fig.title, "GPT-2: attention weights x value norms, " + std::to_string(c.n_layer) + " layers x " +
                             std::to_string(c.n_head) + " heads");
    EXPECT_EQ(fig.scale_label, "weight x value norm");
    // float32 norms within kNormRel of NumPy's (WeightedMapsMatchNumPy above)
    EXPECT_NEAR(fig.vmax, top, kNormRel * top);
    ASSERT_EQ(fig.panels.size(), static_cast<std::size_t>(c.n_layer * c.n_head));
    double worst = 0;
    for (int l = 0; l < c.n_layer; ++l)
      for (int h = 0; h < c.n_head; ++h) {
        const auto& vn = expected["value_norms"][l][h];
        double largest = 0;
        for (const auto& v : vn) largest = std::max(largest, v.get<double>());
        const attnscope::HeatmapPanel& p = fig.panels[static_cast<std::size_t>(l * c.n_head + h)];
        ASSERT_EQ(p.values.rows(), static_cast<Eigen::Index>(ids.size()));
        for (Eigen::Index i = 0; i < p.values.rows(); ++i)
          for (Eigen::Index j = 0; j <= i; ++j) {  // causal: the rest masked
            const double want = expected["weights"][l][h][i][j].get<double>() * vn[j].get<double>();
            worst = std::max(worst, std::abs(p.values(i, j) - want) / largest);
          }
      }
    EXPECT_LE(worst, kWeightTol + kNormRel);
    std::printf("weighted grid figure (maps %s) vs NumPy: %.2g of the head's largest norm\n",
                maps == attnscope::MapPolicy::Keep ? "kept" : "recomputed", worst);
  }
  for (std::size_t k = 0; k < figures[0].panels.size(); ++k)
    EXPECT_EQ(figures[0].panels[k].masked, figures[1].panels[k].masked) << "panel " << k;
}

// The command: --out as JSON and NPY, maps kept and past a 1 KiB maps limit (recomputed from tiles), against
// NumPy's weights times norms on a grouped-query Qwen2 checkpoint with biases.
TEST(ValueNormsCli, JsonAndNpyMatchNumPy) {
  const std::string dir =
      model_test::referenceCheckpoint("llama_reference.py", "--family qwen2 --attention-bias --heads 4 --kv-heads 2");
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  const std::size_t layers = expected["weights"].size(), heads = expected["weights"][0].size(),
                    n = expected["ids"].size();
  const auto want = [&](std::size_t l, std::size_t h) {
    Eigen::RowVectorXd norms(static_cast<Eigen::Index>(n));
    for (std::size_t j = 0; j < n; ++j) norms[static_cast<Eigen::Index>(j)] = expected["value_norms"][l][h][j].get<double>();
    return std::pair<Eigen::MatrixXd, double>(
        attnscope::test::jsonMatrix(expected["weights"][l][h]).array().rowwise() * norms.array(), norms.maxCoeff());
  };
  for (const char* limit : {"", "ATTNSCOPE_MAPS_LIMIT=1K "}) {
    const std::string out = model_test::tempDir();
    const model_test::CommandRun r = model_test::run(
        std::string(limit) + "'" + ATTNSCOPE_BINARY + "' model '" + dir + "' --text 'Hello there, attention heads!'" +
        " --out '" + out + "/r.json' --weighting value-norm");
    ASSERT_EQ(r.status, 0) << r.err;
    const model_test::CommandRun rn = model_test::run(
        std::string(limit) + "'" + ATTNSCOPE_BINARY + "' model '" + dir + "' --text 'Hello there, attention heads!'" +
        " --out '" + out + "/r.npy' --weighting value-norm");
    ASSERT_EQ(rn.status, 0) << rn.err;
    const json j = json::parse(model_test::slurp(out + "/r.json"));
    EXPECT_EQ(j["token_ids"], expected["ids"]);
    EXPECT_EQ(j["weighting"], "value-norm");
    const attnscope::testing::Npy npy = attnscope::testing::decodeNpy(model_test::slurp(out + "/r.npy"));
    ASSERT_EQ(npy.values.size(), layers * heads * n * n);
    double worst = 0;
    for (std::size_t l = 0; l < layers; ++l)
      for (std::size_t h = 0; h < heads; ++h) {
        const auto [w, largest] = want(l, h);
        const double e = attnscope::test::maxError(attnscope::test::jsonMatrix(j["layers"][l]["heads"][h]), w, {}, "json") / largest;
        const Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> got(
            npy.values.data() + ((l * heads + h) * n * n), static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(n));
        const double en = attnscope::test::maxError(got, w, {}, "npy") / largest;
        EXPECT_LE(e, kWeightTol + kNormRel) << "layer " << l << " head " << h;
        EXPECT_LE(en, kWeightTol + kNormRel) << "layer " << l << " head " << h;
        worst = attnscope::test::worse(worst, std::max(e, en));
      }
    // The rollout stays the weights' (rows summing to 1).
    EXPECT_NEAR(attnscope::test::jsonMatrix(j["rollout"]).row(static_cast<Eigen::Index>(n) - 1).sum(), 1.0, 1e-5);
    std::printf("%sCLI value-norm JSON and NPY vs NumPy: %.2g of the largest norm\n", limit, worst);
  }
  // Without --out there is nothing to weight: refused, one line naming the flag, exit 2.
  const model_test::CommandRun bad =
      model_test::run("'" + std::string(ATTNSCOPE_BINARY) + "' model '" + dir + "' --text hi --weighting value-norm");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--weighting"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  const model_test::CommandRun typo = model_test::run("'" + std::string(ATTNSCOPE_BINARY) + "' model '" + dir +
                                                      "' --text hi --out /dev/null.json --weighting norm");
  EXPECT_EQ(typo.status, 2);
  EXPECT_NE(typo.err.find("--weighting"), std::string::npos) << typo.err;
}

}  // namespace
