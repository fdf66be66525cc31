// Scene helpers and the one place every scene is validated.
#include "attnscope/scene/scene.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "attnscope/error.h"
#include "attnscope/scene/key_mask.h"
#include "attnscope/settings.h"

namespace attnscope {

std::string shapeString(long rows, long cols) { return std::to_string(rows) + " x " + std::to_string(cols); }

int Scene::concatWidth() const {
  int width = 0;
  for (int h = 0; h < numHeads(); ++h) width += dV(h);
  return width;
}

// Head h's K/V owner: kv_heads[kv] in a grouped scene, else the head itself. kv is checked by validateScene; an
// unchecked one out of range throws std::out_of_range rather than reading past the list.
#define ATTNSCOPE_KV_ACCESSOR(Type, name, member)                                                    \
  const Type& Scene::name(int head) const {                                                          \
    return grouped() ? kv_heads.at(static_cast<std::size_t>(kvOf(head))).member                     \
                     : heads[static_cast<std::size_t>(head)].member;                                 \
  }                                                                                                  \
  Type& Scene::name(int head) {                                                                      \
    return grouped() ? kv_heads.at(static_cast<std::size_t>(kvOf(head))).member                     \
                     : heads[static_cast<std::size_t>(head)].member;                                 \
  }
ATTNSCOPE_KV_ACCESSOR(Matrix, wK, w_k)
ATTNSCOPE_KV_ACCESSOR(Matrix, wV, w_v)
ATTNSCOPE_KV_ACCESSOR(std::optional<RowVector>, bK, b_k)
ATTNSCOPE_KV_ACCESSOR(std::optional<RowVector>, bV, b_v)
#undef ATTNSCOPE_KV_ACCESSOR

static std::vector<int> positionsOr(const std::vector<int>& given, int n) {
  if (!given.empty()) return given;
  std::vector<int> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  return p;
}
std::vector<int> Scene::queryPositions() const { return positionsOr(query_positions, nQ()); }
std::vector<int> Scene::keyPositions() const { return positionsOr(key_positions, nK()); }

float Scene::headScale(int head) const {
  if (scale) return *scale;
  return 1.0f / std::sqrt(static_cast<float>(heads[static_cast<std::size_t>(head)].dK()));
}

MaskMatrix allowedMask(const Scene& scene) {
  const KeyMask mask(scene);
  MaskMatrix allowed(scene.nQ(), scene.nK());
  for (int i = 0; i < scene.nQ(); ++i) mask.fillRow(i, 0, scene.nK(), &allowed(i, 0));
  return allowed;
}

std::size_t defaultMemoryBudget() {
  if (const std::optional<std::size_t> set = byteCountSetting("ATTNSCOPE_MEMORY_BUDGET")) return *set;
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return std::size_t{4} << 30;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size) / 2;
}

std::size_t estimateResultBytes(const Scene& scene, bool with_maps) {
  const std::size_t n_q = static_cast<std::size_t>(scene.nQ()), n_k = static_cast<std::size_t>(scene.nK());
  std::size_t floats = 0;
  std::vector<bool> kv_counted(static_cast<std::size_t>(scene.numHeads()), false);
  for (int h = 0; h < scene.numHeads(); ++h) {
    const std::size_t d_k = static_cast<std::size_t>(scene.heads[static_cast<std::size_t>(h)].dK());
    const std::size_t d_v = static_cast<std::size_t>(scene.dV(h));
    floats += n_q * d_k                          // q
              + (with_maps ? 2 * n_q * n_k : 0)  // scores, weights
              + 2 * n_q                          // row maximum and sum
              + n_q * d_v;                       // head output
    // k and v once per key/value head: its query heads share them (HeadResult::k()).
    const std::size_t kv = static_cast<std::size_t>(scene.kvOf(h));
    if (kv >= kv_counted.size()) kv_counted.resize(kv + 1, false);
    if (!kv_counted[kv]) floats += n_k * d_k + n_k * d_v;
    kv_counted[kv] = true;
  }
  floats += n_q * static_cast<std::size_t>(scene.concatWidth());
  floats += n_q * static_cast<std::size_t>(scene.d_model);
  return floats * sizeof(float);
}

