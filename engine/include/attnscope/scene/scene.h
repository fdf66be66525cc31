// Scene: everything the user can edit (sizes, tokens, input rows, projections, mask, scale), as plain data.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/scene/rope_scaling.h"
#include "attnscope/types.h"

namespace attnscope {

// One head's projections. Row vectors: Q = X W_Q + b_Q.
// In a scene with kv_heads (grouped-query attention), a head has only w_q/b_q and `kv`; its w_k, w_v, b_k, b_v
// are empty and unused: Scene::wK(h) and friends read them from kv_heads[kv], so a shared K/V is stored once.
struct HeadParams {
  Matrix w_q;  // (d_model, d_k)
  Matrix w_k;  // (d_model, d_k); empty with kv_heads
  Matrix w_v;  // (d_model, d_v); empty with kv_heads
  std::optional<RowVector> b_q, b_k;  // (d_k)
  std::optional<RowVector> b_v;       // (d_v)
  int kv = 0;  // with kv_heads: the 0-based index of this head's key/value head; ignored without

  int dK() const { return static_cast<int>(w_q.cols()); }
};

// A key/value head shared by the query heads whose `kv` names it (scene key "kv_heads").
struct KvHeadParams {
  Matrix w_k;  // (d_model, d_k)
  Matrix w_v;  // (d_model, d_v)
  std::optional<RowVector> b_k;  // (d_k)
  std::optional<RowVector> b_v;  // (d_v)
};

// Rotary positions (scene key "rope"): after the projections and biases, the first `dims` entries of every
// head's q and k are rotated by position as Hugging Face's rotate_half does (compute/rope.h does it).
// "scaling" (optional) mirrors Hugging Face's rope_scaling: linear or llama3 (Llama 3.1+) inverse frequencies.
struct SceneRope {
  double theta = 10000.0;
  int dims = 0;  // even, 2 to every head's d_k
  RopeScaling scaling{};  // Type::None: plain RoPE ({} so that SceneRope{theta, dims} needs no third member)
};

// Scene keys "q_norm" / "k_norm" (Qwen3): RMSNorm over each head's d_k entries of q (or k), after the projection
// and bias and before the rotation: q <- q / sqrt(mean(q^2) + eps) * weight. One weight for every head of the
// scene (as Qwen3 shares it over a layer's heads), so every head's d_k equals weight's length.
struct SceneHeadNorm {
  RowVector weight;  // (d_k)
  double eps = 1e-6;
};

enum class MaskKind {
  None,      // every query may attend every key (key_padding still applies)
  Causal,    // query i may attend key j <= i (top-left aligned when n_q != n_k, as PyTorch's is_causal)
  Explicit,  // Scene::explicit_mask
};

struct Scene {
  std::string description;                // free text: where the numbers come from (not used in compute)
  int d_model = 0;
  std::vector<std::string> query_tokens;  // n_q
  std::vector<std::string> key_tokens;    // n_k; empty = query_tokens (self-attention)
  Matrix query;                           // (n_q, d_model)
  std::optional<Matrix> key;              // (n_k, d_model); absent = query
  std::optional<Matrix> value;            // (n_k, d_model); absent = key
  std::vector<HeadParams> heads;          // 1 to 64
  std::vector<KvHeadParams> kv_heads;     // empty: every head has its own K/V (classic multi-head attention)
  std::optional<SceneRope> rope;          // absent: no positions in the scores
  std::vector<int> query_positions;       // n_q or empty (= 0..n_q-1); used by rope
  std::vector<int> key_positions;         // n_k or empty (= 0..n_k-1)
  std::optional<SceneHeadNorm> q_norm;    // absent: q as projected
  std::optional<SceneHeadNorm> k_norm;    // absent: k as projected
  std::optional<Matrix> w_o;              // (sum of d_v, d_model); absent = output is the concatenation
  std::optional<RowVector> b_o;           // (d_model); only with w_o
  MaskKind mask = MaskKind::None;
  MaskMatrix explicit_mask;               // (n_q, n_k), 1 = may attend; used when mask == Explicit
  // > 0 with mask == Causal: query i also never sees keys j <= i - W (a forward's sliding-window layer as the tile
  // engine reads it, ForwardResult::tileScene: O(n) where an explicit mask is n^2 bytes, 16 GiB at 128k tokens).
  // KeyMask and allowedMask honour it; the backends do not compute such a scene (validateScene refuses it).
  int sliding_window = 0;
  std::vector<std::uint8_t> key_padding;  // n_k or empty, 1 = padded (never attended)
  std::optional<float> scale;             // absent = 1/sqrt(d_k) of each head

