// Finding heads across a checkpoint, end to end through `attnscope model --analysis-out`: every head-type score
// of every layer and head, and the composition of every earlier head with every later one, against
// head_finding_reference.py's NumPy float64 (its own forward for the maps, dense d x d products per pair for
// composition), on GPT-2 (biases, conv1d, tied) and Qwen2 (grouped-query heads, biases) checkpoints, with the
// maps kept and past a 1 KiB maps limit (every score then read from recomputed tiles); direct logit
// attribution's parts and their sum against NumPy's logit (tied and untied unembeddings, LayerNorm and RMSNorm);
// the repeated random text and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "attnscope/model/head_finding.h"
#include "attnscope/model/model.h"
#include "model/test_model_support.h"

using nlohmann::json;

namespace {

// A score is a mean of row sums of at most n weights, each within kWeightTol (1e-5) of NumPy's (the model
// tests' map tolerance: float32 forward against float64), so within n x 1e-5 for the n <= 40 tokens here.
constexpr double kScoreTolPerWeight = 1e-5;
// Composition: the engine in double from the same stored float32 weights as NumPy's float64. Each score^2 is a
// sum of at most d^2 = 1024 products, relative rounding <= 1024 x 1.1e-16 of a value <= 1, so a score >= 0.01
// is within 1e-10; 1e-8 leaves a margin. Seen on the AVX-512 build machine: scores 6.3e-7 (GPT-2) and 8.2e-8
// (Qwen2), composition 8.3e-17, logit attribution 7.8e-6 against a bound of 7.9e-4 (GPT-2's ||u||_1 = 15.8).
constexpr double kCompositionTol = 1e-8;

json analysis(const std::string& dir, const std::string& input, const char* limit = "") {
  const std::string out = model_test::tempDir() + "/a.json";
  const model_test::CommandRun r = model_test::run(std::string(limit) + "'" + ATTNSCOPE_BINARY + "' model '" + dir +
                                                   "' " + input + " --analysis-out '" + out + "'");
  EXPECT_EQ(r.status, 0) << r.err;
  return json::parse(model_test::slurp(out));
}

json reference(const std::string& dir, const char* family, const json& ids, const std::string& dla_args = "") {
  const model_test::CommandRun r = model_test::run(std::string(model_test::kPython) + " '" + ATTNSCOPE_SOURCE_DIR +
                                                   "/tests/model/head_finding_reference.py' '" + dir + "' --family " +
                                                   family + " --ids '" + ids.dump() + "' " + dla_args);
  if (r.status != 0) throw std::runtime_error("head_finding_reference.py failed: " + r.err);
  return json::parse(r.out);
}

// Every score of every layer and head: null exactly where NumPy's is, else within tol. Returns the worst error.
double scoresError(const json& got, const json& want, double tol) {
  double worst = 0;
  for (const auto& [name, layers] : want.items()) {
    if (got.at(name).size() != layers.size()) {
      ADD_FAILURE() << name << ": " << got.at(name).size() << " layers, expected " << layers.size();
      return INFINITY;
    }
    for (std::size_t l = 0; l < layers.size(); ++l) {
      EXPECT_EQ(got[name][l].size(), layers[l].size()) << name;
      for (std::size_t h = 0; h < layers[l].size(); ++h) {
        const json& g = got[name][l][h];
        const json& w = layers[l][h];
        EXPECT_EQ(g.is_null(), w.is_null()) << name << " layer " << l << " head " << h;
        if (g.is_null() || w.is_null()) continue;
        const double e = std::abs(g.get<double>() - w.get<double>());
        EXPECT_LE(e, tol) << name << " layer " << l << " head " << h;
        worst = std::max(worst, e);
      }
    }
  }
  return worst;
}

double compositionError(const json& got, const json& want) {
  double worst = 0;
  for (const char* m : {"q", "k", "v"}) {
    const json& w = want[m];
    if (got.at(m).size() != w.size()) {
      ADD_FAILURE() << m << ": " << got.at(m).size() << " layers, expected " << w.size();
      return INFINITY;
    }
    for (std::size_t la = 0; la < w.size(); ++la)
      for (std::size_t ha = 0; ha < w[la].size(); ++ha)
        for (std::size_t lb = 0; lb < w[la][ha].size(); ++lb)
          for (std::size_t hb = 0; hb < w[la][ha][lb].size(); ++hb) {
            const double g = got[m][la][ha][lb][hb].get<double>(), e = w[la][ha][lb][hb].get<double>();
            if (lb <= la) {
              EXPECT_EQ(g, 0.0) << m << " " << la << "." << ha << " -> " << lb << "." << hb;
            }
            EXPECT_LE(std::abs(g - e), kCompositionTol) << m << " " << la << "." << ha << " -> " << lb << "." << hb;
            worst = std::max(worst, std::abs(g - e));
          }
  }
  return worst;
}

// Direct logit attribution against NumPy's. Each part is (p / s) . u: the forward's residual stream, in units of
// the final norm's scale s, is within kHiddenTol = 5e-5 of float64's per coordinate (the model tests' tolerance
// on the normed hidden state), so a part is within 5e-5 x ||u||_1 (u = g * W_U[t], centred for LayerNorm; NumPy
// gives ||u||_1). The same bounds the engine's own sum against its logit and each layer's attention rest.
double dlaError(const json& got, const json& want) {
  const double tol = 5e-5 * want["u_l1"].get<double>();
  double worst = 0;
  const auto check = [&](const json& g, const json& w, const std::string& what) {
    const double e = std::abs(g.get<double>() - w.get<double>());
    EXPECT_LE(e, tol) << what << ": " << g << " vs NumPy " << w;
    worst = std::max(worst, e);
  };
  EXPECT_EQ(got["position"], want["position"]);
  EXPECT_EQ(got["target"], want["target"]);
  check(got["logit"], want["logit"], "logit");
  check(got["embedding"], want["embedding"], "embedding");
  check(got["final_bias"], want["final_bias"], "final_bias");
  const std::size_t layers = want["mlp"].size();
  EXPECT_EQ(got["heads"].size(), layers);
  if (got["heads"].size() != layers) return INFINITY;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::string at = "layer " + std::to_string(l);
    check(got["mlp"][l], want["mlp"][l], at + " mlp");
    check(got["attention_bias"][l], want["attention_bias"][l], at + " attention bias");
    EXPECT_LE(std::abs(got["attention_rest"][l].get<double>()), tol) << at << " attention rest";
    for (std::size_t h = 0; h < want["heads"][l].size(); ++h)
      check(got["heads"][l][h], want["heads"][l][h], at + " head " + std::to_string(h));
  }
  // The parts add up to the logit: the engine's sum against its own logit and NumPy's.
  check(got["sum"], got["logit"], "sum of the parts against the logit");
  check(got["sum"], want["logit"], "sum of the parts against NumPy's logit");
  return worst;
}

}  // namespace

