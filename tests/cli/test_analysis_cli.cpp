// attnscope analyze end to end: the built binary on a hand-built scene, its JSON checked against hand-worked
// numbers, and every bad input giving exit status 2 and one line on stderr naming the field.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/analysis_test_scenes.h"
#include "attnscope/scene/scene_json.h"
#include "command_support.h"

namespace attnscope {
namespace {

using json = nlohmann::json;

using test::CommandRun;
CommandRun attnscope(const std::string& args) { return test::runAttnscope(args); }

// The hand heads (previous-token, current-token, first-token, uniform) as a scene file.
const std::string& handScenePath() {
  static const std::string path = [] {
    // Named by process: ctest runs tests as parallel processes.
    const std::string p = ::testing::TempDir() + "attnscope_analyze_hand_" + std::to_string(getpid()) + ".json";
    saveSceneFile(test::handHeadsScene(), p);
    return p;
  }();
  return path;
}

constexpr double kTol = 1e-6;  // float32 weights against double formulas; error seen 8.4e-8

// The clustering of the hand heads by cosine distance, worked out by hand (analysis_test_scenes.h, handCosine).
// The JSON numbers heads from 1, and clusters as SciPy's ids plus 1 (5 = {1, 4}, 6, 7).
void expectHandClustering(const json& c) {
  auto d = [](int a, int b) { return 1 - test::handCosine(a, b); };
  ASSERT_EQ(c["merges"].size(), 3u) << c;
  const struct {
    int a, b;
    double height;
    int size;
  } want[3] = {{0, 3, d(0, 3), 2}, {2, 4, (d(0, 2) + d(3, 2)) / 2, 3}, {1, 5, (d(0, 1) + d(2, 1) + d(3, 1)) / 3, 4}};
  for (int m = 0; m < 3; ++m) {
    const json& got = c["merges"][static_cast<std::size_t>(m)];
    EXPECT_EQ(got["a"], want[m].a + 1) << got;
    EXPECT_EQ(got["b"], want[m].b + 1) << got;
    EXPECT_NEAR(got["height"].get<double>(), want[m].height, kTol) << got;
    EXPECT_EQ(got["size"], want[m].size) << got;
  }
  EXPECT_EQ(c["order"], json::array({2, 3, 1, 4}));
}

TEST(AnalyzeCli, ScoresImportanceClusteringOnHandHeads) {
  const CommandRun r = attnscope("analyze '" + handScenePath() + "' --window 1 --sort current_token");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  const double e = test::peakE(), f = test::peakF();
  EXPECT_EQ(j["heads"], 4);
  ASSERT_EQ(j["scores"].size(), 4u);
  EXPECT_EQ(j["scores"][0]["head"], 1);
  EXPECT_EQ(j["scores"][0]["label"], "previous_token");
  EXPECT_NEAR(j["scores"][0]["previous_token"].get<double>(), e, kTol);
  EXPECT_NEAR(j["scores"][1]["current_token"].get<double>(), e, kTol);
  EXPECT_NEAR(j["scores"][2]["first_token"].get<double>(), e, kTol);
  EXPECT_NEAR(j["scores"][3]["local"].get<double>(), 10.0 / 16, kTol);
  EXPECT_TRUE(j["scores"][0]["induction"].is_null());
  // current_token: head 2 E, head 1 (0.25 + 3F)/4, head 3 (E + 3F)/4 = 1/4, head 4 1/4: E > 1/4 = 1/4 > ...
  EXPECT_EQ(j["ranking"]["heads"][0], 2);
  EXPECT_NEAR(j["importance"]["per_head"][1].get<double>(), 2 * std::sqrt(e * e + 3 * f * f), kTol);
  EXPECT_NEAR(j["importance"]["per_head"][3].get<double>(), 1.0, kTol);
  EXPECT_EQ(j["importance"]["ablation"], "zero");
  expectHandClustering(j["clustering"]);
  EXPECT_FALSE(j.contains("cell"));
}

TEST(AnalyzeCli, CellAblationAndPitfall) {
  const CommandRun r =
      attnscope("analyze '" + handScenePath() + "' --cell 1,2,1 --ablate 1,2,3 --ablation mean --pitfall mask_ignored");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  // Head 1 (previous-token), query 2, key 1: the one term t = 2 is s = 2; scale 1; weight E.
  const json& c = j["cell"];
  EXPECT_EQ(c["head"], 1);
  EXPECT_EQ(c["query_token"], "c");
  EXPECT_EQ(c["key_token"], "b");
  EXPECT_EQ(c["terms"][0]["t"], 2);
  EXPECT_DOUBLE_EQ(c["terms"][0]["product"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(c["score"].get<double>(), 2.0);
  EXPECT_NEAR(c["softmax"]["exp_sum"].get<double>(), 1 + 3 * std::exp(-2.0), 1e-12);
  EXPECT_NEAR(c["softmax"]["weight"].get<double>(), test::peakE(), 1e-12);
  EXPECT_EQ(c["softmax"]["keys"].size(), 4u);
  EXPECT_EQ(c["input_side"]["query_products"].size(), 4u);
  // The ablation's numbers are checked in test_analysis.cpp; here the fields and the heads numbered from 1.
  EXPECT_EQ(j["ablation"]["mode"], "mean");
  EXPECT_EQ(j["ablation"]["heads"], json::array({1, 2, 3}));
  EXPECT_EQ(j["ablation"]["query_change"].size(), 4u);
  EXPECT_EQ(j["pitfall"]["name"], "mask_ignored");
  EXPECT_NE(j["pitfall"]["source"].get<std::string>().find("001"), std::string::npos);
  EXPECT_NE(j["pitfall"]["note"].get<std::string>().find("no mask"), std::string::npos);
  EXPECT_DOUBLE_EQ(j["pitfall"]["max_abs_output_diff"].get<double>(), 0.0);
}

TEST(AnalyzeCli, MeanAblationOfTheUniformHeadChangesNothing) {
  const CommandRun r = attnscope("analyze '" + handScenePath() + "' --ablate 4 --ablation mean");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_NEAR(j["ablation"]["total_change"].get<double>(), 0.0, kTol);
  EXPECT_NEAR(j["importance"]["per_head"][3].get<double>(), 0.0, kTol);
}

TEST(AnalyzeCli, BadInputIsOneLineAndExitTwo) {
  const std::string scene = "'" + handScenePath() + "'";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"analyze " + scene + " --cell 5,0,0", "--cell: expected head 1 to 4, got 5"},
      {"analyze " + scene + " --cell 0,0,0", "--cell: expected head 1 to 4, got 0"},
      {"analyze " + scene + " --cell 1,4,0", "--cell: expected query position 0 to 3, got 4"},
      {"analyze " + scene + " --cell 1,0,-1", "--cell: expected key position 0 to 3, got -1"},
      {"analyze " + scene + " --cell 1,2", "--cell: expected H,I,J"},
      {"analyze " + scene + " --cell a,b,c", "--cell: expected H,I,J"},
      {"analyze " + scene + " --ablate ''", "--ablate: expected at least one head"},
      {"analyze " + scene + " --ablate 5", "--ablate: expected head 1 to 4, got 5"},
      {"analyze " + scene + " --ablate 1,,2", "--ablate: expected head numbers"},
      {"analyze " + scene + " --ablation half", "--ablation: expected one of zero|mean, got 'half'"},
      {"analyze " + scene + " --pitfall scale_wrong", "--pitfall: expected one of scale_full_width|"},
      {"analyze " + scene + " --sort sink", "--sort: expected one of previous_token|"},
      {"analyze " + scene + " --metric euclid", "--metric: expected one of cosine|js"},
      {"analyze " + scene + " --window -1", "--window: expected an integer from 0"},
      {"analyze", "analyze: expected a scene file"},
      {"analyze /nonexistent/scene.json", "/nonexistent/scene.json"},
      {"analyze " + scene + " --frobnicate", "no option named --frobnicate"},
  };
  for (const auto& [args, message] : cases) {
    const CommandRun r = attnscope(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_TRUE(r.out.empty()) << args;
    ASSERT_FALSE(r.err.empty()) << args;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  }
}

}  // namespace
}  // namespace attnscope
