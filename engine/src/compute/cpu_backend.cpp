// The reference backend: Eigen on the CPU. Projections of all heads run as one stacked product; scores,
// softmax and the weighted sum run head by head, heads spread over OpenMP threads.
#include "attnscope/compute/cpu_backend.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

#include "attnscope/compute/blas_kernels.h"
#include "attnscope/compute/scene_rope.h"
#include "attnscope/compute/similarity.h"
#include "attnscope/compute/thread_limit.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/scene/key_mask.h"
#include "attnscope/text_bounds.h"

namespace attnscope {

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// The first query head of key/value head g: where the group's K and V are computed (g itself without kv_heads).
int firstHeadOf(const Scene& scene, int g) {
  if (!scene.grouped()) return g;
  for (int h = 0; h < scene.numHeads(); ++h)
    if (scene.heads[static_cast<std::size_t>(h)].kv == g) return h;
  return 0;  // unreachable in a valid scene: validateScene refuses a key/value head no query head uses
}

// One of the three projections: its weight and bias for unit i (a query head; for K and V a key/value head,
// which is each head itself in a scene without kv_heads), and where the product goes.
struct Projection {
  const Matrix& (*weight)(const Scene&, int);
  const std::optional<RowVector>& (*bias)(const Scene&, int);
  Matrix& (*out)(HeadResult&);  // where the product goes: the head's q, or its group's K or V
  bool per_kv_head;
};
const Projection kQuery{[](const Scene& s, int i) -> const Matrix& { return s.heads[static_cast<std::size_t>(i)].w_q; },
                        [](const Scene& s, int i) -> const std::optional<RowVector>& {
                          return s.heads[static_cast<std::size_t>(i)].b_q;
                        },
                        [](HeadResult& r) -> Matrix& { return r.q; }, false};
const Projection kKey{[](const Scene& s, int g) -> const Matrix& { return s.wK(firstHeadOf(s, g)); },
                      [](const Scene& s, int g) -> const std::optional<RowVector>& { return s.bK(firstHeadOf(s, g)); },
                      [](HeadResult& r) -> Matrix& { return r.ownK(); }, true};
const Projection kValue{[](const Scene& s, int g) -> const Matrix& { return s.wV(firstHeadOf(s, g)); },
                        [](const Scene& s, int g) -> const std::optional<RowVector>& { return s.bV(firstHeadOf(s, g)); },
                        [](HeadResult& r) -> Matrix& { return r.ownV(); }, true};

int units(const Scene& scene, const Projection& p) { return p.per_kv_head ? scene.numKvHeads() : scene.numHeads(); }

// rows (n, d_model) times the given projections of every head, stacked side by side into one product
// (d_model, sum of widths) so that the BLAS sees one wide matrix instead of 3h thin ones; then sliced into each
// head's Q, K or V, (n, width of that head). A key/value head's K and V go to the first head of its group
// (shareKeyValues copies them to the rest).
void projectStacked(const Scene& scene, const Matrix& rows, const std::vector<Projection>& projections,
                    ProjectionWorkspace& work, Result& result) {
  int width = 0;
  for (const Projection& p : projections)
    for (int i = 0; i < units(scene, p); ++i) width += static_cast<int>(p.weight(scene, i).cols());
  Matrix& w = work.stacked_weights;
  w.resize(scene.d_model, width);
  RowVector b = RowVector::Zero(width);
  bool any_bias = false;
  int col = 0;
  for (const Projection& p : projections)
    for (int i = 0; i < units(scene, p); ++i) {
      const Matrix& hw = p.weight(scene, i);
      w.middleCols(col, hw.cols()) = hw;
      if (const std::optional<RowVector>& hb = p.bias(scene, i)) {
        b.segment(col, hb->size()) = *hb;
        any_bias = true;
      }
      col += static_cast<int>(hw.cols());
    }
  Matrix& projected = work.projected;
  projected.resize(rows.rows(), width);
  projected.noalias() = rows * w;
  if (any_bias) projected.rowwise() += b;
  col = 0;
  for (const Projection& p : projections)
    for (int i = 0; i < units(scene, p); ++i) {
      const Eigen::Index head_width = p.weight(scene, i).cols();
      const int head = p.per_kv_head ? firstHeadOf(scene, i) : i;
      p.out(result.heads[static_cast<std::size_t>(head)]) = projected.middleCols(col, head_width);
      col += static_cast<int>(head_width);
    }
}

// After the projections: every query normalised (q_norm) and rotated (rope), each key/value head's K once, then
// its K and V shared by the group's first head with the others (held once). Nothing to do for a scene with neither.
void shareKeyValues(const Scene& scene, Result& result) {
  const std::optional<SceneRopeTables> rope = sceneRopeTables(scene);
  for (int h = 0; h < scene.numHeads(); ++h) {
    HeadResult& hr = result.heads[static_cast<std::size_t>(h)];
    const int first = firstHeadOf(scene, scene.kvOf(h));
    applyHeadNorm(scene.q_norm, hr.q);  // q_norm / k_norm come before the rotation (Qwen3)
    if (rope) rope->query.rotate(hr.q);
    if (first == h) {
      applyHeadNorm(scene.k_norm, hr.ownK());
      if (rope) rope->key.rotate(hr.ownK());
      continue;
    }
    const HeadResult& owner = result.heads[static_cast<std::size_t>(first)];  // first < h: already rotated
    hr.shareKeyValues(owner);
  }
}

// Q, K and V of every head, one product per distinct input: self-attention projects X once for all three.
void projectAllHeads(const Scene& scene, ProjectionWorkspace& work, Result& result) {
  const Matrix* rows[] = {&scene.query, &scene.keyRows(), &scene.valueRows()};
  const Projection* kinds[] = {&kQuery, &kKey, &kValue};
  bool done[3] = {false, false, false};
  for (int i = 0; i < 3; ++i) {
    if (done[i]) continue;
    std::vector<Projection> same_rows;
    for (int j = i; j < 3; ++j)
      if (!done[j] && rows[j] == rows[i]) {
        same_rows.push_back(*kinds[j]);
        done[j] = true;
      }
    projectStacked(scene, *rows[i], same_rows, work, result);
  }
  shareKeyValues(scene, result);
}

Matrix projectOne(const Matrix& rows, const Matrix& w, const std::optional<RowVector>& b) {
  Matrix projected = rows * w;
  if (b) projected.rowwise() += *b;
  return projected;
}

// One row of scores -> weights in place: masked entries exactly 0, a fully masked row all 0. Sets the row's
// statistics: max = the largest allowed score (-inf when none), sum = sum of exp(score - max) (0 when none).
// allowed: that row's flags (n_k), or null without a mask.
void maskedSoftmaxRow(Eigen::Ref<RowVector> row, const std::uint8_t* allowed, float& max, float& sum) {
  if (allowed)
    for (Eigen::Index j = 0; j < row.size(); ++j)
      if (!allowed[j]) row[j] = kMasked;
  max = row.maxCoeff();
  if (max == kMasked) {
    // Every key masked: weights 0. But a key that may be attended with a score of -inf (q . k overflowed) has
    // no defined weight: NaN, which checkResultFinite names, rather than a row passed off as fully masked.
    bool any_allowed = !allowed;
    for (Eigen::Index j = 0; allowed && j < row.size() && !any_allowed; ++j) any_allowed = allowed[j] != 0;
    row.setConstant(any_allowed ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
    sum = 0.0f;
    return;
  }
  row = (row.array() - max).exp();
  if (allowed)  // exp(-inf) may come back as a denormal from a vectorised exp; masked means exactly 0
    for (Eigen::Index j = 0; j < row.size(); ++j)
      if (!allowed[j]) row[j] = 0.0f;
  sum = row.sum();
  row /= sum;
}

// Query rows per block: the block's scores (rows, n_k) stay within ~1 MiB of cache while they are scaled,
// masked, softmaxed and multiplied by V, instead of streaming the whole (n_q, n_k) map through memory 3 times.
// Without kept maps the block is scratch, and taller blocks (~8 MiB) keep the products near the BLAS limit
// when n_k is long (8 rows x 32k keys would re-read K and V from memory for every 8 queries).
int blockRows(int n_k, bool keep_maps) {
  return std::clamp((keep_maps ? 262144 : 2097152) / std::max(1, n_k), 8, 4096);
}

// Computes query rows [row0, row0 + rows) of the head's weights into `weights` (rows, n_k): a block of the
// kept map, or scratch. Sets those rows' statistics and head output, and their scores when kept.
void attendBlock(const Scene& scene, int head, const KeyMask& mask, bool keep_scores, HeadResult& hr, int row0,
                 int rows, Eigen::Ref<Matrix> weights, std::vector<std::uint8_t>& allowed) {
  const float scale = scene.headScale(head);
  weights.noalias() = scale * hr.q.middleRows(row0, rows) * hr.k().transpose();  // the scale rides in GEMM's alpha
  allowed.resize(static_cast<std::size_t>(mask.any() ? scene.nK() : 0));
  for (int i = 0; i < rows; ++i) {
    if (mask.any()) mask.fillRow(row0 + i, 0, scene.nK(), allowed.data());
    if (keep_scores) {
      auto scores = hr.scores.row(row0 + i);
      scores = weights.row(i);
      if (mask.any())
        for (int j = 0; j < scene.nK(); ++j)
          if (!allowed[static_cast<std::size_t>(j)]) scores[j] = kMasked;
    }
    maskedSoftmaxRow(weights.row(i), mask.any() ? allowed.data() : nullptr, hr.row_max[row0 + i],
                     hr.row_sum[row0 + i]);
  }
  hr.output.middleRows(row0, rows).noalias() = weights * hr.v();
}

// Every head, in blocks of query rows spread over the OpenMP threads. keep_maps: the weights go into each
// head's (n_q, n_k) map; else each thread's block is scratch, and only O(n d) per head stays.
// `cancel` (ComputeOptions::cancel): read before each block; once true the remaining blocks are skipped.
void attendHeads(const Scene& scene, const std::vector<int>& heads, bool keep_maps, bool keep_scores,
                 Result& result, const std::atomic<bool>* cancel = nullptr) {
  const int n_q = scene.nQ(), n_k = scene.nK(), block = blockRows(n_k, keep_maps);
  const int blocks_per_head = (n_q + block - 1) / block;
  keep_scores = keep_scores && keep_maps;
  for (int head : heads) {
    HeadResult& hr = result.heads[static_cast<std::size_t>(head)];
    if (keep_maps) hr.weights.resize(n_q, n_k);
    else hr.weights.resize(0, 0);
    hr.output.resize(n_q, hr.v().cols());
    hr.row_max.resize(n_q);
    hr.row_sum.resize(n_q);
    if (keep_scores) hr.scores.resize(n_q, n_k);
    else hr.scores.resize(0, 0);
  }
  const KeyMask mask(scene);
  const int tasks = static_cast<int>(heads.size()) * blocks_per_head;
#pragma omp parallel
  {
    Matrix scratch;
    std::vector<std::uint8_t> allowed;
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < tasks; ++t) {
      if (cancel && cancel->load(std::memory_order_relaxed)) continue;  // an OpenMP loop cannot break
      const int head = heads[static_cast<std::size_t>(t / blocks_per_head)];
      const int row0 = (t % blocks_per_head) * block, rows = std::min(block, n_q - row0);
      HeadResult& hr = result.heads[static_cast<std::size_t>(head)];
      if (keep_maps) {
        attendBlock(scene, head, mask, keep_scores, hr, row0, rows, hr.weights.middleRows(row0, rows), allowed);
      } else {
        scratch.resize(rows, n_k);
        attendBlock(scene, head, mask, false, hr, row0, rows, scratch, allowed);
      }
    }
  }
}

std::string cpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

std::string rowLabel(const Scene& scene, int row) {
  return "query row " + std::to_string(row) + " (" + quoteFragment(scene.query_tokens[static_cast<std::size_t>(row)], 40) + ")";
}

}  // namespace