TEST(HeadFinding, Gpt2RepeatedRandomScoresAndCompositionMatchNumPy) {
  const std::string dir = model_test::tinyCheckpoint("--layers 3 --heads 4 --embd 32");
  for (const char* limit : {"", "ATTNSCOPE_MAPS_LIMIT=1K "}) {
    const json got = analysis(dir, "--repeated-random 12 --seed 7", limit);
    // 12 ids, then the same 12: the second half repeats the first.
    const std::vector<int> ids = got["token_ids"].get<std::vector<int>>();
    ASSERT_EQ(ids.size(), 24u);
    for (int i = 0; i < 12; ++i) EXPECT_EQ(ids[static_cast<std::size_t>(i)], ids[static_cast<std::size_t>(i + 12)]);
    const json want = reference(dir, "gpt2", got["token_ids"]);
    const double s = scoresError(got["head_scores"], want["head_scores"], 24 * kScoreTolPerWeight);
    const double c = compositionError(got["composition"], want["composition"]);
    // The default: the last position and its top prediction (NumPy's argmax).
    EXPECT_EQ(got["dla"]["target"], want["dla"]["top"]);
    const double a = dlaError(got["dla"], want["dla"]);
    std::printf("GPT-2 %s: scores %.2e, composition %.2e, dla %.2e\n", *limit ? "tiles" : "kept", s, c, a);
  }
}

