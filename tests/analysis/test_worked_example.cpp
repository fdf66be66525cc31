// Seed 001's worked example against numbers worked out by hand, and the walkthrough's list of the printed
// numbers that disagree (exactly those found by hand, nothing that agrees).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/analysis/walkthrough.h"
#include "compare.h"

using namespace attnscope;

namespace {

// The only X the printed products allow (see the scene's description):
//   Q1 = X W1_Q = X[:, 1..2] = [[1,0],[0,1],[1,1]]        -> columns 1, 2 of X
//   V1 = X W1_V, first column X[:,1] + X[:,3] = [2,0,1]   -> column 3 = [1,0,0]
//   Q2 = X W2_Q = X[:, 3..4] = [[1,0],[0,1],[0,0]]        -> column 4 = [0,1,0]
Matrix handX() {
  Matrix x(3, 4);
  x << 1, 0, 1, 0,  //
      0, 1, 0, 1,   //
      1, 1, 0, 0;
  return x;
}

Matrix mat(int rows, int cols, std::initializer_list<double> values) {
  Matrix m(rows, cols);
  int i = 0;
  for (double v : values) m(i / cols, i % cols) = static_cast<float>(v), ++i;
  return m;
}

// Largest |a - b| (tests/compare.h: shapes asserted, a non-finite value an infinite error).
double maxDiff(const Matrix& a, const Matrix& b) { return test::maxError(a, b); }

// a = 1/sqrt(2), ea = e^a, e2a = e^(2a): the hand formulas below use them.
const double a = 1.0 / std::sqrt(2.0), ea = std::exp(a), e2a = std::exp(2 * a);

// float32 against these double formulas: the largest error seen was 6e-8; 1e-6 leaves room.
constexpr double kTol = 1e-6;

}  // namespace

TEST(WorkedExample, SceneIsTheSeedsWMatricesTheDerivedXAndIdentityWo) {
  const Scene s = workedExampleScene();
  ASSERT_EQ(s.numHeads(), 2);
  EXPECT_EQ(s.d_model, 4);
  EXPECT_EQ(maxDiff(s.query, handX()), 0);
  // As printed in seed 001.
  EXPECT_EQ(maxDiff(s.heads[0].w_q, mat(4, 2, {1, 0, 0, 1, 0, 0, 0, 0})), 0);
  EXPECT_EQ(maxDiff(s.heads[0].w_k, mat(4, 2, {0, 1, 1, 0, 0, 0, 0, 0})), 0);
  EXPECT_EQ(maxDiff(s.heads[0].w_v, mat(4, 2, {1, 0, 0, 0, 1, 0, 0, 0})), 0);
  EXPECT_EQ(maxDiff(s.heads[1].w_q, mat(4, 2, {0, 0, 0, 0, 1, 0, 0, 1})), 0);
  EXPECT_EQ(maxDiff(s.heads[1].w_k, mat(4, 2, {0, 0, 0, 0, 0, 1, 1, 0})), 0);
  EXPECT_EQ(maxDiff(s.heads[1].w_v, mat(4, 2, {0, 1, 0, 1, 0, 0, 0, 0})), 0);
  ASSERT_TRUE(s.w_o.has_value());
  EXPECT_EQ(maxDiff(*s.w_o, Matrix::Identity(4, 4)), 0);
  EXPECT_EQ(s.query_tokens, (std::vector<std::string>{"x1", "x2", "x3"}));
  EXPECT_NE(s.description.find("X = [[1,0,1,0],[0,1,0,1],[1,1,0,0]]"), std::string::npos);
}

TEST(WorkedExample, BuiltInSceneEqualsTheShippedFile) {
  const Scene file = loadSceneFile(ATTNSCOPE_SOURCE_DIR "/assets/scenes/worked_example.json");
  const Scene built_in = workedExampleScene();
  EXPECT_EQ(sceneToJson(file), sceneToJson(built_in));
}

