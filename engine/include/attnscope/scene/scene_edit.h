// Edits to a Scene that involve more than setting a number: resizing while keeping what still fits, token
// insertion/removal/reordering (rows, masks and padding follow), positional encodings, preset scenes from text.
// The window's editors call these; each returns or changes a Scene that the caller then validates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/scene/scene.h"

namespace attnscope {

// Sizes that apply to every head at once (the window's model panel).
struct SceneSize {
  int d_model = 4;
  int heads = 2;
  int d_k = 2;
  int d_v = 2;
};

// A matrix with entries ~ N(0, stddev^2), reproducible from `seed`.
Matrix randomMatrix(int rows, int cols, float stddev, std::uint64_t seed);
// (rows, cols) with ones on the main diagonal, zeros elsewhere (a non-square "identity" keeps min(rows, cols)).
Matrix identityMatrix(int rows, int cols);

// The same scene at a new size. Every entry whose row and column still exist is kept (inputs, projections,
// biases, W_O, the first min(old, new) heads); new entries are random ~ N(0, 1/d_model) from `seed`, so new
// heads differ from one another. Throws InputError for sizes below 1 or above 64 heads.
Scene resizeScene(const Scene& scene, const SceneSize& size, std::uint64_t seed);

// Key/value heads for grouped-query attention: `count` groups of consecutive query heads (head h in group
// h * count / heads), each group's K and V those its first head reads now. Lowering the count merges groups
// keeping each group's first K/V; raising it splits a group by copying; count == heads is classic multi-head
// attention (no kv_heads: every head its own copy). InputError for a count outside 1..heads.
void setKvHeadCount(Scene& scene, int count);

// The sinusoidal positional encodings of "Attention Is All You Need": (n, d_model) with
// PE(p, 2i) = sin(p / 10000^(2i / d_model)), PE(p, 2i + 1) = cos(p / 10000^(2i / d_model)).
Matrix sinusoidalPositions(int n, int d_model);
// Adds them to the query rows, and to separate key and value rows when the scene has them.
void addPositionalEncodings(Scene& scene);

// Which sequence a token edit applies to. In self-attention (no separate key rows) both are the same sequence.
enum class TokenSide { Query, Key };
// Inserts a token with an all-zero input row before index `at` (0..n). Masks and key padding grow with it
// (the new token may attend and be attended).
void insertToken(Scene& scene, TokenSide side, int at, const std::string& token);
// Removes token `at`; throws InputError when it is the last one.
void removeToken(Scene& scene, TokenSide side, int at);
// Moves token `from` to position `to`, carrying its row, its mask row/column and padding flag.
void moveToken(Scene& scene, TokenSide side, int from, int to);
// Cross-attention on: separate key and value rows, starting as copies of the query rows (the result is
// unchanged until they are edited). Off: the key and value rows are dropped (self-attention on the queries).
void setCrossAttention(Scene& scene, bool on);

// Words and punctuation marks of `text`, in order ("tired." -> "tired", ".").
std::vector<std::string> splitWords(const std::string& text);
// A scene over the words of `text`: random embeddings ~ N(0, 1) from `seed` plus sinusoidal positions,
// random projections as makeRandomScene, d_k = d_v = d_model / heads, W_O included.
Scene makeSentenceScene(const std::string& text, int heads, int d_model, std::uint64_t seed);

}  // namespace attnscope
