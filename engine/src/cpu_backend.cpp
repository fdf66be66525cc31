// The reference backend: Eigen on the CPU. Projections of all heads run as one stacked product; scores,
// softmax and the weighted sum run head by head, heads spread over OpenMP threads.
#include "attnscope/cpu_backend.h"

#include <omp.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

#include "attnscope/similarity.h"

namespace attnscope {

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// Stacks one projection of every head side by side, (d_model, sum of widths), and its bias (or zeros).
template <typename GetW, typename GetB>
void stackProjections(const Scene& scene, GetW get_w, GetB get_b, Matrix& w, RowVector& b, bool& any_bias) {
  int width = 0;
  for (const HeadParams& head : scene.heads) width += static_cast<int>(get_w(head).cols());
  w.resize(scene.d_model, width);
  b = RowVector::Zero(width);
  any_bias = false;
  int col = 0;
  for (const HeadParams& head : scene.heads) {
    const Matrix& hw = get_w(head);
    w.middleCols(col, hw.cols()) = hw;
    if (const std::optional<RowVector>& hb = get_b(head)) {
      b.segment(col, hb->size()) = *hb;
      any_bias = true;
    }
    col += static_cast<int>(hw.cols());
  }
}

// rows (n, d_model) -> per-head slices of rows W + b, each (n, width of head).
template <typename GetW, typename GetB>
void projectAllHeads(const Scene& scene, const Matrix& rows, GetW get_w, GetB get_b, Matrix HeadResult::*out,
                     Result& result) {
  Matrix w, projected;
  RowVector b;
  bool any_bias = false;
  stackProjections(scene, get_w, get_b, w, b, any_bias);
  projected.noalias() = rows * w;
  if (any_bias) projected.rowwise() += b;
  int col = 0;
  for (std::size_t i = 0; i < scene.heads.size(); ++i) {
    const Eigen::Index width = get_w(scene.heads[i]).cols();
    result.heads[i].*out = projected.middleCols(col, width);
    col += static_cast<int>(width);
  }
}

Matrix projectOne(const Matrix& rows, const Matrix& w, const std::optional<RowVector>& b) {
  Matrix projected = rows * w;
  if (b) projected.rowwise() += *b;
  return projected;
}

// scores (n_q, n_k) -> weights in place: masked entries exactly 0, a fully masked row all 0.
void maskedSoftmaxInPlace(Matrix& m, const MaskMatrix* allowed) {
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    auto row = m.row(i);
    if (allowed) {
      const std::uint8_t* a = allowed->row(i).data();
      for (Eigen::Index j = 0; j < row.size(); ++j)
        if (!a[j]) row[j] = kMasked;
    }
    const float max = row.maxCoeff();
    if (max == kMasked) {
      row.setZero();
      continue;
    }
    row = (row.array() - max).exp();
    if (allowed) {  // exp(-inf) may come back as a denormal from a vectorised exp; masked means exactly 0
      const std::uint8_t* a = allowed->row(i).data();
      for (Eigen::Index j = 0; j < row.size(); ++j)
        if (!a[j]) row[j] = 0.0f;
    }
    row /= row.sum();
  }
}

// Q, K, V of the head are set; computes scores, weights and the head output.
void attendHead(const Scene& scene, int head, const MaskMatrix* allowed, bool keep_scores, HeadResult& hr) {
  const float scale = scene.headScale(head);
  hr.weights.noalias() = hr.q * hr.k.transpose();
  hr.weights *= scale;
  if (keep_scores) {
    hr.scores = hr.weights;
    if (allowed) hr.scores = (allowed->array() != 0).select(hr.scores, kMasked);
  } else {
    hr.scores.resize(0, 0);
  }
  maskedSoftmaxInPlace(hr.weights, allowed);
  hr.output.noalias() = hr.weights * hr.v;
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
  return "query row " + std::to_string(row) + " ('" + scene.query_tokens[static_cast<std::size_t>(row)] + "')";
}

}  // namespace

