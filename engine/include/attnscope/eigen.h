// Eigen, and the compiler's intrinsics headers it inlines, as attnscope includes them: the one place whose
// pragmas quiet the warnings GCC 12 raises in their text. Every file that needs Eigen includes this header,
// never <Eigen/...> or <immintrin.h> directly (tests/docs/check_includes.py checks), so the pragmas are in
// force wherever that text is first read; our own code keeps every warning.
//
// Why: GCC 12's AVX-512 intrinsics, inlined through Eigen's vectorised max and exp (pexp<Packet16f>) and its
// double GEMM packing (ptranspose in gemm_pack_lhs), use _mm512_undefined_ps()'s deliberately uninitialised
// value (GCC bug 105593, fixed in GCC 13). Which of -Wmaybe-uninitialized or -Wuninitialized it reports depends
// on the -march's tuning (x86-64-v4 neither here, znver3's native AVX2 none, rocketlake the second), so both
// are off for this text alone, whatever the CPU.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
