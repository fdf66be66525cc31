// Flash-style forward of the dispatch's heads, with no (n_q, n_k) buffer: workgroup (x, z) takes query rows
// [64 x, 64 x + 64) of head z and walks the keys in blocks of FLASH_BK whose K and V rows are staged in shared
// memory. Each row is FLASH_LANES invocations (lanes): lane t holds the row's q and output accumulator at vec4
// columns t, t + FLASH_LANES, ... (so that no invocation holds a whole 128-wide row in registers, which spilled on
// an H100, and the lanes of a row read neighbouring shared words). A block's scores are the lanes' partial dot
// products summed through shared memory (s_part); every lane then runs the same online softmax on the same sums
// (same operations in the same order, so the lanes' m and l stay equal) and updates its own columns of o.
// The row's running maximum m, sum l and o stay in registers, so nothing else is reduced across invocations; the
// row writes its output (its head's columns of the concat) and (m, l), with which a tile recomputes any weight later.
// The keys are walked in chunks, one dispatch each ([u_key0, u_key1)): llvmpipe ends any loop nest past 65535
// iterations (gallivm's loop limiter) and a hardware GPU's watchdog ends long dispatches, so no dispatch may
// walk every key of a long row. Between chunks the row's state (m, l and the unnormalised o) waits in b_stats
// and the concat, read back by the same row's lanes in the next dispatch (the host's glMemoryBarrier between
// them makes it visible); the last chunk divides o by l.
// Shared memory is handed over as GLSL 4.30 asks: memoryBarrierShared() + barrier() after staging a block and
// after writing the partial sums, barrier() before the next block overwrites either; all in uniform control flow
// (the loop bound is the workgroup's, never one invocation's).
#define ATTNSCOPE_HEADS
#define ATTNSCOPE_KEY_MASK
#include "common.glsl"