TEST(WorkedExample, EveryMatrixMatchesTheHandArithmetic) {
  const Result r = CpuBackend(1).compute(workedExampleScene());
  ASSERT_EQ(r.heads.size(), 2u);
  const HeadResult& h1 = r.heads[0];
  const HeadResult& h2 = r.heads[1];
  // Head 1: Q1 = X[:,1..2]; K1 = [X[:,2], X[:,1]]; V1 = [X[:,1] + X[:,3], 0].
  EXPECT_EQ(maxDiff(h1.q, mat(3, 2, {1, 0, 0, 1, 1, 1})), 0);
  EXPECT_EQ(maxDiff(h1.k(), mat(3, 2, {0, 1, 1, 0, 1, 1})), 0);
  EXPECT_EQ(maxDiff(h1.v(), mat(3, 2, {2, 0, 0, 0, 1, 0})), 0);
  // Q1 K1^T = [[0,1,1],[1,0,1],[1,1,2]]; times 1/sqrt(2).
  EXPECT_LT(maxDiff(h1.scores, mat(3, 3, {0, a, a, a, 0, a, a, a, 2 * a})), kTol);
  // softmax [0, a, a] = [1, ea, ea] / (1 + 2 ea) = [0.1978, 0.4011, 0.4011];
  // softmax [a, 0, a] = [ea, 1, ea] / (1 + 2 ea);
  // softmax [a, a, 2a] = [ea, ea, e2a] / (2 ea + e2a) = [0.2483, 0.2483, 0.5035].
  const double s0 = 1 + 2 * ea, s2 = 2 * ea + e2a;
  EXPECT_LT(
      maxDiff(h1.weights, mat(3, 3, {1 / s0, ea / s0, ea / s0, ea / s0, 1 / s0, ea / s0, ea / s2, ea / s2, e2a / s2})),
      kTol);
  // Output1 = weights V1: row 1 (2 + ea) / (1 + 2 ea) = 0.7967; row 2 3 ea / (1 + 2 ea) = 1.2033;
  // row 3 (2 ea + e2a) / (2 ea + e2a) = 1 exactly.
  EXPECT_LT(maxDiff(h1.output, mat(3, 2, {(2 + ea) / s0, 0, 3 * ea / s0, 0, 1, 0})), kTol);

  // Head 2: Q2 = X[:,3..4]; K2 = [X[:,4], X[:,3]]; V2 = [0, X[:,1] + X[:,2]] = [[0,1],[0,1],[0,2]].
  EXPECT_EQ(maxDiff(h2.q, mat(3, 2, {1, 0, 0, 1, 0, 0})), 0);
  EXPECT_EQ(maxDiff(h2.k(), mat(3, 2, {0, 1, 1, 0, 0, 0})), 0);
  EXPECT_EQ(maxDiff(h2.v(), mat(3, 2, {0, 1, 0, 1, 0, 2})), 0);
  // Q2 K2^T = [[0,1,0],[1,0,0],[0,0,0]]; times 1/sqrt(2).
  EXPECT_LT(maxDiff(h2.scores, mat(3, 3, {0, a, 0, a, 0, 0, 0, 0, 0})), kTol);
  // softmax [0, a, 0] = [1, ea, 1] / (2 + ea) = [0.2483, 0.5035, 0.2483]; the zero row gives 1/3 each.
  const double t = 2 + ea;
  EXPECT_LT(maxDiff(h2.weights, mat(3, 3, {1 / t, ea / t, 1 / t, ea / t, 1 / t, 1 / t, 1. / 3, 1. / 3, 1. / 3})), kTol);
  // Output2 second column = weights [1, 1, 2]: (1 + ea + 2) / (2 + ea) = 1.2483 for rows 1-2, 4/3 for row 3.
  EXPECT_LT(maxDiff(h2.output, mat(3, 2, {0, (3 + ea) / t, 0, (3 + ea) / t, 0, 4. / 3})), kTol);

  // Concat [Output1 | Output2]; W^O = I, so the output is the concat.
  const Matrix concat =
      mat(3, 4, {(2 + ea) / s0, 0, 0, (3 + ea) / t, 3 * ea / s0, 0, 0, (3 + ea) / t, 1, 0, 0, 4. / 3});
  EXPECT_LT(maxDiff(r.concat, concat), kTol);
  EXPECT_LT(maxDiff(r.output, concat), kTol);
  EXPECT_TRUE(r.warnings.empty());
}

