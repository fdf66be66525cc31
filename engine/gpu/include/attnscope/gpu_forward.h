// The whole checkpoint forward on the GPU: every family's norms, products, q/k norms, RoPE, attention (flash, soft
// cap, sliding window, grouped heads), activations, Mixtral's experts and the residual stream, one layer after
// another on the device, as model/arch/forward.cpp does on the CPU. The weights are uploaded once, as the
// checkpoint stores them (bfloat16 and float16 packed two to a uint, widened in the shader; float32 accumulation),
// and stay resident across forwards. Only what a forward is asked for comes back: each layer's maps (kept) or its
// Q, K and row statistics (dropped), ln_1 outputs, the traced token, the final hidden state. Each layer's attention is
// checked on sampled rows against the CPU as it runs (setCheck): a wrong map on any card is caught, and the forward
// recomputed on the CPU.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/gpu_backend.h"
#include "attnscope/model/architecture.h"
#include "attnscope/model/forward.h"

namespace attnscope {

class GpuForward {
 public:
  // Called after each tensor is uploaded: bytes done of the total (the weights as the device holds them).
  using UploadProgress = std::function<void(std::size_t done, std::size_t total)>;
  // Uploads `weights`, which the caller keeps alive (the embedding is gathered from them on the CPU at every
  // forward). Throws GpuUnavailable without a GL 4.3 context, InputError ("gpu memory", "gpu buffer") when the
  // weights do not fit what the device reports (checked before any is uploaded).
  explicit GpuForward(const model::Weights& weights, const GpuOptions& options = {},
                      const UploadProgress& progress = {});
  ~GpuForward();
  GpuForward(const GpuForward&) = delete;
  GpuForward& operator=(const GpuForward&) = delete;

  // The forward of `ids` into `result`, as model::modelForwardInto: its checks, the maps kept while
  // forwardKeepsMaps says so (else each layer's Q, K, m and l), keep_ln1, trace_position and progress honoured.
  // Interventions (start_layer, edit_heads, edit_mlp, keep_residual, segments) and `attention` are the CPU
  // forward's: refused naming the field. The memory the activations need is checked before any is allocated. A
  // stage that overflows float32 is named as the CPU forward names it.
  void forwardInto(const std::vector<int>& ids, model::ForwardResult& result,
                   const model::ForwardOptions& options = {});
  model::ForwardResult forward(const std::vector<int>& ids, const model::ForwardOptions& options = {});

  // The run-time check (on by default): after each layer, sampled query rows of every head against the CPU's
  // weights from the GPU's own Q and K (forward/forward_check.h). A layer that fails it ends the GPU's work: the
  // forward is recomputed on the CPU, and warnings() names the layer, head, row and numbers.
  void setCheck(bool on);
  const std::vector<std::string>& warnings() const;

  std::string device() const;         // GL_RENDERER, GL_VERSION
  std::size_t weightBytes() const;    // the weights on the device
  std::string weightStorage() const;  // how they are held: "bfloat16", "float16", "float32", or a mix joined by " and "
  // Whether the embedding is gathered on the device (its table uploaded as stored), or, where the table is larger
  // than one of the device's buffers may be, on the CPU (an O(n hidden) upload per forward).
  bool embeddingOnDevice() const;
  // Device bytes a forward of n tokens needs beside the weights (activations, and one layer's maps when kept).
  std::size_t activationBytes(int n, bool keep_maps) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace attnscope