// [SECTION] validation helpers

std::string byteString(std::size_t bytes) {
  const std::string exact = std::to_string(bytes) + " bytes";
  if (bytes < (std::size_t{1} << 20)) return exact;
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return std::string(mib) + " (" + exact + ")";
}

void checkMemoryBudget(const std::string& field, const std::string& what, std::size_t bytes, std::size_t budget) {
  if (budget == 0) budget = defaultMemoryBudget();
  if (bytes > budget)
    throw InputError(field, what + " within the memory budget of " + byteString(budget) +
                                " (set ATTNSCOPE_MEMORY_BUDGET to change it)",
                     "an estimated " + byteString(bytes));
}

void checkOutputBudget(const std::string& field, std::size_t output_bytes, std::size_t budget) {
  checkMemoryBudget(field, "an output", output_bytes, budget);
}

static void checkShape(const std::string& field, long rows, long cols, long want_rows, long want_cols) {
  if (rows != want_rows || cols != want_cols)
    throw InputError(field, shapeString(want_rows, want_cols), shapeString(rows, cols));
}

template <typename Derived>
static void checkFinite(const std::string& field, const Eigen::MatrixBase<Derived>& m) {
  // x * 0 is 0 for finite x and NaN for inf or NaN; Eigen vectorises this sum (its allFinite() is a scalar loop,
  // ~3 ns an entry: 14 ms a compute at n = 1024, h = 16). The loop below only runs to name the bad entry.
  if (!std::isnan((m.array() * 0.0f).sum())) return;
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j)
      if (!std::isfinite(m(i, j)))
        throw InputError(field, "finite numbers", std::to_string(m(i, j)) + " at [" + std::to_string(i) + "][" +
                                                      std::to_string(j) + "]");
}

static void checkMatrix(const std::string& field, const Matrix& m, long want_rows, long want_cols) {
  checkShape(field, m.rows(), m.cols(), want_rows, want_cols);
  checkFinite(field, m);
}

static void checkBias(const std::string& field, const std::optional<RowVector>& b, long want) {
  if (!b) return;
  if (b->size() != want) throw InputError(field, std::to_string(want) + " numbers", std::to_string(b->size()));
  checkFinite(field, *b);
}

void validateHead(const Scene& scene, int i) {
  if (i < 0 || i >= scene.numHeads())
    throw InputError("head", "0 to " + std::to_string(scene.numHeads() - 1), std::to_string(i));
  const long d = scene.d_model;
  const int kv_count = static_cast<int>(scene.kv_heads.size());
  const HeadParams& head = scene.heads[static_cast<std::size_t>(i)];
  const std::string at = "heads[" + std::to_string(i) + "].";
  if (head.w_q.cols() < 1) throw InputError(at + "w_q", "d_k of at least 1 column", "0 columns");
  checkMatrix(at + "w_q", head.w_q, d, head.w_q.cols());
  checkBias(at + "b_q", head.b_q, head.dK());
  if (scene.grouped()) {
    if (head.kv < 0 || head.kv >= kv_count)
      throw InputError(at + "kv", "a kv_heads index from 0 to " + std::to_string(kv_count - 1),
                       std::to_string(head.kv));
    if (head.w_k.size() || head.w_v.size() || head.b_k || head.b_v)
      throw InputError(at + "w_k", "no w_k, w_v, b_k or b_v (they belong to kv_heads[" +
                                       std::to_string(head.kv) + "])", "the head's own");
    const Matrix& w_k = scene.wK(i);
    if (w_k.cols() != head.dK())
      throw InputError(at + "w_q", std::to_string(w_k.cols()) + " columns (d_k of kv_heads[" +
                                       std::to_string(head.kv) + "])", std::to_string(head.dK()));
  } else {
    if (head.w_v.cols() < 1) throw InputError(at + "w_v", "d_v of at least 1 column", "0 columns");
    checkMatrix(at + "w_k", head.w_k, d, head.dK());
    checkMatrix(at + "w_v", head.w_v, d, head.w_v.cols());
    checkBias(at + "b_k", head.b_k, head.dK());
    checkBias(at + "b_v", head.b_v, scene.dV(i));
  }
  if (scene.rope && scene.rope->dims > head.dK())
    throw InputError("rope.dims", "at most d_k = " + std::to_string(head.dK()) + " (heads[" + std::to_string(i) + "])",
                     std::to_string(scene.rope->dims));
}