namespace {

struct Expected {
  int head;  // 0-based
  std::string matrix;
  int row, col;  // 0-based
  double printed, computed;
};

// Worked out by hand (see EveryMatrixMatchesTheHandArithmetic for the computed values):
//   V2 row 3 printed [0, 0], computed [0, 2].
//   Head 1 scaled scores printed [[0.71, 0.00, 1.41], [0.00, 0.71, 0.71], [0.71, 0.71, 1.41]],
//     computed [[0, a, a], [a, 0, a], [a, a, 2a]] with a = 0.7071: rows 1-2 differ except (2, 3); row 3 agrees
//     (|0.7071 - 0.71| = 0.003 and |1.4142 - 1.41| = 0.004 are within half a unit, 0.005).
//   Head 1 weights printed [[0.30, 0.15, 0.55], [0.21, 0.37, 0.42], [0.21, 0.21, 0.58]], computed
//     [[0.1978, 0.4011, 0.4011], [0.4011, 0.1978, 0.4011], [0.2483, 0.2483, 0.5035]]: all nine differ
//     by more than 0.005 (the closest is (2, 3): 0.42 vs 0.4011).
//   Q1, K1, V1, Q2, K2 agree everywhere.
std::vector<Expected> handDisagreements() {
  const double s0 = 1 + 2 * ea, s2 = 2 * ea + e2a;
  return {
      // in step order: head 1's steps come before head 2's
      {0, "scaled scores", 0, 0, 0.71, 0}, {0, "scaled scores", 0, 1, 0.00, a},  {0, "scaled scores", 0, 2, 1.41, a},
      {0, "scaled scores", 1, 0, 0.00, a}, {0, "scaled scores", 1, 1, 0.71, 0},  {0, "weights", 0, 0, 0.30, 1 / s0},
      {0, "weights", 0, 1, 0.15, ea / s0}, {0, "weights", 0, 2, 0.55, ea / s0},  {0, "weights", 1, 0, 0.21, ea / s0},
      {0, "weights", 1, 1, 0.37, 1 / s0},  {0, "weights", 1, 2, 0.42, ea / s0},  {0, "weights", 2, 0, 0.21, ea / s2},
      {0, "weights", 2, 1, 0.21, ea / s2}, {0, "weights", 2, 2, 0.58, e2a / s2}, {1, "V", 2, 1, 0, 2},
  };
}

}  // namespace

TEST(WorkedExample, WalkthroughReportsExactlyTheHandFoundDisagreements) {
  const Scene scene = workedExampleScene();
  const Walkthrough w = buildWalkthrough(scene, CpuBackend(1).compute(scene));
  std::vector<Expected> found;
  int printed_matrices = 0;
  for (const Step& step : w.steps)
    for (const StepMatrix& m : step.matrices) {
      if (m.printed) ++printed_matrices;
      for (const Disagreement& d : m.disagreements)
        found.push_back({step.head, m.name, d.row, d.col, d.printed, d.computed});
    }
  // Q1, K1, V1, Q2, K2, V2, head-1 scaled scores and weights.
  EXPECT_EQ(printed_matrices, 8);
  const std::vector<Expected> want = handDisagreements();
  ASSERT_EQ(found.size(), want.size());
  EXPECT_EQ(w.disagreementCount(), 15);
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("disagreement " + std::to_string(i));
    EXPECT_EQ(found[i].head, want[i].head);
    EXPECT_EQ(found[i].matrix, want[i].matrix);
    EXPECT_EQ(found[i].row, want[i].row);
    EXPECT_EQ(found[i].col, want[i].col);
    EXPECT_DOUBLE_EQ(found[i].printed, want[i].printed);
    EXPECT_NEAR(found[i].computed, want[i].computed, kTol);
  }
}

// Key padding chosen with no key ticked masks nothing: the weights are the text's, so every comparison stays
// (it once hid 14 of the 15 disagreements).
TEST(WorkedExample, KeyPaddingThatMasksNothingKeepsEveryComparison) {
  Scene scene = workedExampleScene();
  scene.key_padding = {0, 0, 0};
  const Walkthrough w = buildWalkthrough(scene, CpuBackend(1).compute(scene));
  EXPECT_EQ(w.disagreementCount(), static_cast<int>(handDisagreements().size()));
  scene.key_padding = {0, 0, 1};  // key x3 padded: the printed weights no longer apply
  const Walkthrough padded = buildWalkthrough(scene, CpuBackend(1).compute(scene));
  EXPECT_LT(padded.disagreementCount(), w.disagreementCount());
}

TEST(WorkedExample, StepsComeInTheDocumentedOrder) {
  const Scene scene = workedExampleScene();
  const Walkthrough w = buildWalkthrough(scene, CpuBackend(1).compute(scene));
  std::vector<std::string> titles;
  for (const Step& step : w.steps) titles.push_back(step.title);
  const std::vector<std::string> per_head = {"Q = X W_Q",
                                             "K = X W_K",
                                             "V = X W_V",
                                             "scores = Q K^T",
                                             "scaled scores = Q K^T * scale",
                                             "weights = softmax(scaled scores)",
                                             "output = weights V"};
  std::vector<std::string> want = {"Input X"};
  for (int h = 1; h <= 2; ++h)
    for (const std::string& t : per_head) want.push_back("Head " + std::to_string(h) + ": " + t);
  want.push_back("Concatenate the heads");
  want.push_back("Output = concat W_O");
  EXPECT_EQ(titles, want);
}

