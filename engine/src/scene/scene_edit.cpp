// Scene edits that keep a scene consistent: resizing, token edits, positional encodings, sentence scenes.
#include "attnscope/scene/scene_edit.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>

#include "attnscope/error.h"
#include "attnscope/scene/presets.h"

namespace attnscope {

namespace {

// Copies the top-left block of `old` that fits into a (rows, cols) matrix whose other entries are `fill`.
Matrix keepBlock(const Matrix& old, const Matrix& fill) {
  Matrix m = fill;
  const Eigen::Index r = std::min(old.rows(), m.rows()), c = std::min(old.cols(), m.cols());
  m.topLeftCorner(r, c) = old.topLeftCorner(r, c);
  return m;
}

std::optional<RowVector> keepBias(const std::optional<RowVector>& old, int size) {
  if (!old) return std::nullopt;
  RowVector b = RowVector::Zero(size);
  const Eigen::Index n = std::min<Eigen::Index>(old->size(), size);
  b.head(n) = old->head(n);
  return b;
}

// Rebuilds rows (or columns) from an index map: entry i of the result is old entry source[i], or `fill`
// where source[i] is -1 (a new token).
template <typename M>
M remapRows(const M& old, const std::vector<int>& source, typename M::Scalar fill) {
  M m(static_cast<Eigen::Index>(source.size()), old.cols());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] >= 0)
      m.row(static_cast<Eigen::Index>(i)) = old.row(source[i]);
    else
      m.row(static_cast<Eigen::Index>(i)).setConstant(fill);
  }
  return m;
}
template <typename M>
M remapCols(const M& old, const std::vector<int>& source, typename M::Scalar fill) {
  M m(old.rows(), static_cast<Eigen::Index>(source.size()));
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] >= 0)
      m.col(static_cast<Eigen::Index>(i)) = old.col(source[i]);
    else
      m.col(static_cast<Eigen::Index>(i)).setConstant(fill);
  }
  return m;
}
template <typename T>
std::vector<T> remapList(const std::vector<T>& old, const std::vector<int>& source, const T& fill) {
  std::vector<T> out;
  for (int s : source) out.push_back(s >= 0 ? old[static_cast<std::size_t>(s)] : fill);
  return out;
}

// Explicit positions follow their tokens; a new token (-1 in the map) takes its index as its position.
std::vector<int> remapPositions(const std::vector<int>& old, const std::vector<int>& source) {
  if (old.empty()) return old;
  std::vector<int> out = remapList(old, source, -1);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] < 0) out[i] = static_cast<int>(i);
  return out;
}

// Applies a token index map to one side of the scene (rows, tokens, mask, padding, positions).
void remapTokens(Scene& scene, TokenSide side, const std::vector<int>& source, const std::string& new_token) {
  const bool self = !scene.key;
  const bool query_side = side == TokenSide::Query || self;
  const bool key_side = side == TokenSide::Key || self;
  const bool explicit_mask = scene.explicit_mask.size() > 0;
  if (query_side) {
    scene.query = remapRows(scene.query, source, 0.0f);
    scene.query_tokens = remapList(scene.query_tokens, source, new_token);
    if (explicit_mask) scene.explicit_mask = remapRows(scene.explicit_mask, source, std::uint8_t{1});
    scene.query_positions = remapPositions(scene.query_positions, source);
  }
  if (key_side) {
    scene.key_positions = remapPositions(scene.key_positions, source);
    if (scene.key) {
      scene.key = remapRows(*scene.key, source, 0.0f);
      scene.key_tokens = remapList(scene.key_tokens, source, new_token);
    } else if (!scene.key_tokens.empty()) {
      scene.key_tokens = remapList(scene.key_tokens, source, new_token);
    }
    if (scene.value) scene.value = remapRows(*scene.value, source, 0.0f);
    if (explicit_mask) scene.explicit_mask = remapCols(scene.explicit_mask, source, std::uint8_t{1});
    if (!scene.key_padding.empty()) scene.key_padding = remapList(scene.key_padding, source, std::uint8_t{0});
  }
}

int sideLength(const Scene& scene, TokenSide side) { return side == TokenSide::Query ? scene.nQ() : scene.nK(); }

std::vector<int> identityMap(int n) {
  std::vector<int> map(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) map[static_cast<std::size_t>(i)] = i;
  return map;
}

}  // namespace

