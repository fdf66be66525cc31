// GPU memory: the estimate for a scene and the budget it is checked against.
#include "gpu_memory.h"

#include <epoxy/gl.h>

#include <algorithm>

#include "attnscope/gpu_backend.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

std::size_t estimateGpuBytes(const Scene& scene, bool with_textures, bool with_maps) {
  const std::size_t n_q = static_cast<std::size_t>(scene.nQ()), n_k = static_cast<std::size_t>(scene.nK());
  const std::size_t d = static_cast<std::size_t>(scene.d_model), h = scene.heads.size();
  std::size_t sum_dk = 0, sum_dv = 0;
  for (int i = 0; i < scene.numHeads(); ++i) {  // a group's K and V are copied to each of its heads' columns
    sum_dk += static_cast<std::size_t>(scene.heads[static_cast<std::size_t>(i)].dK());
    sum_dv += static_cast<std::size_t>(scene.dV(i));
  }
  const std::size_t similarity_groups = (n_q + gpu::kSimilarityRows - 1) / gpu::kSimilarityRows;
  std::size_t floats = n_q * d + (scene.key ? n_k * d : 0) + (scene.value ? n_k * d : 0);  // inputs
  floats += d * (2 * sum_dk + sum_dv) + 2 * sum_dk + sum_dv;                               // W_Q W_K W_V, biases
  if (scene.w_o) floats += sum_dv * d + d + n_q * d;                                       // W_O, b_O, output
  floats += n_q * sum_dk + n_k * sum_dk + n_k * sum_dv;                                    // Q K V
  if (with_maps) floats += h * n_q * n_k + n_q * n_k;  // every head's weights, one score buffer for read-back
  floats += n_q * sum_dv;                              // concat (the heads' outputs)
  floats += 2 * h * n_q + (n_k + 31) / 32;             // row statistics (m, l), key padding bits
  if (with_maps || scene.mask == MaskKind::Explicit) floats += n_q * ((n_k + 31) / 32);  // mask bits
  if (with_maps) floats += h * h * similarity_groups * 2 + 2 * h * (h + 1) + 2 * h * h;  // partials, pairs, cosine, js
  floats += 8 * h;                                                         // the head table
  std::size_t widest = 0;  // one head's W, staged when an edit uploads that head alone
  for (int i = 0; i < scene.numHeads(); ++i)
    widest = std::max({widest, static_cast<std::size_t>(scene.heads[static_cast<std::size_t>(i)].dK()),
                       static_cast<std::size_t>(scene.dV(i))});
  floats += d * widest;
  if (with_textures) floats += h * n_q * n_k;
  return floats * sizeof(float);
}

namespace gpu {

MemoryBudget memoryBudget(std::size_t configured, std::size_t held) {
  if (configured > 0) return {configured, "GpuOptions::memory_budget_bytes"};
  if (epoxy_has_gl_extension("GL_NVX_gpu_memory_info")) {
    GLint free_kib = 0;
    glGetIntegerv(GL_GPU_MEMORY_INFO_CURRENT_AVAILABLE_VIDMEM_NVX, &free_kib);
    return {static_cast<std::size_t>(free_kib) * 1024 + held, "free video memory (GL_NVX_gpu_memory_info)"};
  }
  if (epoxy_has_gl_extension("GL_ATI_meminfo")) {
    GLint info[4] = {};
    glGetIntegerv(GL_TEXTURE_FREE_MEMORY_ATI, info);
    return {static_cast<std::size_t>(info[0]) * 1024 + held, "free video memory (GL_ATI_meminfo)"};
  }
  return {defaultMemoryBudget(), "ATTNSCOPE_MEMORY_BUDGET or half of RAM; the driver reports no free memory"};
}

}  // namespace gpu
}  // namespace attnscope
