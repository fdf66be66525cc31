// A checkpoint's tensors on the device as the file stores them: a matrix whose every float32 value (the loader
// widened them) is a bfloat16 or a float16 exactly goes up packed two to a uint, half the bytes, and linear.comp
// widens it back; anything else stays float32. Packing is exact by construction: no value is rounded.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attnscope/types.h"
#include "gl_resources.h"

namespace attnscope::gpu {

enum class WeightStorage { Float32, BFloat16, Float16 };
const char* storageName(WeightStorage storage);  // torch's names: "float32", "bfloat16", "float16"

// bfloat16 when every value's low 16 bits are 0, float16 when every value is a half exactly, else float32.
WeightStorage storageOf(const Matrix& w);
std::size_t storedBytes(const Matrix& w, WeightStorage storage);

struct DeviceMatrix {
  GlBuffer buffer;
  WeightStorage storage = WeightStorage::Float32;
  int rows = 0, cols = 0;  // as loaded: (out, in), or (in, out) for a Conv1D checkpoint
  const Matrix* host = nullptr;  // the loaded values (the run-time check recomputes sampled outputs from them)
  bool present() const { return rows > 0; }
};
struct DeviceVector {
  GlBuffer buffer;
  int size = 0;  // 0: none (no such bias or norm)
  const RowVector* host = nullptr;
  bool present() const { return size > 0; }
};

// A layer's tensors on the device (model::LayerWeights' fields; an absent one has size 0).
struct NormDevice {
  DeviceVector g, b;
};
struct SublayerNormsDevice {
  NormDevice in, branch, out;
};
struct LayerDevice {
  SublayerNormsDevice attn_norms, mlp_norms;
  DeviceMatrix w_qkv, w_o, w_up, w_down, router;
  DeviceVector b_qkv, b_o, b_up, b_down, q_norm, k_norm;
  std::vector<DeviceMatrix> expert_up, expert_down;
};

// Uploads w held as `storage` (storageOf(w): what it says is exact); nothing for an empty matrix.
void uploadMatrix(const Matrix& w, WeightStorage storage, DeviceMatrix& out);
void uploadVector(const RowVector& v, DeviceVector& out);

}  // namespace attnscope::gpu