Matrix randomMatrix(int rows, int cols, float stddev, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

Matrix identityMatrix(int rows, int cols) { return Matrix::Identity(rows, cols); }

Scene resizeScene(const Scene& scene, const SceneSize& size, std::uint64_t seed) {
  if (size.d_model < 1) throw InputError("d_model", "at least 1", std::to_string(size.d_model));
  if (size.heads < 1 || size.heads > 64) throw InputError("heads", "1 to 64 heads", std::to_string(size.heads));
  if (size.d_k < 1) throw InputError("d_k", "at least 1", std::to_string(size.d_k));
  if (size.d_v < 1) throw InputError("d_v", "at least 1", std::to_string(size.d_v));
  const int d = size.d_model;
  const float w_std = 1.0f / std::sqrt(static_cast<float>(d));
  std::uint64_t next_seed = seed;
  auto fresh = [&](int rows, int cols, float stddev) { return randomMatrix(rows, cols, stddev, next_seed++); };

  Scene out = scene;
  out.d_model = d;
  out.query = keepBlock(scene.query, fresh(scene.nQ(), d, 1.0f));
  if (scene.key) out.key = keepBlock(*scene.key, fresh(static_cast<int>(scene.key->rows()), d, 1.0f));
  if (scene.value) out.value = keepBlock(*scene.value, fresh(static_cast<int>(scene.value->rows()), d, 1.0f));
  // A grouped scene is resized as classic heads (each with its group's K/V), then regrouped at the same count.
  const int kv_count = scene.grouped() ? std::min(scene.numKvHeads(), size.heads) : 0;
  out.kv_heads.clear();
  out.heads.clear();
  for (int h = 0; h < size.heads; ++h) {
    HeadParams p{fresh(d, size.d_k, w_std),
                 fresh(d, size.d_k, w_std),
                 fresh(d, size.d_v, w_std),
                 std::nullopt,
                 std::nullopt,
                 std::nullopt};
    if (h < scene.numHeads()) {
      const HeadParams& old = scene.heads[static_cast<std::size_t>(h)];
      p.w_q = keepBlock(old.w_q, p.w_q);
      p.w_k = keepBlock(scene.wK(h), p.w_k);
      p.w_v = keepBlock(scene.wV(h), p.w_v);
      p.b_q = keepBias(old.b_q, size.d_k);
      p.b_k = keepBias(scene.bK(h), size.d_k);
      p.b_v = keepBias(scene.bV(h), size.d_v);
    }
    out.heads.push_back(std::move(p));
  }
  if (scene.w_o) {
    const int concat = size.heads * size.d_v;
    out.w_o = keepBlock(*scene.w_o, fresh(concat, d, 1.0f / std::sqrt(static_cast<float>(concat))));
    out.b_o = keepBias(scene.b_o, d);
  }
  if (kv_count > 0) setKvHeadCount(out, kv_count);
  if (out.rope && out.rope->dims > size.d_k) {  // rotate what still fits: dims even and at most d_k
    if (size.d_k < 2) out.rope.reset();
    else out.rope->dims = size.d_k - size.d_k % 2;
  }
  for (std::optional<SceneHeadNorm>* norm : {&out.q_norm, &out.k_norm})  // one weight per d_k entry: new ones 1
    if (*norm && (*norm)->weight.size() != size.d_k) {
      RowVector weight = RowVector::Ones(size.d_k);
      const Eigen::Index kept = std::min<Eigen::Index>(size.d_k, (*norm)->weight.size());
      weight.head(kept) = (*norm)->weight.head(kept);
      (*norm)->weight = weight;
    }
  return out;
}

void setKvHeadCount(Scene& scene, int count) {
  const int h = scene.numHeads();
  if (count < 1 || count > h)
    throw InputError("kv heads", "1 to " + std::to_string(h) + " (the query head count)", std::to_string(count));
  std::vector<KvHeadParams> groups;  // group g: what its first head h0 = ceil(g h / count) reads now
  std::vector<int> kv_of(static_cast<std::size_t>(h));
  for (int i = 0; i < h; ++i) {
    const int g = static_cast<int>(static_cast<long>(i) * count / h);
    kv_of[static_cast<std::size_t>(i)] = g;
    if (g == static_cast<int>(groups.size())) groups.push_back({scene.wK(i), scene.wV(i), scene.bK(i), scene.bV(i)});
  }
  if (count == h) {  // classic multi-head attention: each head its own K/V, no kv_heads
    for (int i = 0; i < h; ++i) {
      HeadParams& p = scene.heads[static_cast<std::size_t>(i)];
      KvHeadParams& g = groups[static_cast<std::size_t>(i)];
      p.w_k = std::move(g.w_k);
      p.w_v = std::move(g.w_v);
      p.b_k = std::move(g.b_k);
      p.b_v = std::move(g.b_v);
      p.kv = 0;
    }
    scene.kv_heads.clear();
    return;
  }
  for (int i = 0; i < h; ++i) {
    HeadParams& p = scene.heads[static_cast<std::size_t>(i)];
    p.w_k.resize(0, 0);
    p.w_v.resize(0, 0);
    p.b_k.reset();
    p.b_v.reset();
    p.kv = kv_of[static_cast<std::size_t>(i)];
  }
  scene.kv_heads = std::move(groups);
}

Matrix sinusoidalPositions(int n, int d_model) {
  Matrix pe(n, d_model);
  for (int p = 0; p < n; ++p)
    for (int j = 0; j < d_model; ++j) {
      const int i2 = j - (j % 2);  // 2i: the even index shared by a sin/cos pair
      const double angle = p / std::pow(10000.0, static_cast<double>(i2) / d_model);
      pe(p, j) = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  return pe;
}

void addPositionalEncodings(Scene& scene) {
  scene.query += sinusoidalPositions(scene.nQ(), scene.d_model);
  if (scene.key) *scene.key += sinusoidalPositions(static_cast<int>(scene.key->rows()), scene.d_model);
  if (scene.value) *scene.value += sinusoidalPositions(static_cast<int>(scene.value->rows()), scene.d_model);
}

void insertToken(Scene& scene, TokenSide side, int at, const std::string& token) {
  const int n = sideLength(scene, side);
  if (at < 0 || at > n) throw InputError("token position", "0 to " + std::to_string(n), std::to_string(at));
  std::vector<int> map = identityMap(n);
  map.insert(map.begin() + at, -1);
  remapTokens(scene, side, map, token);
}

void removeToken(Scene& scene, TokenSide side, int at) {
  const int n = sideLength(scene, side);
  if (n <= 1) throw InputError("tokens", "at least 1 token left", "0");
  if (at < 0 || at >= n) throw InputError("token position", "0 to " + std::to_string(n - 1), std::to_string(at));
  std::vector<int> map = identityMap(n);
  map.erase(map.begin() + at);
  remapTokens(scene, side, map, "");
}

void moveToken(Scene& scene, TokenSide side, int from, int to) {
  const int n = sideLength(scene, side);
  if (from < 0 || from >= n) throw InputError("token position", "0 to " + std::to_string(n - 1), std::to_string(from));
  if (to < 0 || to >= n) throw InputError("token position", "0 to " + std::to_string(n - 1), std::to_string(to));
  std::vector<int> map = identityMap(n);
  map.erase(map.begin() + from);
  map.insert(map.begin() + to, from);
  remapTokens(scene, side, map, "");
}

void setCrossAttention(Scene& scene, bool on) {
  if (on && !scene.key) {
    scene.key = scene.query;
    scene.value = scene.query;
    scene.key_tokens = scene.query_tokens;
  } else if (!on && scene.key) {
    scene.key.reset();
    scene.value.reset();
    scene.key_tokens.clear();
    scene.key_positions.clear();
    if (scene.mask == MaskKind::Explicit && scene.explicit_mask.cols() != scene.nQ())
      scene.explicit_mask = MaskMatrix::Ones(scene.nQ(), scene.nQ());
    if (!scene.key_padding.empty()) scene.key_padding.assign(static_cast<std::size_t>(scene.nQ()), 0);
  }
}

std::vector<std::string> splitWords(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c != '\'' && (std::isspace(u) || std::ispunct(u))) {  // an apostrophe stays inside its word ("it's")
      if (!word.empty()) words.push_back(word);
      word.clear();
      if (std::ispunct(u)) words.emplace_back(1, c);
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

Scene makeSentenceScene(const std::string& text, int heads, int d_model, std::uint64_t seed) {
  const std::vector<std::string> words = splitWords(text);
  if (words.empty()) throw InputError("sentence", "at least one word", "\"" + text + "\"");
  RandomSceneSpec spec;
  spec.n = static_cast<int>(words.size());
  spec.heads = heads;
  spec.d_model = d_model;
  spec.seed = seed;
  Scene scene = makeRandomScene(spec);
  scene.query_tokens = words;
  addPositionalEncodings(scene);
  return scene;
}

}  // namespace attnscope