  int numHeads() const { return static_cast<int>(heads.size()); }
  int nQ() const { return static_cast<int>(query.rows()); }
  int nK() const { return static_cast<int>(keyRows().rows()); }
  const Matrix& keyRows() const { return key ? *key : query; }
  const Matrix& valueRows() const { return value ? *value : keyRows(); }
  const std::vector<std::string>& keyTokens() const { return key_tokens.empty() ? query_tokens : key_tokens; }
  int concatWidth() const;            // sum of d_v over heads
  // Head h's key/value projections: its own, or its kv head's. The one way every reader gets them.
  bool grouped() const { return !kv_heads.empty(); }
  int numKvHeads() const { return grouped() ? static_cast<int>(kv_heads.size()) : numHeads(); }
  int kvOf(int head) const { return grouped() ? heads[static_cast<std::size_t>(head)].kv : head; }
  const Matrix& wK(int head) const;
  const Matrix& wV(int head) const;
  const std::optional<RowVector>& bK(int head) const;
  const std::optional<RowVector>& bV(int head) const;
  Matrix& wK(int head);
  Matrix& wV(int head);
  std::optional<RowVector>& bK(int head);
  std::optional<RowVector>& bV(int head);
  int dV(int head) const { return static_cast<int>(wV(head).cols()); }
  std::vector<int> queryPositions() const;  // query_positions, or 0..n_q-1
  std::vector<int> keyPositions() const;    // key_positions, or 0..n_k-1
  float headScale(int head) const;    // the override, or 1/sqrt(d_k of that head)
  bool hasMask() const { return mask != MaskKind::None || !key_padding.empty() || sliding_window > 0; }
};

// The combined mask (n_q, n_k), 1 = may attend: mask kind AND NOT key_padding. The one place masks are combined;
// both backends use it.
MaskMatrix allowedMask(const Scene& scene);

struct Limits {
  std::size_t memory_budget_bytes = 0;  // 0 = defaultMemoryBudget()
  int max_heads = 64;
  bool with_maps = true;  // false: the result keeps no (n_q, n_k) maps (tiles on demand), so they cost nothing
};
// Half of physical memory, or ATTNSCOPE_MEMORY_BUDGET (bytes, suffixes K/M/G allowed) when set.
std::size_t defaultMemoryBudget();
// Bytes a Result for this scene holds (every per-head matrix, K and V once per key/value head, concat, output),
// before any is allocated;
// with_maps = false leaves out the (n_q, n_k) scores and weights of a result that computes tiles on demand.
std::size_t estimateResultBytes(const Scene& scene, bool with_maps = true);

// "432 bytes", or "1536.0 MiB (1610612736 bytes)": exact, and readable when large.
std::string byteString(std::size_t bytes);
// InputError(field, "<what> within the memory budget of N MiB ...", "an estimated M MiB") when bytes exceed the
// budget (0: defaultMemoryBudget()): the one wording of every memory refusal.
void checkMemoryBudget(const std::string& field, const std::string& what, std::size_t bytes, std::size_t budget = 0);
// Refuses an output estimated at more than the memory budget (`budget` 0: defaultMemoryBudget()) before the
// work that would fill it: outputs stream to their files, but one larger than the budget is taken as absurd.
// InputError(field, "at most N MiB ...", "an estimated M MiB").
void checkOutputBudget(const std::string& field, std::size_t output_bytes, std::size_t budget = 0);

// Every check on a scene lives here: shapes, finiteness, head count, empty sequences, token counts, masks,
// memory. Throws InputError naming the field, the expected and the actual.
void validateScene(const Scene& scene, const Limits& limits = {});
// validateScene's checks of head `head` alone (its W and biases), for an edit that changed only that head of a
// scene validated before: at d_model 4096 and 32 heads the whole scene's finiteness scan takes ~40 ms, more
// than the GPU's recompute of one head.
void validateHead(const Scene& scene, int head);

}  // namespace attnscope
