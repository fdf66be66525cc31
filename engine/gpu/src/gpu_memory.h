// How much GPU memory the backend may use: what the driver reports free, else a configurable budget.
#pragma once

#include <cstddef>
#include <string>

namespace attnscope::gpu {

constexpr unsigned kSimilarityRows = 4;  // the fewest query rows per similarity workgroup

struct MemoryBudget {
  std::size_t bytes = 0;
  std::string source;  // where the number came from, for the refusal message
};
// configured > 0 wins; else GL_NVX_gpu_memory_info or GL_ATI_meminfo free memory plus `held` (what the backend
// already holds and would reuse); else defaultMemoryBudget() (ATTNSCOPE_MEMORY_BUDGET or half of RAM, which is
// what a software renderer such as llvmpipe allocates from).
MemoryBudget memoryBudget(std::size_t configured, std::size_t held);

}  // namespace attnscope::gpu
