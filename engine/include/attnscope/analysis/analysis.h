// Understanding heads: why a cell is large (score breakdown), whether a head matters (ablation), what kind of
// head it is (head-type scores), which heads are alike (clustering), what an edit changed (A/B diff), and what
// the source texts' mistakes would have computed (pitfalls). All of it reads a Scene and a Result from either
// backend, in double where it sums, so the CPU and GPU results give the same analysis.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attnscope/compute/result.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// [SECTION] Score breakdown of one cell (analysis_breakdown.cpp)

struct ScoreTerm {
  int t = 0;           // dimension of the head's query/key space, 0..d_k-1
  double product = 0;  // q_i[t] * k_j[t]
};

struct SoftmaxEntry {
  int key = 0;
  bool masked = false;  // masked keys take no part: exp and weight are 0
  double score = 0;     // scale * q_i . k_j (double, from the result's float q and k)
  double exp = 0;       // exp(score - row max)
  double weight = 0;    // exp / sum of exp
};

struct CellBreakdown {
  int head = 0, query = 0, key = 0;
  std::vector<ScoreTerm> terms;       // d_k terms, sorted by |product| descending; ties by t ascending
  double dot = 0;                     // sum of the terms (double)
  double scale = 0;                   // the scene's scale for this head
  double score = 0;                   // dot * scale
  std::optional<float> engine_score;  // result.heads[h].scores(i, j) when the result kept scores (-inf if masked)
  float engine_weight = 0;            // result.heads[h].weights(i, j)
  bool masked = false;                // the cell itself is masked
  double row_max = 0;                 // max over the row's unmasked scores (0 when the whole row is masked)
  double exp_sum = 0;                 // sum over unmasked keys of exp(score - row_max)
  double weight = 0;                  // exp(score - row_max) / exp_sum; 0 when masked
  std::vector<SoftmaxEntry> row;      // every key of the row, in key order
  // Input side, only when d_model <= kBreakdownMaxInputDims: q_i[t] = sum_d x_i[d] W_Q[d][t] + b_Q[t] and the
  // same for k_j through W_K with the key row x_j.
  Matrix query_products;           // (d_model, d_k): x_i[d] * W_Q[d][t]; empty when d_model is too large
  Matrix key_products;             // (d_model, d_k): x_j[d] * W_K[d][t]
  RowVector query_bias, key_bias;  // (d_k) b_Q and b_K, zeros when the head has none
  RowVector q, k;                  // (d_k) the result's q_i and k_j (after rotation with rope): the terms' factors
  // With rope: q_i and k_j before the rotation (which the input products sum to), and their positions; else empty.
  RowVector q_before_rope, k_before_rope;  // (d_k)
  // With q_norm / k_norm: q_i and k_j as projected, before the norm (which the input products then sum to).
  RowVector q_projected, k_projected;  // (d_k), else empty
  int query_position = 0, key_position = 0;
};
constexpr int kBreakdownMaxInputDims = 64;

// Throws InputError("head" | "query" | "key", ...) for an index out of range.
CellBreakdown scoreBreakdown(const Scene& scene, const Result& result, int head, int query, int key);

// [SECTION] Head ablation (analysis_ablation.cpp)

enum class AblationMode {
  Zero,  // the head's output rows are replaced by zeros
  Mean,  // each of the head's output rows is replaced by the mean of its rows over the queries
};
// "zero" / "mean"; anything else throws InputError("ablation", ...).
AblationMode parseAblationMode(const std::string& name);
const char* ablationModeName(AblationMode mode);

struct AblationResult {
  std::vector<int> heads;  // the ablated heads, sorted, without repeats
  AblationMode mode = AblationMode::Zero;
  Matrix output;                     // (n_q, d_model): concat' W_O + b_O (or concat' without W_O), computed in double
  Matrix change;                     // (n_q, d_model): output' - output = (concat' - concat) W_O, in double
  std::vector<double> query_change;  // (n_q): L2 norm of each row of `change`
  double total_change = 0;           // Frobenius norm of `change` = sqrt(sum of query_change^2)
};

// Throws InputError("ablate", ...) for an empty set or a head out of range.
AblationResult ablateHeads(const Scene& scene, const Result& result, const std::vector<int>& heads, AblationMode mode);
// importance[h] = ablateHeads(scene, result, {h}, mode).total_change (up to the order of double sums), computed
// from head h's own output and W_O rows only.
std::vector<double> headImportance(const Scene& scene, const Result& result, AblationMode mode);
double oneHeadImportance(const Scene& scene, const Result& result, int head, AblationMode mode);

// [SECTION] Head-type scores (analysis_head_types.cpp); definitions in docs/cli.md ("Head-type scores")

// Every score is a mean over a set of query rows of a weight mass in [0, 1], so it lies in [0, 1]. Rows whose
// weights are all 0 (every key masked) are left out of every mean. A score whose set of rows is empty is
// nullopt (JSON null).
struct HeadTypeScores {
  std::optional<double> previous_token;   // rows i >= 1 with i - 1 < n_k: w[i][i-1]
  std::optional<double> current_token;    // rows i < n_k: w[i][i]
  std::optional<double> first_token;      // every row: w[i][0]
  std::optional<double> local;            // every row: sum of w[i][j] over |i - j| <= window
  std::optional<double> induction;        // rows whose token occurred before (p = latest j < i, j + 1 < n_k with
                                          // key_token[j] == query_token[i]): w[i][p + 1]
  std::optional<double> duplicate_token;  // rows whose token occurred before: sum of w[i][j] over j < i with
                                          // key_token[j] == query_token[i]
};
constexpr int kDefaultLocalWindow = 2;

