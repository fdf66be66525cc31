// Which heads matter (model/patching.h): ablation and activation patching on tiny checkpoints, every number against
// tests/model/patching_reference.py, an independent float64 NumPy run of each intervention as a whole forward from
// layer 0 with a hook (the reference scripts' own forwards), where attnscope reruns from the intervened layer on.
//
// Tolerance, from the arithmetic: the engine's final hidden states are within kHiddenTol (5e-5, test_model_support.h,
// float32 against float64 through every layer) of NumPy's; a logit h . W_U[t] then moves by at most kHiddenTol
// sum_k |W_U[t, k]|, so a logit difference, a log-probability (a logit less a log-sum-exp, which moves no more than
// the largest logit) or a mean next-token loss by at most 2 kHiddenTol max_t sum_k |W_U[t, k]| (the reference's
// unembed_l1). An encoder's logits read the last layer through its masked-LM head: bert_reference.py bounds how far
// a logit moves per unit of error there (dense, GELU, LayerNorm, word embedding, in 2-norms) and writes that as
// unembed_l1: bars of 0.047 (BERT) and 0.048 (RoBERTa) against errors seen up to 1.1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/model/patching.h"
#include "compare.h"
#include "model/test_model_support.h"

namespace model = attnscope::model;
using nlohmann::json;

