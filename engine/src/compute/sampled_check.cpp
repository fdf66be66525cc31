// A result checked against the CPU engine on sampled query rows (compute/sampled_check.h).
#include "attnscope/compute/sampled_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/scene/key_mask.h"

namespace attnscope {

namespace {

constexpr int kStrata = 32;
constexpr double kEps32 = 5.960464477539063e-8;  // 2^-24, float32's unit roundoff
constexpr double kBase = 1e-4, kUlps = 32;

// Rows `rows` of m, as a new matrix (rows.size(), m.cols()).
Matrix pickRows(const Matrix& m, const std::vector<int>& rows) {
  Matrix out(static_cast<Eigen::Index>(rows.size()), m.cols());
  for (std::size_t s = 0; s < rows.size(); ++s) out.row(static_cast<Eigen::Index>(s)) = m.row(rows[s]);
  return out;
}

RowVector pickEntries(const RowVector& v, const std::vector<int>& rows) {
  RowVector out(static_cast<Eigen::Index>(rows.size()));
  for (std::size_t s = 0; s < rows.size(); ++s) out[static_cast<Eigen::Index>(s)] = v[rows[s]];
  return out;
}

// The scene of `rows`' queries over every key: what the CPU computes for the check.
Scene rowsScene(const Scene& scene, const std::vector<int>& rows) {
  Scene sub = scene;
  sub.query = pickRows(scene.query, rows);
  sub.key = scene.keyRows();
  sub.value = scene.valueRows();
  sub.key_tokens = scene.keyTokens();
  sub.query_tokens.clear();
  const std::vector<int> positions = scene.queryPositions();
  sub.query_positions.clear();
  for (int r : rows) {
    if (r < static_cast<int>(scene.query_tokens.size())) sub.query_tokens.push_back(scene.query_tokens[static_cast<std::size_t>(r)]);
    sub.query_positions.push_back(positions[static_cast<std::size_t>(r)]);
  }
  sub.key_positions = scene.keyPositions();
  // The mask as the rows see it (causal by index, padding, explicit), O(rows x n_k), never (n_q, n_k).
  if (scene.hasMask()) {
    const KeyMask mask(scene);
    sub.mask = MaskKind::Explicit;
    sub.explicit_mask.resize(static_cast<Eigen::Index>(rows.size()), scene.nK());
    std::vector<std::uint8_t> flags(static_cast<std::size_t>(scene.nK()));
    for (std::size_t s = 0; s < rows.size(); ++s) {
      mask.fillRow(rows[s], 0, scene.nK(), flags.data());
      for (int j = 0; j < scene.nK(); ++j) sub.explicit_mask(static_cast<Eigen::Index>(s), j) = flags[static_cast<std::size_t>(j)];
    }
    sub.key_padding.clear();
  }
  return sub;
}

class Comparer {
 public:
  double worst_ratio = 0;
  std::optional<CheckMismatch> worst;

  void check(int head, int row, const char* what, int column, float got, float cpu, double tolerance) {
    double error = 0;
    if (!std::isfinite(cpu))
      error = got == cpu ? 0 : std::numeric_limits<double>::infinity();  // -inf meets -inf; a NaN never matches
    else if (!std::isfinite(got))
      error = std::numeric_limits<double>::infinity();
    else
      error = std::abs(static_cast<double>(got) - cpu) / (1.0 + std::abs(static_cast<double>(cpu)));
    const double ratio = error / tolerance;
    if (!(ratio <= worst_ratio)) {
      worst_ratio = ratio;
      if (ratio > 1) worst = CheckMismatch{head, row, what, column, got, cpu, error, tolerance};
    }
  }
  void shape(int head, const char* what, Eigen::Index rows, Eigen::Index cols, Eigen::Index want_rows,
             Eigen::Index want_cols) {
    if (rows == want_rows && cols == want_cols) return;
    worst_ratio = std::numeric_limits<double>::infinity();
    worst = CheckMismatch{head, -1, std::string(what) + " of shape (" + std::to_string(rows) + ", " + std::to_string(cols) +
                                        ") where (" + std::to_string(want_rows) + ", " + std::to_string(want_cols) +
                                        ") was expected",
                          -1, 0, 0, std::numeric_limits<double>::infinity(), 0};
  }
  bool shapesBad() const { return worst && worst->row < 0; }
};

std::string sixDigits(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

}  // namespace

std::vector<int> sampledQueryRows(int n_q, std::uint64_t seed) {
  std::vector<int> rows;
  if (n_q <= kStrata + 2) {
    for (int r = 0; r < n_q; ++r) rows.push_back(r);
    return rows;
  }
  std::mt19937_64 rng(seed);
  rows.push_back(0);
  const int inner = n_q - 2;  // rows 1 .. n_q - 2, cut into kStrata strata of near-equal size
  for (int s = 0; s < kStrata; ++s) {
    const int lo = 1 + static_cast<int>(static_cast<long long>(s) * inner / kStrata);
    const int hi = 1 + static_cast<int>(static_cast<long long>(s + 1) * inner / kStrata);  // exclusive, > lo
    rows.push_back(lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo)));
  }
  rows.push_back(n_q - 1);
  return rows;
}