CpuBackend::CpuBackend(int threads)
    : threads_(threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {}

std::string CpuBackend::device() const {
  return cpuModelName() + ", " + std::to_string(threads_) + " thread" + (threads_ == 1 ? "" : "s") + " (Eigen)";
}

void CpuBackend::computeInto(const Scene& scene, Result& result, const ComputeOptions& options) {
  validateScene(scene);
  omp_set_num_threads(threads_);
  Eigen::setNbThreads(threads_);

  result.heads.resize(scene.heads.size());
  projectAllHeads(
      scene, scene.query, [](const HeadParams& p) -> const Matrix& { return p.w_q; },
      [](const HeadParams& p) -> const std::optional<RowVector>& { return p.b_q; }, &HeadResult::q, result);
  projectAllHeads(
      scene, scene.keyRows(), [](const HeadParams& p) -> const Matrix& { return p.w_k; },
      [](const HeadParams& p) -> const std::optional<RowVector>& { return p.b_k; }, &HeadResult::k, result);
  projectAllHeads(
      scene, scene.valueRows(), [](const HeadParams& p) -> const Matrix& { return p.w_v; },
      [](const HeadParams& p) -> const std::optional<RowVector>& { return p.b_v; }, &HeadResult::v, result);

  const MaskMatrix allowed = scene.hasMask() ? allowedMask(scene) : MaskMatrix();
  const MaskMatrix* mask = scene.hasMask() ? &allowed : nullptr;
  const int h = scene.numHeads();
#pragma omp parallel for schedule(dynamic, 1)
  for (int i = 0; i < h; ++i) attendHead(scene, i, mask, options.keep_scores, result.heads[static_cast<std::size_t>(i)]);

  finishResult(scene, result, options.analysis);
}

void CpuBackend::recomputeHead(const Scene& scene, int head, Result& result) {
  validateScene(scene);
  Eigen::setNbThreads(threads_);
  const HeadParams& p = scene.heads.at(static_cast<std::size_t>(head));
  HeadResult& hr = result.heads.at(static_cast<std::size_t>(head));
  hr.q = projectOne(scene.query, p.w_q, p.b_q);
  hr.k = projectOne(scene.keyRows(), p.w_k, p.b_k);
  hr.v = projectOne(scene.valueRows(), p.w_v, p.b_v);
  const MaskMatrix allowed = scene.hasMask() ? allowedMask(scene) : MaskMatrix();
  attendHead(scene, head, scene.hasMask() ? &allowed : nullptr, hr.scores.size() > 0, hr);
  finishResult(scene, result, true);
}

std::vector<std::string> fullyMaskedRowWarnings(const Scene& scene) {
  std::vector<std::string> warnings;
  if (!scene.hasMask()) return warnings;
  const MaskMatrix allowed = allowedMask(scene);
  std::vector<int> empty_rows;
  for (int i = 0; i < scene.nQ(); ++i)
    if ((allowed.row(i).array() == 0).all()) empty_rows.push_back(i);
  constexpr std::size_t kListed = 5;
  for (std::size_t r = 0; r < empty_rows.size() && r < kListed; ++r)
    warnings.push_back(rowLabel(scene, empty_rows[r]) + " has every key masked: its weights are 0 in every head");
  if (empty_rows.size() > kListed)
    warnings.push_back(std::to_string(empty_rows.size() - kListed) + " more query rows have every key masked");
  return warnings;
}

void finishResult(const Scene& scene, Result& result, bool analysis) {
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

  result.warnings = fullyMaskedRowWarnings(scene);

  if (!analysis) {
    result.similarity = {};
    result.stats.clear();
    return;
  }
  std::vector<const Matrix*> maps;
  for (const HeadResult& hr : result.heads) maps.push_back(&hr.weights);
  result.similarity = headSimilarity(maps);
  result.stats.clear();
  for (const HeadResult& hr : result.heads) result.stats.push_back(headStats(hr.weights));
}

}  // namespace attnscope
