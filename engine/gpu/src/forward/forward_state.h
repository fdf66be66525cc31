// The GPU forward's state (gpu_forward.h's GpuForward::State), shared by its three files: forward_upload.cpp (the
// weights onto the device, the embedding), forward_stages.cpp (a layer's attention, the experts, the run-time
// check, the overflow flags) and gpu_forward.cpp (the forward's loop and the public interface). The small stages
// (a product, a norm, an activation, an overflow check) are defined here: each is a program, its bindings and one
// dispatch.
//
// Hand-offs, by the OpenGL 4.3 memory model: every dispatch is followed by GL_SHADER_STORAGE_BARRIER_BIT (the next
// stage reads its writes); a read-back (glGetBufferSubData) by GL_BUFFER_UPDATE_BARRIER_BIT before it;
// glBufferSubData before a dispatch needs none. No stage reads what another invocation of its own dispatch wrote.
#pragma once

#include "attnscope/gpu_forward.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <utility>

#include "attnscope/compute/rope.h"
#include "attnscope/error.h"
#include "attnscope/model/model.h"
#include "attnscope/settings.h"
#include "forward/device_weights.h"
#include "forward/forward_check.h"
#include "gpu_backend_impl.h"
#include "gpu_memory.h"

namespace attnscope {

using gpu::DeviceMatrix;
using gpu::DeviceVector;
using gpu::dispatch;
using gpu::GlBuffer;
using gpu::groupsFor;
using gpu::LayerDevice;
using gpu::NormDevice;
using gpu::SublayerNormsDevice;
using gpu::WeightStorage;


// Rows `count` from `first` of a (rows, cols) float buffer into dst (row-major), after the stages that wrote it.
inline void readRows(const GlBuffer& buffer, int cols, int first, int count, float* dst) {
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  buffer.download(dst, row_bytes * static_cast<std::size_t>(count), row_bytes * static_cast<std::size_t>(first));
}

// The stages the overflow check names, in the order a layer runs them (a slot each per layer), after the
// embedding's two slots (the sum, an encoder's norm); the final norm's slot comes last.
enum Stage : unsigned { kNorm1, kQkv, kScores, kAttentionOut, kNorm2, kMlpUp, kMlpDown, kStagesPerLayer };
constexpr unsigned kEmbeddingSlot = 0, kEmbeddingNormSlot = 1, kFirstLayerSlot = 2;
inline unsigned slotOf(int layer, unsigned stage) {
  return kFirstLayerSlot + static_cast<unsigned>(layer) * kStagesPerLayer + stage;
}

// A layer that fails the run-time check: what the forward catches to recompute on the CPU.
struct LayerCheckFailed {
  std::string text;
};

// Columns `cols` of rows `rows` of a (.., ld) float buffer, its window starting at column col0.
inline Matrix readSample(const GlBuffer& buffer, unsigned ld, unsigned col0, unsigned width, const std::vector<int>& rows,
                  const std::vector<int>& cols) {
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
  Matrix sample(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(cols.size()));
  std::vector<float> row(width);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    buffer.download(row.data(), width * sizeof(float), (static_cast<std::size_t>(rows[r]) * ld + col0) * sizeof(float));
    for (std::size_t c = 0; c < cols.size(); ++c)
      sample(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = row[static_cast<std::size_t>(cols[c])];
  }
  return sample;
}


struct GpuForward::State {
  const model::Weights& weights;
  GpuBackend backend;  // its context, limits and attention stages
  GpuBackend::Impl& s;
  std::vector<LayerDevice> layers;
  NormDevice final_norm, embed_norm;
  // The embedding on the device (the table as stored; learned positions and the token-type row as float32), or,
  // when the table is larger than one buffer may be, gathered on the CPU (model::embedInput) and uploaded.
  bool embed_on_device = false;
  DeviceMatrix embed;
  DeviceMatrix positions;
  DeviceVector type_row;
  RowVector type_row_host;
  std::map<WeightStorage, gpu::ComputeProgram> embed_programs;
  GlBuffer tokens;
  std::size_t weight_bytes = 0;
  std::string storage;
  std::map<std::string, gpu::ComputeProgram> linear_programs;  // per weight storage and layout
  gpu::ComputeProgram row_norm, activation, split_heads, finite_rows, stats_map;
  // Activations, (n, *) each: the residual stream and its next value, norm outputs, q|k|v, MLP intermediates.
  GlBuffer x, x_next, normed, normed2, branch, qkv, up, act, logits, expert_rows, expert_scales, flags, maps;
  GlBuffer rope_cos, rope_sin, rope_local_cos, rope_local_sin;
  unsigned rope_half = 0;
  bool run_time_check = true;
  std::uint64_t check_seed = 0;  // a new draw of rows each forward (sampled_check.h)
  std::uint64_t products_checked = 0;
  int layer_now = -1;  // the layer running, for a failed check's message
  // Columns of each product checked at the sampled rows: 34 rows x 8 columns x k multiply-adds on the CPU, a few
  // per cent of the row's own product.
  static constexpr unsigned kProductColumns = 8;
  std::vector<std::string> warnings;