RowReference referenceRows(const Scene& scene, const std::vector<int>& rows, bool with_maps, bool keep_scores) {
  RowReference reference;
  reference.rows = rows;
  const Scene sub = rowsScene(scene, rows);
  // The check's work is K and V for every key (2 n_k d_model (d_k + d_v) flops a head) and the sampled rows.
  // Below kOneThreadFlops, one thread: the rows are little work (~50 ms at n = 512, d_model 512, 8 heads), and
  // OpenMP's barriers beside a busy GPU driver or UI (or another compute) cost more than they save (~400 ms on 2
  // loaded cores). Above it, every thread: on an H200 the GPU computed n = 4096, 32 heads, d_model 4096 in 68 ms
  // and the one-thread check took 10.0 s (275 GFLOP).
  constexpr double kOneThreadFlops = 2e9;
  double flops = 0;
  for (int h = 0; h < scene.numHeads(); ++h)
    flops += 2.0 * scene.nK() * scene.d_model * (scene.heads[static_cast<std::size_t>(h)].dK() + scene.dV(h));
  CpuBackend(flops < kOneThreadFlops ? 1 : 0).computeInto(sub, reference.cpu,
                           {.keep_scores = keep_scores, .analysis = false, .maps = with_maps ? MapPolicy::Keep : MapPolicy::Drop});
  for (int h = 0; h < scene.numHeads(); ++h) reference.scales.push_back(scene.headScale(h));
  if (scene.w_o) reference.w_o_column_sum = scene.w_o->cwiseAbs().colwise().sum().maxCoeff();
  return reference;
}

Result sampledRowsOf(const Result& result, const std::vector<int>& rows) {
  Result sampled;
  sampled.heads.resize(result.heads.size());
  for (std::size_t h = 0; h < result.heads.size(); ++h) {
    const HeadResult& from = result.heads[h];
    HeadResult& to = sampled.heads[h];
    if (from.hasMap()) to.weights = pickRows(from.weights, rows);
    if (from.scores.size() > 0) to.scores = pickRows(from.scores, rows);
    to.row_max = pickEntries(from.row_max, rows);
    to.row_sum = pickEntries(from.row_sum, rows);
    to.output = pickRows(from.output, rows);
  }
  sampled.output = pickRows(result.output, rows);
  return sampled;
}

