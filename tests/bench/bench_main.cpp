// The benchmarks' main: OpenBLAS on the kernels the app runs on (compute/blas_kernels.h), reported in the context,
// then Google Benchmark's own.
#include <benchmark/benchmark.h>

#include "attnscope/compute/blas_kernels.h"

int main(int argc, char** argv) {
  attnscope::rerunWithFasterBlasKernels(argv);
  benchmark::AddCustomContext("openblas_core", attnscope::blasCoreName());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