namespace {

std::string idsText(const std::vector<int>& ids) { return json(ids).dump(); }

// patching_reference.py's numbers for the checkpoint in `dir`.
json referenceOf(const std::string& dir, const std::vector<int>& clean, const std::vector<int>* corrupt,
                 const std::string& metric, const std::string& more) {
  const std::string out = model_test::tempDir() + "/patch.json";
  std::string command = std::string(model_test::kPython) + " '" + ATTNSCOPE_SOURCE_DIR +
                        "/tests/model/patching_reference.py' '" + dir + "' --ids '" + idsText(clean) + "' --metric " +
                        metric + " --out '" + out + "' " + more;
  if (corrupt) command += " --corrupt '" + idsText(*corrupt) + "'";
  const model_test::CommandRun r = model_test::run(command);
  if (r.status != 0) throw std::runtime_error("patching_reference.py failed: " + r.err);
  return json::parse(model_test::slurp(out));
}

double worstOf(const Eigen::MatrixXd& got, const json& want) {
  double worst = 0;
  EXPECT_EQ(got.rows(), static_cast<Eigen::Index>(want.size()));
  for (Eigen::Index i = 0; i < got.rows() && i < static_cast<Eigen::Index>(want.size()); ++i) {
    const json& row = want[static_cast<std::size_t>(i)];
    const std::size_t cols = row.is_array() ? row.size() : 1;
    EXPECT_EQ(got.cols(), static_cast<Eigen::Index>(cols));
    for (Eigen::Index j = 0; j < got.cols() && j < static_cast<Eigen::Index>(cols); ++j)
      worst = attnscope::test::worse(
          worst, attnscope::test::valueError(got(i, j), (row.is_array() ? row[static_cast<std::size_t>(j)] : row).get<double>()));
  }
  return worst;
}

// One run of interventions: a metric (the loss from `position` on, or at it) and what is done ("zero" or "mean"
// ablation, "mean-over" ablation to the means over a reference text (referenceIds), "denoise" or "noise" patching).
struct PatchRun {
  const char* metric;
  const char* what;
  int position = -1;
  bool patches() const { return std::string(what) == "denoise" || std::string(what) == "noise"; }
  bool referenced() const { return std::string(what) == "mean-over"; }
};

// The reference text of a "mean-over" run: another text of another length (the corrupt one less its last 2 tokens).
std::vector<int> referenceIds(const std::vector<int>& corrupt) { return {corrupt.begin(), corrupt.end() - 2}; }

// attnscope's numbers of `run` on `m` against the reference's `want` (patching_reference.py's dict), within the
// header's tolerance; and the metric moved somewhere by far more than it (a test of something).
void expectRunMatches(const model::Model& m, const std::vector<int>& clean, const std::vector<int>& corrupt,
                      const PatchRun& run, const json& want, const std::string& name) {
  model::PatchMetric metric = model::parsePatchMetric(m, run.metric);
  metric.position = run.position;
  const bool patch = run.patches();
  model::PatchOptions options;
  if (run.referenced()) options.reference = referenceIds(corrupt);
  const model::PatchMaps got =
      patch ? model::patchActivations(m, clean, corrupt, metric, std::string(run.what) == "denoise")
            : model::ablateHeads(m, clean, metric,
                                 std::string(run.what) == "zero" ? model::Ablation::Zero : model::Ablation::Mean,
                                 options);
  const double tol = 2 * model_test::kHiddenTol * want["unembed_l1"].get<double>();
  double worst = attnscope::test::valueError(got.clean, want["clean"].get<double>());
  if (patch) worst = attnscope::test::worse(worst, attnscope::test::valueError(got.corrupt, want["corrupt"].get<double>()));
  worst = attnscope::test::worse(worst, worstOf(got.heads, want["heads"]));
  worst = attnscope::test::worse(worst, worstOf(got.layers, want["layers"]));
  worst = attnscope::test::worse(worst, worstOf(got.mlp, want["mlp"]));
  if (patch) worst = attnscope::test::worse(worst, worstOf(got.residual, want["residual"]));
  std::printf("%s %s %s: worst error %.3g (tolerance %.3g), clean %.4f\n", name.c_str(), run.metric, run.what, worst,
              tol, got.clean);
  EXPECT_LE(worst, tol);
  const double base = patch && std::string(run.what) == "denoise" ? got.corrupt : got.clean;
  EXPECT_GT((got.heads.array() - base).abs().maxCoeff(), 10 * tol);
  EXPECT_GT((got.mlp.array() - base).abs().maxCoeff(), 10 * tol);  // the MLPs matter too: their edit is seen
}

const std::vector<PatchRun> kRuns{{"logit-diff:5,7", "denoise"}, {"logprob:9", "noise"}, {"loss", "zero"},
                                  {"logit-diff:3,11", "mean"}, {"loss", "mean", 4}, {"logprob:9", "mean-over"}};

struct Case {
  const char* name;
  const char* script;
  const char* args;
};

class PatchingReference : public ::testing::TestWithParam<Case> {};

// Ablation (zero, mean) on the clean text and patching both ways between it and a corrupt one (one token changed
// near the end), on logit difference, log-probability and loss: every head, every layer's heads at once, every layer's
// MLP and (for patching) the residual stream at every (layer, position); a mean ablation over a reference text.
TEST_P(PatchingReference, EveryInterventionEqualsNumPy) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const std::string dir = model_test::referenceCheckpoint(GetParam().script, GetParam().args);
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  const std::vector<int> clean = model_test::idsOf(expected);
  std::vector<int> corrupt = clean;
  corrupt[corrupt.size() - 3] = (corrupt[corrupt.size() - 3] + 17) % 200;
  const model::Model m = model::loadModel(dir);
  for (const PatchRun& run : kRuns) {
    SCOPED_TRACE(std::string(run.metric) + " " + run.what);
    const std::string how = run.patches()      ? std::string("--direction ") + run.what
                            : run.referenced() ? "--ablate mean --reference '" + idsText(referenceIds(corrupt)) + "'"
                                               : std::string("--ablate ") + run.what;
    const json want = referenceOf(dir, clean, run.patches() ? &corrupt : nullptr, run.metric,
                                  how + " --position " + std::to_string(run.position));
    expectRunMatches(m, clean, corrupt, run, want, GetParam().name);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Families, PatchingReference,
    ::testing::Values(Case{"gpt2", "gpt2_reference.py", "--tokens 12"},
                      Case{"llama_gqa", "llama_reference.py", "--family llama --heads 4 --kv-heads 2 --text 'The cat sat.'"},
                      Case{"mistral_window", "llama_reference.py",
                           "--family mistral --heads 4 --kv-heads 2 --window 4 --text 'A dog ran far.'"}),
    [](const ::testing::TestParamInfo<Case>& c) { return std::string(c.param.name); });

// The families whose reference scripts run the interventions themselves (--patch: patching_reference.run_specs on
// their own forwards): Gemma 2 (attention and final logit soft caps, sandwich norms, a sliding window, GQA),
// Mixtral (routed experts), and the encoders BERT and RoBERTa (post-norm, no mask; the metric through the masked-LM
// head, the loss each position's own token's). The ids: 256, then one per byte of the text (below every vocabulary
// here; RoBERTa's padding id 1 is none of them).
struct SelfPatchingCase {
  const char* name;
  const char* script;
  const char* args;
};

class PatchingSelfReference : public ::testing::TestWithParam<SelfPatchingCase> {};

TEST_P(PatchingSelfReference, EveryInterventionEqualsNumPy) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const std::string text = "Heads at work.";
  std::vector<int> clean{256};
  for (unsigned char b : text) clean.push_back(b);
  std::vector<int> corrupt = clean;
  corrupt[corrupt.size() - 3] = 'x';
  json specs = json::array();
  for (const PatchRun& run : kRuns) {
    json spec{{"ids", clean}, {"metric", run.metric}, {"position", run.position}};
    if (run.patches()) spec["corrupt"] = corrupt, spec["direction"] = run.what;
    else if (run.referenced()) spec["ablate"] = "mean", spec["reference"] = referenceIds(corrupt);
    else spec["ablate"] = run.what;
    specs.push_back(spec);
  }
  const std::string dir = model_test::referenceCheckpoint(
      GetParam().script, std::string(GetParam().args) + " --text '" + text + "' --patch '" + specs.dump() + "'");
  const json all = json::parse(model_test::slurp(dir + "/patch.json"));
  ASSERT_EQ(all.size(), kRuns.size());
  const model::Model m = model::loadModel(dir);
  for (std::size_t k = 0; k < kRuns.size(); ++k) {
    SCOPED_TRACE(std::string(kRuns[k].metric) + " " + kRuns[k].what);
    expectRunMatches(m, clean, corrupt, kRuns[k], all[k], GetParam().name);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Families, PatchingSelfReference,
    ::testing::Values(SelfPatchingCase{"gemma2_softcaps", "gemma_reference.py", "--family gemma2 --softcap 1"},
                      SelfPatchingCase{"mixtral_experts", "llama_kin_reference.py", "--family mixtral"},
                      SelfPatchingCase{"bert_masked_lm", "bert_reference.py", "--family bert"},
                      SelfPatchingCase{"roberta_masked_lm", "bert_reference.py", "--family roberta"}),
    [](const ::testing::TestParamInfo<SelfPatchingCase>& c) { return std::string(c.param.name); });

// An encoder saved without its masked-LM head (BertModel's names, no cls.predictions.*) has no metric: refused in one
// line naming the first tensor missing.
TEST(Patching, AnEncoderWithoutItsHeadIsRefused) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const model::Model bert = model::loadModel(model_test::referenceCheckpoint("bert_reference.py", "--no-prefix"));
  try {
    model::ablateHeads(bert, {2, 7, 3}, model::PatchMetric{}, model::Ablation::Zero);
    ADD_FAILURE() << "an encoder without its head was ablated";
  } catch (const attnscope::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cls.predictions.transform.dense.weight"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(Patching, MetricsAreReadAsIdsOrOneTokenTexts) {
  const model::Model m = model::loadModel(model_test::tinyCheckpoint());
  const model::PatchMetric d = model::parsePatchMetric(m, "logit-diff:5,7");
  EXPECT_EQ(d.kind, model::PatchMetric::Kind::LogitDiff);
  EXPECT_EQ(d.target, 5);
  EXPECT_EQ(d.other, 7);
  EXPECT_EQ(model::parsePatchMetric(m, "loss").kind, model::PatchMetric::Kind::Loss);
  const std::vector<int> a = m.tokenizer.encode("a", false);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(model::parsePatchMetric(m, "logprob:a").target, a[0]);
  for (const char* bad : {"logit-diff:5", "logprob:", "entropy", "logprob:999999", "logprob:-3", "logit-diff:5,hello world"}) {
    try {
      model::parsePatchMetric(m, bad);
      ADD_FAILURE() << bad << " was taken";
    } catch (const attnscope::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--metric"), std::string::npos) << e.what();
    }
  }
}

TEST(Patching, TextsOfDifferentLengthsAreRefused) {
  const model::Model m = model::loadModel(model_test::tinyCheckpoint());
  EXPECT_THROW(model::patchActivations(m, {1, 2, 3}, {1, 2}, model::PatchMetric{}, true), attnscope::InputError);
}

}  // namespace