// weights: (n_q, n_k), a Matrix or a view of a kept map.
HeadTypeScores headTypeScores(const Scene& scene, const Eigen::Ref<const Matrix>& weights,
                              int local_window = kDefaultLocalWindow);
std::vector<HeadTypeScores> allHeadTypeScores(const Scene& scene, const Result& result,
                                              int local_window = kDefaultLocalWindow);
// The score names, in the order above: previous_token, current_token, first_token, local, induction,
// duplicate_token.
const std::vector<std::string>& headTypeScoreNames();
// One score by name; an unknown name throws InputError("score", ...).
std::optional<double> headTypeScore(const HeadTypeScores& scores, const std::string& name);
// The name of the highest defined score when it is at least `threshold` ("previous_token"), else "".
std::string headTypeLabel(const HeadTypeScores& scores, double threshold = 0.5);

// [SECTION] Clustering (analysis_cluster.cpp)

enum class ClusterMetric {
  Cosine,         // distance 1 - cosine similarity of the flattened weight maps
  JensenShannon,  // distance = the mean Jensen-Shannon divergence (nats) of the heads' rows
};
ClusterMetric parseClusterMetric(const std::string& name);  // "cosine" | "js"

// One merge of the dendrogram. Cluster ids as SciPy's linkage matrix: 0..h-1 are the heads, h + k is the
// cluster made by merge k.
struct ClusterMerge {
  int a = 0, b = 0;   // a < b
  double height = 0;  // the average-linkage distance between a and b when merged
  int size = 0;       // heads in the merged cluster
};

struct Clustering {
  std::vector<ClusterMerge> merges;  // h - 1 merges in the order made (heights non-decreasing for UPGMA)
  std::vector<int> order;            // the heads as the dendrogram's leaves read left to right
};

// UPGMA (unweighted pair group method with arithmetic mean, Sokal & Michener 1958): average-linkage
// agglomerative clustering on a symmetric distance matrix (h, h). Ties (equal distances, compared exactly in
// double) go to the pair (a, b), a < b, that comes first in (a, b) order by cluster id.
Clustering clusterUpgma(const Eigen::MatrixXd& distance);
Clustering clusterHeads(const Similarity& similarity, ClusterMetric metric);
Eigen::MatrixXd clusterDistance(const Similarity& similarity, ClusterMetric metric);

// [SECTION] A/B snapshot diff (analysis_diff.cpp)

struct HeadDiff {
  Matrix delta;          // (n_q, n_k): B - A
  float max_abs = 0;     // largest |delta|
  int row = 0, col = 0;  // where; the first in row-major order among equal largest
};
// Throws InputError("snapshot", ...) when A and B differ in head count or any head's (n_q, n_k).
std::vector<HeadDiff> diffResults(const Result& a, const Result& b);

// [SECTION] The source texts' pitfalls (analysis_pitfalls.cpp)

enum class Pitfall {
  ScaleFullWidth,    // 1/sqrt(sum of d_k over heads): 004's DotProductAttention is passed the full Dense(d_k) width
  ScaleDModel,       // 1/sqrt(d_model) instead of 1/sqrt(d_k of the head)
  NoScale,           // no scaling: 002 "let's ignore the scaling factor 1/sqrt(d_h) for now"
  MaskIgnored,       // 001's MultiHeadAttention.forward(X, mask=None) accepts a mask and never uses it
  SoftmaxQueryAxis,  // softmax over the query axis (axis 0) instead of the key axis
  ReshapeDkForDv,    // 004's reshape_tensor reverts to (batch, seq, self.d_k) where the heads' width is d_v
};

struct PitfallInfo {
  Pitfall pitfall;
  const char* name;    // the CLI's --pitfall value
  const char* title;   // the mistake in a few words, for a reader ("Mask ignored")
  const char* source;  // which seed text, and where
  const char* what;    // one line on the mistaken computation
};
const std::vector<PitfallInfo>& pitfallList();
const PitfallInfo& pitfallInfo(Pitfall pitfall);
Pitfall parsePitfall(const std::string& name);  // unknown -> InputError("pitfall", ...)

struct PitfallResult {
  Pitfall pitfall = Pitfall::NoScale;
  std::vector<Matrix> weights;              // per head (n_q, n_k): the mistaken weights
  std::vector<Matrix> weight_diff;          // per head (n_q, n_k): mistaken - correct
  std::vector<double> max_abs_weight_diff;  // per head
  std::vector<double> entropy;              // per head: mean row entropy (nats) of the mistaken distributions
  std::vector<double> correct_entropy;      // per head: the same for the correct weights (= HeadStats::entropy)
  std::optional<Matrix> output;             // (n_q, d_model): the mistaken layer output, when it can be computed
  std::optional<Matrix> output_diff;        // mistaken - correct output
  double max_abs_output_diff = 0;
  std::string note;  // when the output is absent or the mistake has no effect on this scene, why
};

// The mistaken computation from the result's Q, K, V (in double), beside `correct`. Entropy is taken along the
// axis the softmax normalised (rows for every mode but SoftmaxQueryAxis, whose columns are the distributions),
// over the distributions that are not all zero.
PitfallResult applyPitfall(const Scene& scene, const Result& correct, Pitfall pitfall);

// Mean over the non-zero rows of -sum_j w log w (nats), in double, leaving out rows with one allowed key in
// `allowed` (null: every key allowed) as HeadStats::entropy does; 0 when no row is left.
double meanRowEntropy(const Matrix& weights, const MaskMatrix* allowed = nullptr);

}  // namespace attnscope