TEST(HeadFinding, Qwen2GroupedHeadsScoresAndCompositionMatchNumPy) {
  const std::string dir = model_test::tempDir() + "/ckpt";
  const std::string text = "the cat sat; the cat sat; the cat";
  const model_test::CommandRun gen = model_test::run(
      std::string(model_test::kPython) + " '" + ATTNSCOPE_SOURCE_DIR + "/tests/model/llama_reference.py' '" + dir +
      "' --family qwen2 --attention-bias --layers 3 --heads 4 --kv-heads 2 --hidden 32 --text '" + text + "'");
  ASSERT_EQ(gen.status, 0) << gen.err;
  for (const char* limit : {"", "ATTNSCOPE_MAPS_LIMIT=1K "}) {
    const json got = analysis(dir, "--text '" + text + "'", limit);
    const json want = reference(dir, "llama", got["token_ids"]);
    const std::size_t n = got["token_ids"].size();
    const double s = scoresError(got["head_scores"], want["head_scores"], static_cast<double>(n) * kScoreTolPerWeight);
    const double c = compositionError(got["composition"], want["composition"]);
    EXPECT_EQ(got["dla"]["target"], want["dla"]["top"]);
    const double a = dlaError(got["dla"], want["dla"]);
    // A chosen position and target, on the untied lm_head this checkpoint has.
    const json chosen = analysis(dir, "--text '" + text + "' --dla-position 5 --dla-target 77", limit);
    const double b =
        dlaError(chosen["dla"], reference(dir, "llama", got["token_ids"], "--dla-position 5 --dla-target 77")["dla"]);
    std::printf("Qwen2 %s: scores %.2e, composition %.2e, dla %.2e and %.2e\n", *limit ? "tiles" : "kept", s, c, a, b);
    // Induction and duplicate-token scores are defined here (the text repeats), so the test reaches them.
    EXPECT_FALSE(got["head_scores"]["induction"][0][0].is_null());
  }
}

TEST(HeadFinding, RepeatedRandomRefusals) {
  const std::string dir = model_test::tinyCheckpoint();  // 40 positions
  for (const std::string& args :
       {std::string("--repeated-random 21"), std::string("--repeated-random 0"),
        std::string("--repeated-random 5 --text hi"), std::string("--repeated-random 5 --dla-position 3"),
        std::string("--repeated-random 5 --analysis-out /dev/null --dla-position 10"),
        std::string("--repeated-random 5 --analysis-out /dev/null --dla-target 100000")}) {
    const model_test::CommandRun r =
        model_test::run("'" + std::string(ATTNSCOPE_BINARY) + "' model '" + dir + "' " + args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    const std::string field = args.find("dla-position") != std::string::npos ? "--dla-position"
                              : args.find("dla-target") != std::string::npos ? "--dla-target"
                                                                             : "--repeated-random";
    EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// The window shows how far a composition is: `done` climbs to 1 (the last slab pass reports all of the work),
// never down (a watcher thread samples it meanwhile), and the scores are those of a call without it.
TEST(HeadFinding, CompositionReportsItsProgressUpToOne) {
  const attnscope::model::Model m =
      attnscope::model::loadModel(model_test::tinyCheckpoint("--layers 3 --heads 4 --embd 32"));
  std::atomic<float> done{0.0f};
  std::atomic<bool> finished{false};
  bool monotone = true;
  std::thread watcher([&] {
    float last = 0;
    while (!finished.load()) {
      const float now = done.load();
      monotone = monotone && now >= last;
      last = now;
    }
  });
  const attnscope::model::Composition with = attnscope::model::compositionScores(m, 0, &done);
  finished = true;
  watcher.join();
  EXPECT_TRUE(monotone);
  // work / total in double, stored as float: 1 within float's rounding of a quotient of equal sums.
  EXPECT_NEAR(done.load(), 1.0f, 1e-6f);
  // The same arithmetic; a BLAS may split its sums over threads differently from one call to the next, which
  // moves a score (<= 1, sums of ~d^2 terms) by ~1e-16 x d^2 at most.
  const attnscope::model::Composition without = attnscope::model::compositionScores(m);
  ASSERT_EQ(with.q.size(), without.q.size());
  for (std::size_t i = 0; i < with.q.size(); ++i) {
    EXPECT_NEAR(with.q[i], without.q[i], 1e-12);
    EXPECT_NEAR(with.k[i], without.k[i], 1e-12);
    EXPECT_NEAR(with.v[i], without.v[i], 1e-12);
  }
}