#ifndef FLASH_D
#define FLASH_D 64u  // the host sets it: the widest d_k or d_v, rounded up to 8 (registers per invocation)
#endif
#ifndef FLASH_BK
#define FLASH_BK 32u  // keys per block, at most 32 (one uint of allowed flags); the host keeps shared use <= 16 KiB
#endif
#ifndef FLASH_LANES
#define FLASH_LANES 1u  // the host sets it: invocations per row (1, 2 or 4 by width)
#endif
#define FLASH_D4 (FLASH_D / 4u)  // q, o and the staged K and V rows as vec4: a quarter of the loop iterations
#define FLASH_S4 ((FLASH_D4 + FLASH_LANES - 1u) / FLASH_LANES)  // vec4 columns per lane
#define FLASH_ROWS 64u
#ifndef FLASH_INVOCATIONS
#define FLASH_INVOCATIONS 64  // the host sets it: 64 FLASH_LANES, as a literal (GLSL 4.30's layout takes no expression)
#endif
layout(local_size_x = FLASH_INVOCATIONS, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer BQ { float b_q[]; };         // Q of all heads: (u_n_q, u_ld_k)
layout(std430, binding = 1) readonly buffer BK { float b_k[]; };         // K of all heads: (u_n_k, u_ld_k)
layout(std430, binding = 3) readonly buffer BV { float b_v[]; };         // V of all heads: (u_n_k, u_ld_v)
layout(std430, binding = 5) buffer BC { float b_concat[]; };   // (u_n_q, u_ld_v): o between chunks, then the output
layout(std430, binding = 7) buffer BStats { vec2 b_stats[]; }; // (heads, u_n_q): (m, l) per row

uniform uint u_n_q, u_n_k;
uniform uint u_key0, u_key1;             // this dispatch's chunk of keys
uniform bool u_first_chunk, u_last_chunk;
uniform uint u_ld_k, u_ld_v;  // d_k and d_v summed over heads

shared vec4 s_k[FLASH_BK * FLASH_D4];  // (FLASH_BK keys, FLASH_D), zero past the head's d_k or past n_k
shared vec4 s_v[FLASH_BK * FLASH_D4];
shared float s_part[FLASH_LANES * FLASH_BK * FLASH_ROWS];  // (lane, key, row): the lanes' partial q.k

// The running maximum starts finite: exp(start - m') is then 0, where -inf - (-inf) would be NaN.
const float RUNNING_MAX_START = -1.7014117e38;  // -FLT_MAX / 2

// Four floats of a row from column `c` on, zero past `width` (the head's d_k or d_v).
vec4 loadRow4(const bool from_k, uint base, uint c, uint width) {
  vec4 x = vec4(0.0);
  for (uint t = 0u; t < 4u; ++t)
    if (c + t < width) x[t] = from_k ? b_k[base + c + t] : b_v[base + c + t];
  return x;
}

void main() {
  const Head head = dispatchHead(0u);
  const uint tid = gl_LocalInvocationID.x;
  const uint r = tid % FLASH_ROWS, lane = tid / FLASH_ROWS;  // a warp's invocations share a lane: broadcast reads
  const uint row0 = gl_WorkGroupID.x * FLASH_ROWS;
  const uint i = row0 + r;
  const bool live = i < u_n_q;

  const uint stats_at = (u_head0 + gl_WorkGroupID.z) * u_n_q + i;
  const bool resume = live && !u_first_chunk;  // the state the previous chunk's dispatch left for this row
  vec4 q[FLASH_S4], o[FLASH_S4];  // this lane's vec4 columns lane + FLASH_LANES t
  for (uint t4 = 0u; t4 < FLASH_S4; ++t4)
    for (uint t = 0u; t < 4u; ++t) {
      const uint c = 4u * (lane + FLASH_LANES * t4) + t;
      q[t4][t] = (live && c < head.d_k) ? b_q[i * u_ld_k + head.k_col + c] : 0.0;
      o[t4][t] = (resume && c < head.d_v) ? b_concat[i * u_ld_v + head.v_col + c] : 0.0;
    }
  const vec2 state = resume ? b_stats[stats_at] : vec2(RUNNING_MAX_START, 0.0);
  float m = state.x, l = state.y;

  // Under a causal mask no row of this workgroup attends past its last row: the whole workgroup stops there.
  uint key_end = u_n_k;
  if (u_causal && !u_explicit_mask) key_end = min(u_n_k, min(row0 + FLASH_ROWS, u_n_q));

  key_end = min(key_end, u_key1);
  for (uint kb = u_key0; kb < key_end; kb += FLASH_BK) {
    for (uint e = tid; e < FLASH_BK * FLASH_D4; e += FLASH_ROWS * FLASH_LANES) {
      const uint key = kb + e / FLASH_D4, c = 4u * (e % FLASH_D4);
      const bool in_range = key < u_n_k;
      s_k[e] = in_range ? loadRow4(true, key * u_ld_k + head.k_col, c, head.d_k) : vec4(0.0);
      s_v[e] = in_range ? loadRow4(false, key * u_ld_v + head.v_col, c, head.d_v) : vec4(0.0);
    }
    memoryBarrierShared();
    barrier();
    // This lane's part of each key's q.k (columns past d_k are zero in q and in the staged K).
    float part[FLASH_BK];
    for (uint j = 0u; j < FLASH_BK; ++j) part[j] = 0.0;
    for (uint t4 = 0u; t4 < FLASH_S4; ++t4) {
      const uint c4 = lane + FLASH_LANES * t4;
      if (c4 >= FLASH_D4) break;
      for (uint j = 0u; j < FLASH_BK; ++j) part[j] += dot(q[t4], s_k[j * FLASH_D4 + c4]);
    }
    for (uint j = 0u; j < FLASH_BK; ++j) s_part[(lane * FLASH_BK + j) * FLASH_ROWS + r] = part[j];
    memoryBarrierShared();
    barrier();
    if (live) {
      float s[FLASH_BK];
      uint allowed = 0u;  // bit j: key kb + j may be attended
      float block_max = RUNNING_MAX_START;
      for (uint j = 0u; j < FLASH_BK; ++j) {
        const uint key = kb + j;
        s[j] = 0.0;
        if (key >= key_end || !keyAllowed(i, key)) continue;
        float dot_qk = 0.0;  // the lanes' parts in lane order: every lane of the row gets the same sum
        for (uint t = 0u; t < FLASH_LANES; ++t) dot_qk += s_part[(t * FLASH_BK + j) * FLASH_ROWS + r];
        s[j] = softCap(dot_qk * head.scale);
        block_max = max(block_max, s[j]);
        allowed |= 1u << j;
      }
      if (allowed != 0u) {
        const float m_new = max(m, block_max);
        const float rescale = exp(m - m_new);  // 1 when the maximum stays; 0 on the first allowed block
        l *= rescale;
        for (uint t4 = 0u; t4 < FLASH_S4; ++t4) o[t4] *= rescale;
        m = m_new;
        for (uint j = 0u; j < FLASH_BK; ++j) {
          if ((allowed & (1u << j)) == 0u) continue;
          const float p = exp(s[j] - m);
          l += p;
          for (uint t4 = 0u; t4 < FLASH_S4; ++t4) {
            const uint c4 = lane + FLASH_LANES * t4;
            if (c4 < FLASH_D4) o[t4] = fma(vec4(p), s_v[j * FLASH_D4 + c4], o[t4]);
          }
        }
      }
    }
    barrier();  // every invocation has read this block and its partial sums before the next overwrites them
  }

  if (!live) return;
  const bool any = l > 0.0;  // l >= 1 once any key was allowed (the maximum's own term is exp(0))
  for (uint t4 = 0u; t4 < FLASH_S4; ++t4)
    for (uint t = 0u; t < 4u; ++t) {
      const uint c = 4u * (lane + FLASH_LANES * t4) + t;
      if (c >= head.d_v) continue;
      const float oc = o[t4][t];
      b_concat[i * u_ld_v + head.v_col + c] = u_last_chunk ? (any ? oc / l : 0.0) : oc;
    }
  if (lane != 0u) return;
  if (!u_last_chunk)
    b_stats[stats_at] = vec2(m, l);
  else
    b_stats[stats_at] = vec2(any ? m : negInf(), l);
}
