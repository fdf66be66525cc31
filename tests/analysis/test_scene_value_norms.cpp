// sceneValueNorms against norms worked out by hand: the worked example (w_o the identity), a scene with its own
// value rows, a bias and a w_o, and a grouped scene (the KV head's W_V and b_V, the query head's W_O rows).
#include <gtest/gtest.h>

#include <cmath>

#include "attnscope/analysis/value_norms.h"
#include "attnscope/scene/scene_json.h"
#include "compare.h"

using namespace attnscope;

namespace {

Matrix mat(int rows, int cols, std::initializer_list<double> values) {
  Matrix m(rows, cols);
  int i = 0;
  for (double v : values) m(i / cols, i % cols) = static_cast<float>(v), ++i;
  return m;
}

RowVector row(std::initializer_list<double> values) { return mat(1, static_cast<int>(values.size()), values); }

// The norms are computed in double and rounded to float once: every value here is below 16, whose float ulp is
// 2^-19 (1.9e-6), so half an ulp (9.5e-7) bounds the error; 1e-6 leaves no room for any other rounding.
constexpr double kTolerance = 1e-6;

TEST(SceneValueNorms, WorkedExampleByHand) {
  // X rows [1,0,1,0], [0,1,0,1], [1,1,0,0]; head 1's W_V takes x0 + x2 into its first column: v = 2, 0, 1;
  // head 2's takes x0 + x1 into its second: v = 1, 1, 2. w_o is the identity, so the norms are |v|.
  const Scene scene = workedExampleScene();
  test::expectClose(sceneValueNorms(scene), mat(2, 3, {2, 0, 1, 1, 1, 2}), kTolerance, "worked example");
}

TEST(SceneValueNorms, ValueRowsBiasAndOutputProjection) {
  Scene s;
  s.d_model = 2;
  s.query_tokens = {"a", "b"};
  s.query = mat(2, 2, {9, 9, 9, 9});
  s.key = mat(2, 2, {5, 5, 5, 5});
  s.value = mat(2, 2, {1, 0, 0, 2});  // the value rows, not the key's or the query's
  HeadParams h0, h1;
  h0.w_q = h0.w_k = mat(2, 1, {1, 0});
  h0.w_v = mat(2, 1, {1, 1});
  h0.b_v = row({1});  // v = 1 + 1 = 2 and 2 + 1 = 3
  h1.w_q = h1.w_k = mat(2, 1, {0, 1});
  h1.w_v = mat(2, 1, {2, 0});  // v = 2 and 0
  s.heads = {h0, h1};
  s.w_o = mat(2, 2, {3, 4,    // head 1's row: |v| x ||(3, 4)|| = |v| x 5
                     0, 1});  // head 2's row: |v| x 1
  s.b_o = row({7, 7});        // not part of what a head writes
  test::expectClose(sceneValueNorms(s), mat(2, 2, {10, 15, 2, 0}), kTolerance, "with w_o");
  // Without w_o the output is the concatenation: the norms of v themselves.
  s.w_o.reset();
  s.b_o.reset();
  test::expectClose(sceneValueNorms(s), mat(2, 2, {2, 3, 2, 0}), kTolerance, "without w_o");
}

TEST(SceneValueNorms, GroupedHeadsReadTheirKvHead) {
  Scene s;
  s.d_model = 2;
  s.query_tokens = {"a", "b"};
  s.query = mat(2, 2, {3, 4, 1, 0});  // no key or value rows: the query's serve
  KvHeadParams kv;
  kv.w_k = mat(2, 1, {1, 0});
  kv.w_v = mat(2, 2, {1, 0, 0, 1});
  kv.b_v = row({0, 1});  // v = (3, 5) and (1, 1)
  s.kv_heads = {kv};
  HeadParams q0, q1;
  q0.w_q = q1.w_q = mat(2, 1, {1, 0});
  s.heads = {q0, q1};
  s.w_o = mat(4, 2, {1, 0, 0, 1,    // head 1: the identity, ||v||
                     1, 0, 0, 0});  // head 2: v's first entry alone
  test::expectClose(sceneValueNorms(s), mat(2, 2, {std::sqrt(34.0), std::sqrt(2.0), 3, 1}), kTolerance, "grouped");
}

}  // namespace
