// Shared by every attnscope compute shader: the masked-score sentinel and the tiled matrix product.
// The loader puts `#version 430` first and expands `#include "common.glsl"` with #line markers.

// Masked scores are -inf. Tested by bit pattern: an optimising compiler may assume no infinities in isinf().
const uint NEG_INF_BITS = 0xff800000u;
float negInf() { return uintBitsToFloat(NEG_INF_BITS); }
bool isNegInf(float x) { return floatBitsToUint(x) == NEG_INF_BITS; }
const float FLT_MIN_NORMAL = 1.17549435e-38;  // the smallest normal float, 2^-126

#ifdef ATTNSCOPE_HEADS
// [SECTION] the heads of one dispatch: workgroup z computes head u_head0 + gl_WorkGroupID.z, so every head of a
// scene (or of one weights buffer) runs in one dispatch instead of one dispatch per head.
// b_heads, two entries per head: (first column in Q and K, d_k, first column in V and the concat, d_v),
// then (floatBitsToUint(scale), 0, 0, 0).
layout(std430, binding = 4) readonly buffer BHeads { uvec4 b_heads[]; };
uniform uint u_head0;         // the first head of this dispatch
uniform uint u_buffer_head0;  // the head whose (n_q, n_k) map starts the bound weights buffer

struct Head {
  uint k_col, d_k, v_col, d_v;
  float scale;
  uint map_base;  // index of the head's first weight in the bound weights buffer
};

Head dispatchHead(uint map_size) {
  const uint h = u_head0 + gl_WorkGroupID.z;
  const uvec4 a = b_heads[2u * h], b = b_heads[2u * h + 1u];
  return Head(a.x, a.y, a.z, a.w, uintBitsToFloat(b.x), (h - u_buffer_head0) * map_size);
}
#endif

#ifdef ATTNSCOPE_GEMM
// [SECTION] tiled matrix product C (M, N) = A (M, K) B (K, N)
// One workgroup computes a GEMM_BM x GEMM_BN tile of C; its GEMM_SIDE x GEMM_SIDE invocations each hold a
// GEMM_T x GEMM_T block of accumulators in registers (rows ty + GEMM_SIDE i, columns tx + GEMM_SIDE j, so that
// stores are coalesced). K is walked in
// slices of GEMM_BK staged in shared memory. Edges that are not a multiple of the tile are loaded as 0 and
// not stored, so any M, N, K work. The stage shader defines loadA, loadB and storeC, and says which index is
// contiguous in memory (A_K_CONTIGUOUS: A (i, k) adjacent in k; B_K_CONTIGUOUS: B (k, j) adjacent in k) so
// that neighbouring invocations load neighbouring floats.
// A stage may define GEMM_SIDE (and GEMM_BK) before including this file; the host reads the tile back from
// the program's local size (ComputeProgram::gemmTile, which counts GEMM_T = 8).
// 16 x 16 invocations, 128 x 128 tiles: on an H100 every stage ran 1.5-2.3x faster than with 8 x 8 (64 x 64
// tiles): n = 4096, 32 heads, d_model 4096 took 74.8 ms against 172 ms (bench --stages, one run). A vec4
// layout of the shared reads measured slower there and was dropped.
#ifndef GEMM_SIDE
#define GEMM_SIDE 16u  // invocations along each side of the workgroup
#endif
#ifndef GEMM_BK
#define GEMM_BK 16u
#endif
#define GEMM_T 8u     // accumulators along each side of an invocation's block
#define GEMM_BM (GEMM_SIDE * GEMM_T)
#define GEMM_BN (GEMM_SIDE * GEMM_T)
#define GEMM_THREADS (GEMM_SIDE * GEMM_SIDE)
layout(local_size_x = GEMM_SIDE, local_size_y = GEMM_SIDE, local_size_z = 1) in;

float loadA(uint i, uint k);
float loadB(uint k, uint j);

// This invocation's block of the tile: gemm_acc[i][j] is C (row0 + gemmRow(i), col0 + gemmCol(j)).
float gemm_acc[GEMM_T][GEMM_T];

