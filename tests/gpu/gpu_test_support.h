// Shared by the GPU tests: one backend for the whole run (a context costs time), skipping with the reason
// when no GL 4.3 context can be made, random matrices, and the CPU-vs-GPU comparison.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/gpu_backend.h"
#include "compare.h"
#include "random_model.h"

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

// How many times a case is computed: ATTNSCOPE_GPU_STRESS=N (N >= 1) when set and larger, else `by_default`.
// A missing barrier on a real GPU shows in some runs and not others, so race-prone cases (peaked rows over
// many workgroups, the resident textures, the one-head edit) pass a by_default above 1.
int runsOf(int by_default);

// Standard-normal inputs and weights, no W_O: scores of tens (std ~16 at d_model 16, d_k 8), so each softmax
// row is peaked on a few keys and a wrong or unfinished score anywhere in a row moves the whole row. At
// n >= 1500 a head spans 24+ workgroups of query rows: the scenes whose rows came out wrong on an H100 when the
// softmax ran in place over scores another dispatch had written. n_k != n_q: cross-attention with every 7th
// key padded. `causal`: the causal mask.
Scene peakedScene(int n_q, int n_k, int heads, int d_model, int d_k, int d_v, bool causal, std::uint64_t seed);

// Compares every matrix of two Results (Q, K, V, scores, weights, head outputs, concat, output, similarity,
// statistics) within `tolerance` on |gpu - cpu| / (1 + |cpu|) (tests/compare.h: a NaN or inf where the CPU
// is finite is an infinite error; only the scores' masked -inf must meet -inf), shapes and head counts equal,
// masked weights exactly 0, warnings equal. Returns the largest error seen (infinite on any non-finite).
double expectResultsMatch(const Scene& scene, const Result& gpu, const Result& cpu, double tolerance);

}  // namespace attnscope::test