// At most maxComputeThreads(): a caller's count past it would only ask libgomp for threads it may fail to make.
CpuBackend::CpuBackend(int threads)
    : threads_(std::min(maxComputeThreads(),
                        threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency())))) {}

std::string CpuBackend::device() const {
  return cpuModelName() + ", " + std::to_string(threads_) + " thread" + (threads_ == 1 ? "" : "s") +
         " (Eigen, OpenBLAS " + blasCoreName() + " kernels)";
}

void CpuBackend::computeInto(const Scene& scene, Result& result, const ComputeOptions& options) {
  const bool keep_maps = keepsMaps(scene, options);
  Limits limits;
  limits.with_maps = keep_maps;
  validateScene(scene, limits);
  omp_set_num_threads(threads_);
  Eigen::setNbThreads(threads_);

  result.heads.resize(scene.heads.size());
  projectAllHeads(scene, workspace_, result);

  std::vector<int> all_heads(scene.heads.size());
  for (std::size_t i = 0; i < all_heads.size(); ++i) all_heads[i] = static_cast<int>(i);
  attendHeads(scene, all_heads, keep_maps, options.keep_scores, result, options.cancel);
  if (options.cancel && options.cancel->load()) throw ComputeCancelled();

  finishResult(scene, result, options.analysis);
}