// An invocation's rows are ty + GEMM_SIDE i (columns tx + GEMM_SIDE j), so that
// stores are coalesced. s_a: (GEMM_BK, GEMM_BM + 1), s_b: (GEMM_BK, GEMM_BN + 1); the +1 keeps transposing
// stores off one bank.
shared float s_a[GEMM_BK * (GEMM_BM + 1u)];
shared float s_b[GEMM_BK * (GEMM_BN + 1u)];
uint gemmRow(uint i) { return gl_LocalInvocationID.y + GEMM_SIDE * i; }
uint gemmCol(uint j) { return gl_LocalInvocationID.x + GEMM_SIDE * j; }
void gemmStoreA(uint k, uint i, float v) { s_a[k * (GEMM_BM + 1u) + i] = v; }
void gemmStoreB(uint k, uint j, float v) { s_b[k * (GEMM_BN + 1u) + j] = v; }
void gemmStep(uint k, inout float acc[GEMM_T][GEMM_T]) {
  float a[GEMM_T], b[GEMM_T];
  for (uint i = 0u; i < GEMM_T; ++i) a[i] = s_a[k * (GEMM_BM + 1u) + gemmRow(i)];
  for (uint j = 0u; j < GEMM_T; ++j) b[j] = s_b[k * (GEMM_BN + 1u) + gemmCol(j)];
  for (uint i = 0u; i < GEMM_T; ++i)
    for (uint j = 0u; j < GEMM_T; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
}

// gemm_acc = the (row0, col0) tile of A B. Every invocation of the workgroup must call it (it holds barriers).
// Shared memory is handed between invocations as GLSL 4.30 asks: memoryBarrierShared() makes this
// invocation's writes visible, barrier() waits for every invocation's; neither alone is enough.
void gemmAccumulate(uint row0, uint col0, uint m, uint n, uint k_total) {
  const uint tid = gl_LocalInvocationID.y * GEMM_SIDE + gl_LocalInvocationID.x;
  float acc[GEMM_T][GEMM_T];  // a local array: compilers keep it in registers, a global one may live in memory
  for (uint i = 0u; i < GEMM_T; ++i)
    for (uint j = 0u; j < GEMM_T; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < k_total; k0 += GEMM_BK) {
    for (uint e = tid; e < GEMM_BM * GEMM_BK; e += GEMM_THREADS) {
#ifdef A_K_CONTIGUOUS
      const uint i = e / GEMM_BK, k = e % GEMM_BK;
#else
      const uint k = e / GEMM_BM, i = e % GEMM_BM;
#endif
      const uint gi = row0 + i, gk = k0 + k;
      gemmStoreA(k, i, (gi < m && gk < k_total) ? loadA(gi, gk) : 0.0);
    }
    for (uint e = tid; e < GEMM_BK * GEMM_BN; e += GEMM_THREADS) {
#ifdef B_K_CONTIGUOUS
      const uint j = e / GEMM_BK, k = e % GEMM_BK;
#else
      const uint k = e / GEMM_BN, j = e % GEMM_BN;
#endif
      const uint gj = col0 + j, gk = k0 + k;
      gemmStoreB(k, j, (gj < n && gk < k_total) ? loadB(gk, gj) : 0.0);
    }
    memoryBarrierShared();
    barrier();
    for (uint k = 0u; k < GEMM_BK; ++k) gemmStep(k, acc);
    barrier();  // every invocation has read this slice before the next one overwrites it
  }
  gemm_acc = acc;
}

#ifndef GEMM_ACCUMULATE_ONLY  // a stage that takes gemm_acc itself defines this and no storeC
void storeC(uint i, uint j, float acc);

// The workgroup's tile of C = A B, stored through storeC.
void gemmTile(uint m, uint n, uint k_total) {
  const uint row0 = gl_WorkGroupID.y * GEMM_BM, col0 = gl_WorkGroupID.x * GEMM_BN;
  gemmAccumulate(row0, col0, m, n, k_total);
  for (uint i = 0u; i < GEMM_T; ++i) {
    const uint gi = row0 + gemmRow(i);
    if (gi >= m) continue;
    for (uint j = 0u; j < GEMM_T; ++j) {
      const uint gj = col0 + gemmCol(j);
      if (gj < n) storeC(gi, gj, gemm_acc[i][j]);
    }
  }
}
#endif  // GEMM_ACCUMULATE_ONLY
#endif  // ATTNSCOPE_GEMM

#ifdef ATTNSCOPE_WEIGHTS
// [SECTION] a checkpoint's weights as the file stores them, at binding 1: float32, or with W_BF16 / W_F16 bfloat16 /
// float16 packed two to a uint (element e in the low half of word e / 2 when e is even, the high half when odd;
// forward/device_weights.cpp packs them), widened here. weightAt(e): element e of the tensor, row-major.
#if defined(W_BF16) || defined(W_F16)
layout(std430, binding = 1) readonly buffer BW { uint b_w[]; };
#else
layout(std430, binding = 1) readonly buffer BW { float b_w[]; };
#endif
float weightAt(uint e) {
#if defined(W_BF16)
  const uint word = b_w[e >> 1u];
  return uintBitsToFloat(((e & 1u) == 0u ? word & 0xffffu : word >> 16u) << 16u);  // bf16: float32's top half
#elif defined(W_F16)
  return unpackHalf2x16(b_w[e >> 1u])[e & 1u];
#else
  return b_w[e];
#endif
}
#endif

#ifdef ATTNSCOPE_KEY_MASK
// [SECTION] which keys a query may attend, from indices (the CPU's KeyMask): a causal mask (and a sliding
// window) from i and j, key padding from one bit per key; only an explicit mask is read from its (n_q, n_k) bits
// (which then already hold the padding: allowedMask on the host). No (n, n) buffer for causal or padded scenes.
layout(std430, binding = 2) readonly buffer BMask { uint b_mask[]; };        // explicit: (n_q, u_mask_words), 1 = may attend
layout(std430, binding = 6) readonly buffer BPadding { uint b_padding[]; };  // (u_mask_words), 1 = padded key
uniform bool u_explicit_mask, u_causal, u_has_padding;
uniform uint u_mask_words;  // ceil(n_k / 32)
uniform uint u_window;      // with u_causal: a sliding window W, query i reads keys i - W < j <= i; 0: none

bool keyAllowed(uint i, uint j) {
  if (u_explicit_mask) return ((b_mask[i * u_mask_words + (j >> 5u)] >> (j & 31u)) & 1u) != 0u;
  if (u_causal && (j > i || (u_window > 0u && j + u_window <= i))) return false;
  return !u_has_padding || ((b_padding[j >> 5u] >> (j & 31u)) & 1u) == 0u;
}
// A soft cap on a scaled score, s -> cap tanh(s / cap) (compute/soft_cap.h); cap <= 0: none. Applied before the
// mask. Past |x| = 10 tanh is 1 in float; taken as +-1 there, since a tanh written as a ratio of exponentials
// gives inf / inf = NaN for large x.
uniform float u_score_cap;
float softCap(float s) {
  if (!(u_score_cap > 0.0)) return s;
  const float x = s / u_score_cap;
  return u_score_cap * (abs(x) >= 10.0 ? sign(x) : tanh(x));
}
#endif