  State(const model::Weights& w, const GpuOptions& options) : weights(w), backend(options), s(*backend.impl_) {}

  const model::Architecture& arch() const { return weights.arch; }

  // linear.comp for a weight's storage and layout, built on first use.
  const gpu::ComputeProgram& linearProgram(WeightStorage held) {
    const bool out_in = !arch().conv1d;
    const std::string key = std::string(gpu::storageName(held)) + (out_in ? " out_in" : " in_out");
    auto found = linear_programs.find(key);
    if (found != linear_programs.end()) return found->second;
    std::string defines =
        "#define GEMM_SIDE " + std::to_string(s.project.gemmTile() / gpu::ComputeProgram::kGemmPerInvocation) + "u\n";
    if (out_in) defines += "#define W_OUT_IN\n";
    if (held == WeightStorage::BFloat16) defines += "#define W_BF16\n";
    if (held == WeightStorage::Float16) defines += "#define W_F16\n";
    const gpu::ShaderLibrary library(s.options.shader_dir);
    return linear_programs.emplace(key, gpu::ComputeProgram(library, "linear.comp", defines)).first->second;
  }

  // Where a linear layer's output goes and how: written, added (the residual stream), or added into gathered rows.
  struct LinearOut {
    const GlBuffer* c;
    unsigned ldc, col0 = 0;
    bool accumulate = false;
  };
  // rows x (in) times W (out outputs) + b into `out`; `rows_of`: A's rows gathered through expert_rows, or the
  // output scattered into them times expert_scales (a Mixtral expert), or neither.
  enum class Rows { Direct, GatherA, ScatterC };
  // `what` names the product in a failed check's message. With the run-time check, sampled rows and columns of
  // a direct product are compared with the CPU's from the GPU's own input rows (forward_check.h).
  void linear(const char* what, const GlBuffer& a, unsigned rows, const DeviceMatrix& w, const DeviceVector* b,
              const LinearOut& out, Rows rows_of = Rows::Direct) {
    const bool out_in = !arch().conv1d;
    const unsigned k = static_cast<unsigned>(out_in ? w.cols : w.rows),
                   n = static_cast<unsigned>(out_in ? w.rows : w.cols);
    const bool checked = run_time_check && rows_of == Rows::Direct && w.host != nullptr;
    std::vector<int> sample_rows, sample_cols;
    Matrix before;
    if (checked) {
      ++products_checked;
      sample_rows = sampledQueryRows(static_cast<int>(rows), check_seed * 7919 + products_checked);
      sample_cols = sampledColumns(n);
      if (out.accumulate) before = readSample(*out.c, out.ldc, out.col0, n, sample_rows, sample_cols);
    }
    const gpu::ComputeProgram& p = linearProgram(w.storage);
    const gpu::StageTimer::Scope timed = s.timer.scope("products (q|k|v, o, MLP, router, experts)");
    p.use();
    a.bind(0);
    w.buffer.bind(1);
    (b && b->present() ? b->buffer : w.buffer).bind(2);
    out.c->bind(3);
    expert_rows.bind(4);
    expert_scales.bind(5);
    p.set("u_m", rows);
    p.set("u_n", n);
    p.set("u_k", k);
    p.set("u_lda", k);
    p.set("u_ldc", out.ldc);
    p.set("u_c_col0", out.col0);
    p.set("u_has_bias", b != nullptr && b->present());
    p.set("u_accumulate", out.accumulate);
    p.set("u_gather_a", rows_of == Rows::GatherA);
    p.set("u_scatter_c", rows_of == Rows::ScatterC);
    dispatch(groupsFor(n, p.gemmTile()), groupsFor(rows, p.gemmTile()));
    if (!checked) return;
    Matrix a_rows(static_cast<Eigen::Index>(sample_rows.size()), k);
    for (std::size_t r = 0; r < sample_rows.size(); ++r)
      readRows(a, static_cast<int>(k), sample_rows[r], 1, a_rows.row(static_cast<Eigen::Index>(r)).data());
    const Matrix c_rows = readSample(*out.c, out.ldc, out.col0, n, sample_rows, sample_cols);
    if (const std::optional<std::string> bad =
            gpu::checkProductRows(*w.host, !out_in, b && b->present() ? b->host : nullptr, sample_rows, sample_cols,
                                  a_rows, c_rows, out.accumulate ? &before : nullptr))
      throw LayerCheckFailed{"layer " + std::to_string(layer_now + 1) + ", " + what + ": " + *bad};
  }

