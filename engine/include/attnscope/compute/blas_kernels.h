// Which kernels OpenBLAS (Eigen's products, EIGEN_USE_BLAS) runs. OpenBLAS picks them from the CPU's model number
// when it loads, before main. Debian 12's OpenBLAS 0.3.21 does not know the Intel models after Sapphire Rapids
// (Emerald Rapids is family 6, model 207) and falls back to its Prescott kernels (SSE3): every float product then
// runs at a quarter of the speed its AVX-512 kernels give (a 32k-token overview: 2.4 s against 0.66 s on such a
// VM). The kernels can only be chosen before the library loads, through OPENBLAS_CORETYPE, so a process that finds
// OpenBLAS on such a fallback core while the CPU has AVX-512 (or AVX2 and FMA) sets it and runs itself again.
#pragma once

#include <string>

namespace attnscope {

// The core OpenBLAS runs its kernels for ("SkylakeX", "Haswell", "Zen", "Prescott", ...).
std::string blasCoreName();

// The core to ask for instead of `core` on a CPU with these features: "SkylakeX" (AVX-512 F, BW, DQ and VL) or
// "Haswell" (AVX2 and FMA) when `core` is one of OpenBLAS's pre-AVX fallbacks (Prescott, Core2, Penryn,
// Dunnington, Nehalem, Atom); else "" (OpenBLAS's own choice stands).
std::string fasterBlasCore(const std::string& core, bool avx512, bool avx2_fma);

// In main, before any work: when OPENBLAS_CORETYPE is unset and fasterBlasCore names a core for this CPU, sets it
// and runs the program again with the same arguments (execv of /proc/self/exe). Returns when nothing is to be done,
// or when the new run could not start (the slow kernels still compute the same numbers).
void rerunWithFasterBlasKernels(char** argv);

}  // namespace attnscope