void CpuBackend::recomputeHead(const Scene& scene, int head, Result& result) {
  HeadResult& hr = result.heads.at(static_cast<std::size_t>(head));
  const bool keep_maps = hr.hasMap();
  Limits limits;
  limits.with_maps = keep_maps;
  validateScene(scene, limits);
  Eigen::setNbThreads(threads_);
  omp_set_num_threads(threads_);
  if (scene.grouped()) {  // an edit of a shared W_K or W_V changes every head of the group: recompute them all
    const bool keep_scores = hr.scores.size() > 0;
    projectAllHeads(scene, workspace_, result);
    std::vector<int> all_heads(scene.heads.size());
    for (std::size_t i = 0; i < all_heads.size(); ++i) all_heads[i] = static_cast<int>(i);
    attendHeads(scene, all_heads, keep_maps, keep_scores, result);
    finishResult(scene, result, true);
    return;
  }
  const HeadParams& p = scene.heads.at(static_cast<std::size_t>(head));
  hr.q = projectOne(scene.query, p.w_q, p.b_q);
  hr.ownK() = projectOne(scene.keyRows(), p.w_k, p.b_k);
  hr.ownV() = projectOne(scene.valueRows(), p.w_v, p.b_v);
  applyHeadNorm(scene.q_norm, hr.q);
  applyHeadNorm(scene.k_norm, hr.ownK());
  if (const std::optional<SceneRopeTables> rope = sceneRopeTables(scene)) {
    rope->query.rotate(hr.q);
    rope->key.rotate(hr.ownK());
  }
  attendHeads(scene, {head}, keep_maps, hr.scores.size() > 0, result);
  finishResult(scene, result, true, head);
}

