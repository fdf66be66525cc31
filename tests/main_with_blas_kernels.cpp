// The test programs' main: OpenBLAS on the kernels the app itself runs on (compute/blas_kernels.h: a fallback
// core replaced where the CPU has AVX2 or AVX-512), so that the tests check the arithmetic users get; then
// GoogleTest's own.
#include <gtest/gtest.h>

#include "attnscope/compute/blas_kernels.h"

int main(int argc, char** argv) {
  attnscope::rerunWithFasterBlasKernels(argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