std::optional<CheckMismatch> compareSampledRows(const Result& sampled, const RowReference& reference,
                                                double* largest_ratio) {
  Comparer compare;
  const Result& cpu = reference.cpu;
  const Eigen::Index n = static_cast<Eigen::Index>(reference.rows.size());
  compare.shape(-1, "heads", static_cast<Eigen::Index>(sampled.heads.size()), 1,
                static_cast<Eigen::Index>(cpu.heads.size()), 1);
  compare.shape(-1, "output", sampled.output.rows(), sampled.output.cols(), n, cpu.output.cols());
  // The output's tolerance per row: the largest of its heads' output tolerances, through W_O.
  std::vector<double> output_tolerance(static_cast<std::size_t>(n), 0.0);
  for (std::size_t h = 0; h < cpu.heads.size() && !compare.shapesBad(); ++h) {
    const HeadResult& got = sampled.heads[h];
    const HeadResult& want = cpu.heads[h];
    const int head = static_cast<int>(h);
    const Eigen::Index n_k = want.k().rows();
    if (want.hasMap()) compare.shape(head, "weights", got.weights.rows(), got.weights.cols(), n, n_k);
    if (want.scores.size() > 0) compare.shape(head, "scores", got.scores.rows(), got.scores.cols(), n, n_k);
    compare.shape(head, "m", got.row_max.size(), 1, n, 1);
    compare.shape(head, "l", got.row_sum.size(), 1, n, 1);
    compare.shape(head, "head output", got.output.rows(), got.output.cols(), n, want.output.cols());
    if (compare.shapesBad()) break;
    // A: the largest |scale| sum_d |q_rd| |k_jd| of each row, over every key (a bound on its scores' size).
    const Matrix q_abs = want.q.cwiseAbs(), k_abs = want.k().cwiseAbs();
    // (rows, n_k): Eigen's own loop, not the BLAS, whose threads' barriers cost ~200 ms here on 2 loaded cores
    const Matrix products = q_abs.lazyProduct(k_abs.transpose());
    const Eigen::VectorXf magnitude = products.rowwise().maxCoeff() * std::abs(reference.scales[h]);
    const double v_max = want.v().size() > 0 ? want.v().cwiseAbs().maxCoeff() : 0.0;
    for (Eigen::Index s = 0; s < n; ++s) {
      const int row = reference.rows[static_cast<std::size_t>(s)];
      const double t = kBase + kUlps * kEps32 * (magnitude[s] + std::sqrt(static_cast<double>(n_k)));
      for (Eigen::Index j = 0; j < (want.hasMap() ? n_k : 0); ++j)
        compare.check(head, row, "weights", static_cast<int>(j), got.weights(s, j), want.weights(s, j), t);
      for (Eigen::Index j = 0; j < (want.scores.size() > 0 ? n_k : 0); ++j)
        compare.check(head, row, "scores", static_cast<int>(j), got.scores(s, j), want.scores(s, j), t);
      compare.check(head, row, "m", -1, got.row_max[s], want.row_max[s], t);
      compare.check(head, row, "l", -1, got.row_sum[s], want.row_sum[s], t);
      const double t_out = t * (1 + v_max);
      for (Eigen::Index c = 0; c < want.output.cols(); ++c)
        compare.check(head, row, "head output", static_cast<int>(c), got.output(s, c), want.output(s, c), t_out);
      double& o = output_tolerance[static_cast<std::size_t>(s)];
      o = std::max(o, t_out * (reference.w_o_column_sum > 0 ? 1 + reference.w_o_column_sum : 1));
    }
  }
  if (!compare.shapesBad())
    for (Eigen::Index s = 0; s < n; ++s)
      for (Eigen::Index c = 0; c < cpu.output.cols(); ++c)
        compare.check(-1, reference.rows[static_cast<std::size_t>(s)], "output", static_cast<int>(c), sampled.output(s, c),
                      cpu.output(s, c), output_tolerance[static_cast<std::size_t>(s)]);
  if (largest_ratio) *largest_ratio = compare.worst_ratio;
  return compare.worst;
}

std::optional<CheckMismatch> checkSampledRows(const Scene& scene, const Result& result, std::uint64_t seed,
                                              double* largest_ratio) {
  const std::vector<int> rows = sampledQueryRows(scene.nQ(), seed);
  const bool with_maps = !result.heads.empty() && result.heads[0].hasMap();
  const bool keep_scores = !result.heads.empty() && result.heads[0].scores.size() > 0;
  const RowReference reference = referenceRows(scene, rows, with_maps, keep_scores);
  return compareSampledRows(sampledRowsOf(result, rows), reference, largest_ratio);
}

std::string CheckMismatch::text() const {
  if (row < 0) return head >= 0 ? "head " + std::to_string(head) + ": " + what : what;
  std::string where = head >= 0 ? "head " + std::to_string(head) : std::string("the output");
  where += ", query row " + std::to_string(row) + ": " + what;
  if (column >= 0) where += (what == "weights" || what == "scores" ? " at key " : " at column ") + std::to_string(column);
  return where + " is " + sixDigits(got) + " where the CPU's is " + sixDigits(cpu) + " (error " + sixDigits(error) +
         ", tolerance " + sixDigits(tolerance) + ")";
}

}  // namespace attnscope