void validateScene(const Scene& scene, const Limits& limits) {
  if (scene.d_model < 1) throw InputError("d_model", "at least 1", std::to_string(scene.d_model));
  const int h = scene.numHeads();
  if (h < 1 || h > limits.max_heads)
    throw InputError("heads", "1 to " + std::to_string(limits.max_heads) + " heads", std::to_string(h));
  const long d = scene.d_model;

  if (scene.query.rows() == 0) throw InputError("query", "at least 1 row (an empty sequence has nothing to attend)", "0 rows");
  checkMatrix("query", scene.query, scene.query.rows(), d);
  const long n_q = scene.query.rows();
  if (scene.key) {
    if (scene.key->rows() == 0) throw InputError("key", "at least 1 row", "0 rows");
    checkMatrix("key", *scene.key, scene.key->rows(), d);
  }
  const long n_k = scene.keyRows().rows();
  if (scene.value) checkMatrix("value", *scene.value, n_k, d);

  if (static_cast<long>(scene.query_tokens.size()) != n_q)
    throw InputError("query_tokens", std::to_string(n_q) + " tokens (one per query row)",
                     std::to_string(scene.query_tokens.size()));
  if (!scene.key_tokens.empty() && static_cast<long>(scene.key_tokens.size()) != n_k)
    throw InputError("key_tokens", std::to_string(n_k) + " tokens (one per key row)",
                     std::to_string(scene.key_tokens.size()));
  if (scene.key_tokens.empty() && scene.key && n_k != n_q)
    throw InputError("key_tokens", std::to_string(n_k) + " tokens (key rows differ in count from query rows)",
                     "none");

  const int kv_count = static_cast<int>(scene.kv_heads.size());
  if (kv_count > h) throw InputError("kv_heads", "1 to " + std::to_string(h) + " (at most one per query head)",
                                     std::to_string(kv_count));
  for (int g = 0; g < kv_count; ++g) {
    const KvHeadParams& kv = scene.kv_heads[static_cast<std::size_t>(g)];
    const std::string at = "kv_heads[" + std::to_string(g) + "].";
    if (kv.w_k.cols() < 1) throw InputError(at + "w_k", "d_k of at least 1 column", "0 columns");
    if (kv.w_v.cols() < 1) throw InputError(at + "w_v", "d_v of at least 1 column", "0 columns");
    checkMatrix(at + "w_k", kv.w_k, d, kv.w_k.cols());
    checkMatrix(at + "w_v", kv.w_v, d, kv.w_v.cols());
    checkBias(at + "b_k", kv.b_k, kv.w_k.cols());
    checkBias(at + "b_v", kv.b_v, kv.w_v.cols());
  }
  std::vector<char> kv_used(static_cast<std::size_t>(kv_count), 0);
  int concat = 0;
  for (int i = 0; i < h; ++i) {
    validateHead(scene, i);
    if (scene.grouped()) kv_used[static_cast<std::size_t>(scene.heads[static_cast<std::size_t>(i)].kv)] = 1;
    concat += scene.dV(i);
  }
  for (int g = 0; g < kv_count; ++g)
    if (!kv_used[static_cast<std::size_t>(g)])
      throw InputError("kv_heads[" + std::to_string(g) + "]", "a key/value head some query head's kv names",
                       "none uses it");
  if (scene.rope) {
    if (!std::isfinite(scene.rope->theta) || scene.rope->theta <= 0)
      throw InputError("rope.theta", "a finite number above 0", std::to_string(scene.rope->theta));
    if (scene.rope->dims < 2 || scene.rope->dims % 2 != 0)
      throw InputError("rope.dims", "an even number of at least 2", std::to_string(scene.rope->dims));
    const RopeScaling& sc = scene.rope->scaling;
    if (sc.type != RopeScaling::Type::None && (!std::isfinite(sc.factor) || sc.factor <= 0))
      throw InputError("rope.scaling.factor", "a finite number above 0", std::to_string(sc.factor));
    if (sc.type == RopeScaling::Type::Llama3) {
      if (!std::isfinite(sc.low_freq_factor) || sc.low_freq_factor <= 0)
        throw InputError("rope.scaling.low_freq_factor", "a finite number above 0", std::to_string(sc.low_freq_factor));
      if (!std::isfinite(sc.high_freq_factor) || sc.high_freq_factor <= sc.low_freq_factor)
        throw InputError("rope.scaling.high_freq_factor",
                         "a finite number above low_freq_factor (" + std::to_string(sc.low_freq_factor) + ")",
                         std::to_string(sc.high_freq_factor));
      if (sc.original_max_position_embeddings < 1)
        throw InputError("rope.scaling.original_max_position_embeddings", "at least 1",
                         std::to_string(sc.original_max_position_embeddings));
    }
  }
  // q_norm / k_norm: one weight of every head's d_k, finite, and eps > 0.
  for (const auto& [field, norm] : {std::pair{"q_norm", &scene.q_norm}, std::pair{"k_norm", &scene.k_norm}}) {
    if (!*norm) continue;
    const SceneHeadNorm& sn = **norm;
    const std::string f = field;
    for (int i = 0; i < h; ++i)
      if (sn.weight.size() != scene.heads[static_cast<std::size_t>(i)].dK())
        throw InputError(f + ".weight", std::to_string(scene.heads[static_cast<std::size_t>(i)].dK()) +
                                            " numbers (d_k of heads[" + std::to_string(i) + "])",
                         std::to_string(sn.weight.size()));
    if (!sn.weight.allFinite()) throw InputError(f + ".weight", "finite numbers", "a NaN or infinity");
    if (!std::isfinite(sn.eps) || sn.eps <= 0) throw InputError(f + ".eps", "a finite number above 0", std::to_string(sn.eps));
  }
  auto checkPositions = [](const std::string& field, const std::vector<int>& p, long n) {
    if (p.empty()) return;
    if (static_cast<long>(p.size()) != n)
      throw InputError(field, std::to_string(n) + " positions (one per row)", std::to_string(p.size()));
    for (int v : p)
      if (v < 0) throw InputError(field, "positions of 0 or more", std::to_string(v));
  };
  checkPositions("query_positions", scene.query_positions, n_q);
  checkPositions("key_positions", scene.key_positions, n_k);
  if (scene.w_o) checkMatrix("w_o", *scene.w_o, concat, d);
  if (scene.b_o) {
    if (!scene.w_o) throw InputError("b_o", "no b_o without w_o (the output is then the concatenation)", "b_o");
    checkBias("b_o", scene.b_o, d);
  }

  if (scene.sliding_window != 0)
    throw InputError("sliding_window", "0 in a scene to compute (a window is a forward's tiles' rule)",
                     std::to_string(scene.sliding_window));
  if (scene.mask == MaskKind::Explicit) {
    checkShape("mask", scene.explicit_mask.rows(), scene.explicit_mask.cols(), n_q, n_k);
    for (Eigen::Index i = 0; i < scene.explicit_mask.size(); ++i)
      if (scene.explicit_mask.data()[i] > 1)
        throw InputError("mask", "0 or 1 in every cell", std::to_string(scene.explicit_mask.data()[i]));
  }
  if (!scene.key_padding.empty()) {
    if (static_cast<long>(scene.key_padding.size()) != n_k)
      throw InputError("key_padding", std::to_string(n_k) + " flags (one per key)",
                       std::to_string(scene.key_padding.size()));
    for (std::uint8_t flag : scene.key_padding)
      if (flag > 1) throw InputError("key_padding", "0 or 1 for each key", std::to_string(flag));
  }
  if (scene.scale && (!std::isfinite(*scene.scale) || *scene.scale <= 0))
    throw InputError("scale", "a finite number above 0", std::to_string(*scene.scale));

  checkMemoryBudget("scene size", "a result", estimateResultBytes(scene, limits.with_maps), limits.memory_budget_bytes);
}

}  // namespace attnscope