  // kProductColumns output columns of a product, drawn anew for each (a wrong tile shows in some draw).
  std::vector<int> sampledColumns(unsigned n) const {
    std::mt19937_64 rng(check_seed * 104729 + products_checked);
    std::vector<int> cols;
    for (unsigned c = 0; c < std::min(n, kProductColumns); ++c)
      cols.push_back(n <= kProductColumns ? static_cast<int>(c) : static_cast<int>(rng() % n));
    return cols;
  }

  void norm(const GlBuffer& in, const NormDevice& w, unsigned rows, const GlBuffer& out, bool add) {
    const unsigned d = static_cast<unsigned>(arch().hidden);
    const gpu::StageTimer::Scope timed = s.timer.scope("norms");
    row_norm.use();
    in.bind(0);
    w.g.buffer.bind(1);
    (w.b.present() ? w.b.buffer : w.g.buffer).bind(2);
    out.bind(3);
    row_norm.set("u_rows", rows);
    row_norm.set("u_d", d);
    row_norm.set("u_eps", static_cast<float>(arch().norm_eps));
    row_norm.set("u_rms", arch().norm == model::NormKind::RmsNorm);
    row_norm.set("u_has_bias", w.b.present());
    row_norm.set("u_add", add);
    dispatch(std::min(rows, 65535u), 1);
  }

  // The overflow check's slot `slot` over (rows, cols) of `buffer`.
  void checkFinite(const GlBuffer& buffer, unsigned rows, unsigned cols, unsigned slot) {
    const gpu::StageTimer::Scope timed = s.timer.scope("overflow checks");
    finite_rows.use();
    buffer.bind(0);
    flags.bind(1);
    finite_rows.set("u_rows", rows);
    finite_rows.set("u_cols", cols);
    finite_rows.set("u_slot", slot);
    dispatch(groupsFor(cols, 64), std::min(rows, 65535u));
  }

  void activate(const GlBuffer& in, const GlBuffer& out, unsigned rows, unsigned cols, bool gated) {
    const gpu::StageTimer::Scope timed = s.timer.scope("activations");
    activation.use();
    in.bind(0);
    out.bind(1);
    activation.set("u_rows", rows);
    activation.set("u_cols", cols);
    activation.set("u_activation", static_cast<unsigned>(arch().activation));
    activation.set("u_gated", gated);
    dispatch(groupsFor(cols, 64), std::min(rows, 65535u));
  }

  void upload(const GpuForward::UploadProgress& progress);
  void run(const std::vector<int>& ids, model::ForwardResult& r, const model::ForwardOptions& options);
  void attention(int l, unsigned n, model::ForwardResult& r);
  void routedMlp(const LayerDevice& L, const GlBuffer& in, unsigned n, const LinearOut& out);
  void throwFirstOverflow(unsigned n) const;
  void embedTokens(const std::vector<int>& ids);
  void checkLayer(int l, unsigned n, const model::ForwardResult& r, const Matrix* q, const Matrix* k);
  std::size_t activationBytes(int n, bool keep_maps) const;
};

}  // namespace attnscope
