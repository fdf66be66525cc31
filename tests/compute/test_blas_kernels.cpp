// OpenBLAS's kernels (compute/blas_kernels.h): a fallback core is replaced only on a CPU that has better, and the
// CLI (and so the window) runs on AVX2 or AVX-512 kernels wherever the CPU has them, whatever OpenBLAS guessed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "attnscope/compute/blas_kernels.h"
#include "command_support.h"

namespace {

using attnscope::fasterBlasCore;

TEST(BlasKernels, AFasterCoreOnlyInPlaceOfAFallback) {
  EXPECT_EQ(fasterBlasCore("Prescott", true, true), "SkylakeX");
  EXPECT_EQ(fasterBlasCore("PRESCOTT", false, true), "Haswell");
  EXPECT_EQ(fasterBlasCore("Nehalem", false, true), "Haswell");
  EXPECT_EQ(fasterBlasCore("Core2", false, false), "");  // an SSE-only CPU: the fallback is right
  EXPECT_EQ(fasterBlasCore("Zen", true, true), "");      // OpenBLAS knew the CPU: its choice stands
  EXPECT_EQ(fasterBlasCore("SkylakeX", true, true), "");
  EXPECT_EQ(fasterBlasCore("Haswell", true, true), "");
  EXPECT_EQ(fasterBlasCore("", true, true), "");
}

// What `bench` reports as its device: "... (Eigen, OpenBLAS <core> kernels)".
std::string benchDevice(const std::string& env) {
  const attnscope::test::CommandRun r =
      attnscope::test::run(env + " '" + ATTNSCOPE_BINARY + "' bench --n 16 --heads 1 --d-model 8 --repeat 1");
  EXPECT_EQ(r.status, 0) << r.err;
  return r.status == 0 ? nlohmann::json::parse(r.out)["device"].get<std::string>() : "";
}

TEST(BlasKernels, TheCliRunsOnTheCpusVectorKernels) {
  __builtin_cpu_init();
  const std::string device = benchDevice("env -u OPENBLAS_CORETYPE");
  EXPECT_NE(device.find("OpenBLAS"), std::string::npos) << device;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    for (const char* fallback : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom"}) {
      EXPECT_EQ(device.find(std::string("OpenBLAS ") + fallback + " "), std::string::npos) << device;
    }
  }
  // A core the user sets is kept.
  EXPECT_NE(benchDevice("OPENBLAS_CORETYPE=Prescott").find("OpenBLAS Prescott kernels"), std::string::npos);
}

}  // namespace