std::vector<std::string> fullyMaskedRowWarnings(const Scene& scene) {
  std::vector<std::string> warnings;
  if (!scene.hasMask()) return warnings;
  const KeyMask mask(scene);
  std::vector<int> empty_rows;
  for (int i = 0; i < scene.nQ(); ++i)
    if (mask.allowedCount(i) == 0) empty_rows.push_back(i);
  constexpr std::size_t kListed = 5;
  for (std::size_t r = 0; r < empty_rows.size() && r < kListed; ++r)
    warnings.push_back(rowLabel(scene, empty_rows[r]) + " has every key masked: its weights are 0 in every head");
  if (empty_rows.size() > kListed)
    warnings.push_back(std::to_string(empty_rows.size() - kListed) + " more query rows have every key masked");
  return warnings;
}

void finishResult(const Scene& scene, Result& result, bool analysis, int changed_head) {
  const int n_q = scene.nQ();
  result.concat.resize(n_q, scene.concatWidth());
  int col = 0;
  for (const HeadResult& hr : result.heads) {
    result.concat.middleCols(col, hr.output.cols()) = hr.output;
    col += static_cast<int>(hr.output.cols());
  }
  if (scene.w_o) {
    result.output.noalias() = result.concat * *scene.w_o;
    if (scene.b_o) result.output.rowwise() += *scene.b_o;
  } else {
    result.output = result.concat;
  }

  checkResultFinite(scene, result);
  result.warnings = fullyMaskedRowWarnings(scene);

  if (!analysis) {
    result.similarity = {};
    result.stats.clear();
    return;
  }
  const std::size_t h = result.heads.size();
  const bool maps = !result.heads.empty() && result.heads[0].hasMap();
  const bool has_full_analysis = result.stats.size() == h && result.similarity.cosine.rows() == static_cast<long>(h);
  if (!maps) {  // streamed over blocks of query rows: the same numbers, O(n d) memory
    analyseHeadsStreamed(scene, result);
    return;
  }
  const std::vector<std::uint8_t> single_key_rows = singleKeyRows(scene);
  if (changed_head < 0 || !has_full_analysis) {
    analyseHeads(result, single_key_rows);
    return;
  }
  std::vector<const Matrix*> maps_of_heads;
  for (const HeadResult& hr : result.heads) maps_of_heads.push_back(&hr.weights);
  updateHeadSimilarity(maps_of_heads, changed_head, result.similarity);
  result.stats[static_cast<std::size_t>(changed_head)] =
      headStats(*maps_of_heads[static_cast<std::size_t>(changed_head)], single_key_rows);
}

}  // namespace attnscope