TEST(WorkedExample, PrintedSoftmaxRow3IsTheSoftmaxOfTheUnscaledScores) {
  // The walkthrough's note claims this: softmax [1, 1, 2] = [1, 1, e] / (2 + e) = [0.2119, 0.2119, 0.5761],
  // which rounds to the printed [0.21, 0.21, 0.58]; the scaled softmax [0.2483, 0.2483, 0.5035] does not.
  // Checked through the code: the walkthrough's printed row, the engine with the scale set to 1 and as given.
  const Scene scene = workedExampleScene();
  const Walkthrough w = buildWalkthrough(scene, CpuBackend(1).compute(scene));
  const StepMatrix* printed_weights = nullptr;
  for (const Step& step : w.steps)
    if (step.title == "Head 1: weights = softmax(scaled scores)")
      for (const StepMatrix& m : step.matrices)
        if (m.name == "weights") printed_weights = &m;
  ASSERT_NE(printed_weights, nullptr);
  ASSERT_TRUE(printed_weights->printed.has_value());
  const Matrix& printed = *printed_weights->printed;
  ASSERT_EQ(printed.rows(), 3);
  ASSERT_EQ(printed.cols(), 3);
  EXPECT_NEAR(printed(2, 0), 0.21, 1e-6);
  EXPECT_NEAR(printed(2, 2), 0.58, 1e-6);
  EXPECT_EQ(printed_weights->printed_tolerance, 0.005);

  Scene unscaled = scene;
  unscaled.scale = 1.0f;
  const Matrix unscaled_weights = CpuBackend(1).compute(unscaled).heads[0].weights;
  const double e = std::exp(1.0);
  EXPECT_NEAR(unscaled_weights(2, 0), 1 / (2 + e), kTol);
  EXPECT_NEAR(unscaled_weights(2, 2), e / (2 + e), kTol);
  for (int j = 0; j < 3; ++j) EXPECT_LE(std::fabs(unscaled_weights(2, j) - printed(2, j)), 0.005) << j;
  // As given (scale 1/sqrt 2) the row is [ea, ea, e2a] / (2 ea + e2a): off the printed row by more than 0.005.
  const Matrix& scaled = printed_weights->computed;
  EXPECT_NEAR(scaled(2, 0), ea / (2 * ea + e2a), kTol);
  EXPECT_GT(std::fabs(scaled(2, 0) - printed(2, 0)), 0.005);
  bool row3_disagrees = false;
  for (const Disagreement& d : printed_weights->disagreements) row3_disagrees |= d.row == 2;
  EXPECT_TRUE(row3_disagrees) << "the walkthrough lists printed row 3 as disagreeing";
}

TEST(WorkedExample, EditingTheSceneDropsOnlyTheComparisonsItInvalidates) {
  const auto printedOf = [](const Scene& scene) {
    std::vector<std::string> names;
    for (const Step& step : buildWalkthrough(scene, CpuBackend(1).compute(scene)).steps)
      for (const StepMatrix& m : step.matrices)
        if (m.printed) names.push_back(std::to_string(step.head + 1) + " " + m.name);
    return names;
  };
  // What the view marks "edited: the text's numbers no longer apply".
  const auto droppedOf = [](const Scene& scene) {
    std::vector<std::string> names;
    for (const Step& step : buildWalkthrough(scene, CpuBackend(1).compute(scene)).steps)
      for (const StepMatrix& m : step.matrices)
        if (m.printed_dropped) names.push_back(std::to_string(step.head + 1) + " " + m.name);
    return names;
  };
  const std::vector<std::string> all_printed = {"1 Q",       "1 K", "1 V", "1 scaled scores",
                                                "1 weights", "2 Q", "2 K", "2 V"};
  EXPECT_TRUE(droppedOf(workedExampleScene()).empty());

  Scene changed_x = workedExampleScene();
  changed_x.query(0, 0) = 5;
  EXPECT_TRUE(printedOf(changed_x).empty());
  EXPECT_EQ(droppedOf(changed_x), all_printed);  // X feeds every printed matrix

  Scene changed_w2v = workedExampleScene();
  changed_w2v.heads[1].w_v(0, 0) = 1;
  EXPECT_EQ(printedOf(changed_w2v),
            (std::vector<std::string>{"1 Q", "1 K", "1 V", "1 scaled scores", "1 weights", "2 Q", "2 K"}));
  EXPECT_EQ(droppedOf(changed_w2v), (std::vector<std::string>{"2 V"}));

  // Another scene of the same shape (other tokens) is not an edit of the example: nothing is marked.
  Scene other = changed_x;
  other.query_tokens = {"a", "b", "c"};
  EXPECT_TRUE(droppedOf(other).empty());

  Scene causal = workedExampleScene();
  causal.mask = MaskKind::Causal;
  EXPECT_EQ(printedOf(causal), (std::vector<std::string>{"1 Q", "1 K", "1 V", "2 Q", "2 K", "2 V"}));

  Scene rescaled = workedExampleScene();
  rescaled.scale = 1.0f;
  EXPECT_EQ(printedOf(rescaled), (std::vector<std::string>{"1 Q", "1 K", "1 V", "2 Q", "2 K", "2 V"}));
}
