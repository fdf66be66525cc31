// The walkthrough: a Result laid out as the ordered steps of multi-head attention, with the numbers that seed
// 001's "Worked Example" prints set beside the computed ones while the scene is still that example.
#include "attnscope/analysis/walkthrough.h"

#include <cmath>
#include <cstdio>

#include "attnscope/compute/scene_rope.h"
#include "attnscope/scene/scene_json.h"

namespace attnscope {

namespace {

// [SECTION] what seed 001 prints

// One matrix the text prints. head is 0-based; matrix is the StepMatrix name it sits beside.
struct PrintedMatrix {
  int head;
  const char* matrix;
  double tolerance;  // half a unit of the printed precision
  int rows, cols;
  double values[9];  // row-major
  const char* note;  // what the comparison shows, added to the step's note
};

constexpr double kIntegers = 0.5, kTwoDecimals = 0.005;

// Copied from seed 001 as printed (these are claims to check, not truths).
const PrintedMatrix kPrinted[] = {
    {0, "Q", kIntegers, 3, 2, {1, 0, 0, 1, 1, 1}, "The text prints Q1; it fixes columns 1-2 of X."},
    {0, "K", kIntegers, 3, 2, {0, 1, 1, 0, 1, 1}, "The text prints K1 (columns 2 and 1 of X)."},
    {0,
     "V",
     kIntegers,
     3,
     2,
     {2, 0, 0, 0, 1, 0},
     "The text prints V1; its first column, X[:,1] + X[:,3], fixes column 3 of X."},
    {1, "Q", kIntegers, 3, 2, {1, 0, 0, 1, 0, 0}, "The text prints Q2; it fixes column 4 of X."},
    {1, "K", kIntegers, 3, 2, {0, 1, 1, 0, 0, 0}, "The text prints K2 (columns 4 and 3 of X)."},
    {1,
     "V",
     kIntegers,
     3,
     2,
     {0, 1, 0, 1, 0, 0},
     "The text prints V2 row 3 as [0, 0]. X row 3 is [1, 1, 0, 0] (Q1 and K1 both show it) and W2_V's second "
     "column adds X's first two entries, so V2 row 3 is [0, 2]."},
    {0,
     "scaled scores",
     kTwoDecimals,
     3,
     3,
     {0.71, 0.00, 1.41, 0.00, 0.71, 0.71, 0.71, 0.71, 1.41},
     "The text prints rows 1-2 wrongly: Q1 row 1 = [1, 0] against K1's rows [0, 1], [1, 0], [1, 1] gives "
     "[0, 1, 1] / sqrt(2) = [0, 0.71, 0.71], not [0.71, 0.00, 1.41]; row 2 gives [1, 0, 1] / sqrt(2) = "
     "[0.71, 0, 0.71], not [0.00, 0.71, 0.71]. Row 3, [1, 1, 2] / sqrt(2), agrees."},
    {0,
     "weights",
     kTwoDecimals,
     3,
     3,
     {0.30, 0.15, 0.55, 0.21, 0.37, 0.42, 0.21, 0.21, 0.58},
     "Every printed weight is off. They are not the softmax of the printed scores either (rows 1-2 would be "
     "[0.29, 0.14, 0.57] and [0.20, 0.40, 0.40]). Printed row 3, [0.21, 0.21, 0.58], is the softmax of the "
     "unscaled row [1, 1, 2] = [1, 1, e] / (2 + e) = [0.212, 0.212, 0.576]: that row was computed without the "
     "1/sqrt(2). Rows 1-2 match none of: softmax of the right or the printed scores, scaled or not."},
};

bool sameMatrix(const Matrix& a, const Matrix& b) { return a.rows() == b.rows() && a.cols() == b.cols() && a == b; }

bool sameBias(const std::optional<RowVector>& a, const std::optional<RowVector>& b) {
  if (!a || !b) return !a && !b;
  return a->size() == b->size() && *a == *b;
}

// Whether the matrix `name` of `head` still follows from the worked example's inputs, so that the text's
// numbers for it are a fair comparison.
bool followsWorkedExample(const Scene& scene, const Scene& example, int head, const std::string& name) {
  if (head >= scene.numHeads() || head >= example.numHeads()) return false;
  const HeadParams& p = scene.heads[static_cast<std::size_t>(head)];
  const HeadParams& e = example.heads[static_cast<std::size_t>(head)];
  const bool q = sameMatrix(scene.query, example.query) && sameMatrix(p.w_q, e.w_q) && sameBias(p.b_q, e.b_q);
  const bool k = sameMatrix(scene.keyRows(), example.keyRows()) && sameMatrix(scene.wK(head), example.wK(head)) &&
                 sameBias(scene.bK(head), example.bK(head));
  const bool v = sameMatrix(scene.valueRows(), example.valueRows()) && sameMatrix(scene.wV(head), example.wV(head)) &&
                 sameBias(scene.bV(head), example.bV(head));
  if (name == "Q") return q;
  if (name == "K") return k;
  if (name == "V") return v;
  // scaled scores and weights: Q, K, the scale and no key masked (key padding with no key ticked masks nothing,
  // so the text's numbers still apply)
  return q && k && !scene.rope && !example.rope && !hasHeadNorm(scene) && !hasHeadNorm(example) && scene.headScale(head) == example.headScale(head) &&
         allowedMask(scene).minCoeff() == 1;
}

void attachPrinted(const PrintedMatrix& printed, StepMatrix& m, std::string& note) {
  Matrix values(printed.rows, printed.cols);
  for (int i = 0; i < printed.rows; ++i)
    for (int j = 0; j < printed.cols; ++j) values(i, j) = static_cast<float>(printed.values[i * printed.cols + j]);
  if (values.rows() != m.computed.rows() || values.cols() != m.computed.cols()) return;
  m.printed_tolerance = printed.tolerance;
  for (int i = 0; i < printed.rows; ++i)
    for (int j = 0; j < printed.cols; ++j) {
      const double want = printed.values[i * printed.cols + j], got = m.computed(i, j);
      // A non-finite computed value (a masked score) never agrees with a printed number.
      if (!(std::fabs(got - want) <= printed.tolerance)) m.disagreements.push_back({i, j, want, got});
    }
  m.printed = std::move(values);
  note += (note.empty() ? "" : " ") + std::string(printed.note);
}

std::string formatNumber(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

// [SECTION] building the steps

struct StepBuilder {
  const Scene& scene;
  const Scene& example;
  Walkthrough walkthrough;

  Step& add(std::string title, int head, std::string note) {
    walkthrough.steps.push_back({std::move(title), head, std::move(note), {}});
    return walkthrough.steps.back();
  }

  // A matrix of the step; rows/cols name what the rows and columns are (tokens or nothing).
  void matrix(Step& step, std::string name, Matrix computed, const std::vector<std::string>& rows = {},
              const std::vector<std::string>& cols = {}) {
    StepMatrix m;
    m.name = std::move(name);
    m.computed = std::move(computed);
    m.row_labels = rows;
    m.col_labels = cols;
    if (step.head >= 0)
      for (const PrintedMatrix& printed : kPrinted) {
        if (printed.head != step.head || m.name != printed.matrix) continue;
        if (followsWorkedExample(scene, example, step.head, m.name))
          attachPrinted(printed, m, step.note);
        else  // an edit of the example, not some other scene that happens to share a shape
          m.printed_dropped = scene.query_tokens == example.query_tokens && m.computed.rows() == printed.rows &&
                              m.computed.cols() == printed.cols;
      }
    step.matrices.push_back(std::move(m));
  }
};

void addProjectionSteps(StepBuilder& b, int i, const HeadResult& hr) {
  const HeadParams& p = b.scene.heads[static_cast<std::size_t>(i)];
  const std::string head = "Head " + std::to_string(i + 1) + ": ";
  const std::vector<std::string>& q_tokens = b.scene.query_tokens;
  const std::vector<std::string>& k_tokens = b.scene.keyTokens();
  // With q_norm / k_norm or rope, Q and K here are the bare projections; the steps below normalise and rotate
  // them into hr.q and hr.k().
  const bool later_steps = b.scene.rope || hasHeadNorm(b.scene);
  const Matrix q = later_steps ? queryProjection(b.scene, i) : hr.q;
  const Matrix k = later_steps ? keyProjection(b.scene, i) : hr.k();
  const std::string group =
      b.scene.grouped() ? " (shared by key/value head " + std::to_string(b.scene.kvOf(i) + 1) + "'s query heads)" : "";
  struct Projection {
    const char* name;
    const char* input;
    const Matrix& w;
    const std::optional<RowVector>& bias;
    const Matrix& out;
    const std::vector<std::string>& tokens;
    const char* what;
    std::string shared;
  };
  const Projection projections[] = {
      {"Q", "X", p.w_q, p.b_q, q, q_tokens, "each query row in this head's d_k-dimensional query space", ""},
      {"K", b.scene.key ? "X_key" : "X", b.scene.wK(i), b.scene.bK(i), k, k_tokens,
       "each key row in the same space as Q", group},
      {"V", b.scene.value ? "X_value" : (b.scene.key ? "X_key" : "X"), b.scene.wV(i), b.scene.bV(i), hr.v(), k_tokens,
       "what each key passes on when attended", group},
  };
  for (const Projection& pr : projections) {
    const std::string n = pr.name;
    Step& step = b.add(
        head + n + " = " + pr.input + " W_" + n + (pr.bias ? " + b_" + n : ""), i,
        n + ": " + pr.what + ", (" + std::to_string(pr.out.rows()) + " x " + std::to_string(pr.out.cols()) + ")" +
            pr.shared + ".");
    b.matrix(step, "W_" + n, pr.w);
    if (pr.bias) b.matrix(step, "b_" + n, *pr.bias);
    b.matrix(step, n, pr.out, pr.tokens);
  }
  if (hasHeadNorm(b.scene)) {
    Step& norm = b.add(head + "normalise Q and K per head (q_norm / k_norm)", i,
                       "Each row of " + std::string(b.scene.q_norm ? "Q" : "") + (b.scene.q_norm && b.scene.k_norm ? " and " : "") +
                           (b.scene.k_norm ? "K" : "") +
                           " divided by sqrt(mean of its squares + eps), then times the norm's weight (RMSNorm over "
                           "d_k, as Qwen3 does before the rotation).");
    b.matrix(norm, "Q normalised", queryBeforeRope(b.scene, i), q_tokens);
    b.matrix(norm, "K normalised", keyBeforeRope(b.scene, i), k_tokens);
  }
  if (!b.scene.rope) return;
  const SceneRope& rope = *b.scene.rope;
  Step& step = b.add(head + "rotate Q and K by position (RoPE)", i,
                     "The first " + std::to_string(rope.dims) + " entries of every q and k turn by position x theta^(-2t/" +
                         std::to_string(rope.dims) + "), theta = " + formatNumber(rope.theta) +
                         ", pairing entry t with t + " + std::to_string(rope.dims / 2) +
                         ": a score then depends on the query and key positions only through their difference.");
  b.matrix(step, "Q rotated", hr.q, q_tokens);
  b.matrix(step, "K rotated", hr.k(), k_tokens);
}

void addAttentionSteps(StepBuilder& b, int i, const HeadResult& hr) {
  const std::string head = "Head " + std::to_string(i + 1) + ": ";
  const std::vector<std::string>& q_tokens = b.scene.query_tokens;
  const std::vector<std::string>& k_tokens = b.scene.keyTokens();
  const float scale = b.scene.headScale(i);
  const Matrix raw = hr.q * hr.k().transpose();  // (n_q, n_k), before scale and mask
  Step& scores = b.add(head + "scores = Q K^T", i, "Dot product of every query with every key.");
  b.matrix(scores, "scores", raw, q_tokens, k_tokens);

  std::string scale_text = b.scene.scale ? "the scene's scale " + formatNumber(scale)
                                         : "1/sqrt(d_k) = 1/sqrt(" +
                                               std::to_string(b.scene.heads[static_cast<std::size_t>(i)].dK()) +
                                               ") = " + formatNumber(scale);
  Step& scaled = b.add(head + "scaled scores = Q K^T * scale", i,
                       "Scores times " + scale_text + (b.scene.hasMask() ? "; masked entries are -inf." : "."));
  b.matrix(scaled, "scaled scores", hr.scores.size() > 0 ? hr.scores : Matrix(raw * scale), q_tokens, k_tokens);

  Step& weights = b.add(head + "weights = softmax(scaled scores)", i,
                        "Softmax of each row: each query's weights over the keys sum to 1" +
                            std::string(b.scene.hasMask() ? " (masked keys get exactly 0)." : "."));
  b.matrix(weights, "weights", hr.weights, q_tokens, k_tokens);

  Step& output = b.add(head + "output = weights V", i, "Each query's weighted average of the value rows.");
  b.matrix(output, "output", hr.output, q_tokens);
}

}  // namespace

int Walkthrough::disagreementCount() const {
  int count = 0;
  for (const Step& step : steps)
    for (const StepMatrix& m : step.matrices) count += static_cast<int>(m.disagreements.size());
  return count;
}

Walkthrough buildWalkthrough(const Scene& scene, const Result& result) {
  const Scene example = workedExampleScene();
  StepBuilder b{scene, example, {}};
  const bool example_input = sameMatrix(scene.query, example.query);

  Step& input = b.add("Input X", -1,
                      "The query rows, one per token" +
                          std::string(scene.key ? "; the key rows (and value rows) are given separately." : ".") +
                          (example_input ? " " + example.description : std::string()));
  b.matrix(input, "X", scene.query, scene.query_tokens);
  if (scene.key) b.matrix(input, "X_key", *scene.key, scene.keyTokens());
  if (scene.value) b.matrix(input, "X_value", *scene.value, scene.keyTokens());

  for (int i = 0; i < scene.numHeads(); ++i) {
    const HeadResult& hr = result.heads[static_cast<std::size_t>(i)];
    addProjectionSteps(b, i, hr);
    addAttentionSteps(b, i, hr);
  }

  Step& concat = b.add("Concatenate the heads", -1,
                       "The head outputs side by side, (" + std::to_string(scene.nQ()) + " x " +
                           std::to_string(scene.concatWidth()) + ").");
  b.matrix(concat, "concat", result.concat, scene.query_tokens);

  if (scene.w_o) {
    const bool example_w_o = example.w_o && sameMatrix(*scene.w_o, *example.w_o) && !scene.b_o;
    Step& out = b.add(std::string("Output = concat W_O") + (scene.b_o ? " + b_O" : ""), -1,
                      example_w_o ? "The text never prints W^O; this scene uses the identity, so the output "
                                    "equals the concatenation."
                                  : "The concatenation projected back to d_model.");
    b.matrix(out, "W_O", *scene.w_o);
    if (scene.b_o) b.matrix(out, "b_O", *scene.b_o);
    b.matrix(out, "output", result.output, scene.query_tokens);
  } else {
    Step& out = b.add("Output = concat", -1, "The scene has no W_O: the output is the concatenation.");
    b.matrix(out, "output", result.output, scene.query_tokens);
  }
  return std::move(b.walkthrough);
}

int StepMatrix::printedDecimals() const {
  int decimals = 0;
  for (double unit = 2 * printed_tolerance; unit < 0.999 && decimals < 8; unit *= 10) ++decimals;
  return decimals;
}

std::string computedNumber(double x, int decimals, bool sign) {
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (std::isnan(x)) return "nan";
  char text[48];
  std::snprintf(text, sizeof text, sign ? "%+.*f" : "%.*f", decimals, x);
  std::string s = text;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0" || s == "+0") s = "0";
  return s;
}

std::string printedNumber(double x, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, x);
  return text;
}

}  // namespace attnscope
