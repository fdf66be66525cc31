// Shared by the GPU tests: one backend for the whole run (a context costs time), skipping with the reason
// when no GL 4.3 context can be made, random matrices, and the CPU-vs-GPU comparison.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/gpu_backend.h"

namespace attnscope::test {

struct GpuFixture {
  std::unique_ptr<GpuBackend> backend;
  std::string unavailable;  // why there is no backend
};
GpuFixture& gpuFixture();

// True when ATTNSCOPE_REQUIRE_GPU=1: a machine that must run the GPU tests (CI) fails instead of skipping.
bool gpuRequired();

// Use in a test body: binds `gpu` to the shared backend, or skips the test with the reason (fails instead
// where the GPU is required).
#define ATTNSCOPE_REQUIRE_GPU(gpu)                                              \
  ::attnscope::GpuBackend* gpu = ::attnscope::test::gpuFixture().backend.get(); \
  if (!gpu && ::attnscope::test::gpuRequired())                                 \
    GTEST_FAIL() << "ATTNSCOPE_REQUIRE_GPU=1 but no OpenGL 4.3 context: "       \
                 << ::attnscope::test::gpuFixture().unavailable;                \
  if (!gpu) GTEST_SKIP() << "no OpenGL 4.3 context: " << ::attnscope::test::gpuFixture().unavailable

// ATTNSCOPE_GPU_STRESS=N (N >= 1): how many times a parity case is computed; 1 when unset. For real GPUs,
// where a missing barrier shows in some runs and not others.
int stressRepeats();

Matrix randomMatrix(int rows, int cols, float stddev, std::mt19937& rng);
RowVector randomRow(int cols, float stddev, std::mt19937& rng);

// Standard-normal inputs and weights, no W_O: scores of tens (std ~16 at d_model 16, d_k 8), so each softmax
// row is peaked on a few keys and a wrong or unfinished score anywhere in a row moves the whole row. At
// n >= 1500 a head spans 24+ workgroups of query rows: the scenes whose rows came out wrong on an H100 when the
// softmax ran in place over scores another dispatch had written. n_k != n_q: cross-attention with every 7th
// key padded. `causal`: the causal mask.
Scene peakedScene(int n_q, int n_k, int heads, int d_model, int d_k, int d_v, bool causal, std::uint64_t seed);

// Largest |gpu - cpu| / (1 + |cpu|) over two matrices of the same shape; -inf must meet -inf exactly.
double mixedError(const Matrix& gpu, const Matrix& cpu);

// Compares every matrix of two Results (Q, K, V, scores, weights, head outputs, concat, output, similarity,
// statistics) within `tolerance`, masked weights exactly 0, warnings equal. Returns the largest error seen.
double expectResultsMatch(const Scene& scene, const Result& gpu, const Result& cpu, double tolerance);

}  // namespace attnscope::test
