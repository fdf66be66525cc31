// OpenBLAS's kernels: what it chose, and a second start with a better choice where it fell back (blas_kernels.h).
#include "attnscope/compute/blas_kernels.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

extern "C" char* openblas_get_corename(void);  // OpenBLAS's cblas.h

namespace attnscope {

std::string blasCoreName() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string fasterBlasCore(const std::string& core, bool avx512, bool avx2_fma) {
  std::string lower = core;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const bool fallback = lower == "prescott" || lower == "core2" || lower == "penryn" || lower == "dunnington" ||
                        lower == "nehalem" || lower == "atom";
  if (!fallback) return "";
  if (avx512) return "SkylakeX";
  return avx2_fma ? "Haswell" : "";
}

void rerunWithFasterBlasKernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the user's choice, or this is the second start
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const std::string core = fasterBlasCore(blasCoreName(), avx512, avx2_fma);
  if (core.empty()) return;
  if (::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("OPENBLAS_CORETYPE");  // no second start: go on as we are
}

}  // namespace attnscope
