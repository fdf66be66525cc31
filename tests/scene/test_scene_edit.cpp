// Scene edits: positional encodings (values worked out by hand), resizing keeps what fits, token edits carry
// rows, masks and padding along, sentence scenes.
#include <gtest/gtest.h>

#include "attnscope/error.h"
#include "attnscope/scene/scene_edit.h"

using namespace attnscope;

namespace {

// Three tokens a, b, c with rows [i, 10 + i, 20 + i, 30 + i] (easy to follow), two heads with d_k = d_v = 2.
Scene smallScene() {
  Scene s;
  s.d_model = 4;
  s.query_tokens = {"a", "b", "c"};
  s.query.resize(3, 4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) s.query(i, j) = static_cast<float>(10 * j + i);
  for (int h = 0; h < 2; ++h) {
    HeadParams p{Matrix::Constant(4, 2, 1.0f + h),
                 Matrix::Constant(4, 2, 2.0f + h),
                 Matrix::Constant(4, 2, 3.0f + h),
                 RowVector::Constant(2, 0.5f),
                 std::nullopt,
                 std::nullopt};
    s.heads.push_back(p);
  }
  s.w_o = Matrix::Identity(4, 4);
  return s;
}

}  // namespace

TEST(SceneEdit, SinusoidalPositionsMatchHandValues) {
  // d_model = 4: the pair i = 0 has frequency 1, the pair i = 1 has 1 / 10000^(2/4) = 1/100.
  const Matrix pe = sinusoidalPositions(3, 4);
  const float expected[3][4] = {
      {0.0f, 1.0f, 0.0f, 1.0f},
      {0.841470985f, 0.540302306f, 0.00999983333f, 0.99995000f},   // sin 1, cos 1, sin .01, cos .01
      {0.909297427f, -0.416146837f, 0.0199986667f, 0.99980001f}};  // sin 2, cos 2, sin .02, cos .02
  for (int p = 0; p < 3; ++p)
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(pe(p, j), expected[p][j], 1e-6f) << p << "," << j;  // float rounding ~6e-8
}

TEST(SceneEdit, AddPositionalEncodingsAddsToEveryRow) {
  Scene s = smallScene();
  const Matrix before = s.query;
  addPositionalEncodings(s);
  EXPECT_FLOAT_EQ(s.query(1, 0), before(1, 0) + 0.841470985f);
  EXPECT_FLOAT_EQ(s.query(0, 1), before(0, 1) + 1.0f);
}

TEST(SceneEdit, ResizeKeepsWhatFits) {
  const Scene s = smallScene();
  const Scene r = resizeScene(s, SceneSize{3, 4, 3, 1}, 7);
  validateScene(r);
  ASSERT_EQ(r.numHeads(), 4);
  EXPECT_EQ(r.d_model, 3);
  EXPECT_TRUE(r.query == s.query.leftCols(3));                           // the first 3 input columns kept
  EXPECT_TRUE(r.heads[1].w_q.leftCols(2) == s.heads[1].w_q.topRows(3));  // top-left 3 x 2 of head 2's W_Q kept
  EXPECT_EQ(r.heads[1].w_q.cols(), 3);
  EXPECT_TRUE(r.heads[0].w_v == s.heads[0].w_v.topLeftCorner(3, 1));
  ASSERT_TRUE(r.heads[0].b_q.has_value());
  EXPECT_FLOAT_EQ((*r.heads[0].b_q)(1), 0.5f);
  EXPECT_FLOAT_EQ((*r.heads[0].b_q)(2), 0.0f);     // new bias entries are zero
  EXPECT_FALSE(r.heads[2].w_q == r.heads[3].w_q);  // new heads differ from each other
  ASSERT_TRUE(r.w_o.has_value());
  EXPECT_EQ(r.w_o->rows(), 4);  // 4 heads x d_v 1
  EXPECT_EQ(r.w_o->cols(), 3);
  EXPECT_FLOAT_EQ((*r.w_o)(0, 0), 1.0f);
  // Growing back keeps the shrunk scene's entries again.
  const Scene back = resizeScene(r, SceneSize{4, 2, 2, 2}, 8);
  EXPECT_TRUE(back.query.leftCols(3) == s.query.leftCols(3));
  EXPECT_THROW(resizeScene(s, SceneSize{4, 65, 2, 2}, 1), InputError);
  EXPECT_THROW(resizeScene(s, SceneSize{0, 2, 2, 2}, 1), InputError);
}

TEST(SceneEdit, InsertTokenGrowsRowsMaskAndPadding) {
  Scene s = smallScene();
  s.mask = MaskKind::Explicit;
  s.explicit_mask = MaskMatrix::Zero(3, 3);
  s.key_padding = {0, 1, 0};
  insertToken(s, TokenSide::Query, 1, "new");
  validateScene(s);
  EXPECT_EQ(s.query_tokens, (std::vector<std::string>{"a", "new", "b", "c"}));
  EXPECT_TRUE(s.query.row(1).isZero());
  EXPECT_FLOAT_EQ(s.query(2, 1), 11.0f);  // b's row moved down
  EXPECT_EQ(s.explicit_mask(1, 1), 1);    // the new token may attend and be attended
  EXPECT_EQ(s.explicit_mask(0, 1), 1);
  EXPECT_EQ(s.explicit_mask(0, 0), 0);
  EXPECT_EQ(s.key_padding, (std::vector<std::uint8_t>{0, 0, 1, 0}));
}

TEST(SceneEdit, RemoveAndMoveTokens) {
  Scene s = smallScene();
  moveToken(s, TokenSide::Query, 0, 2);
  EXPECT_EQ(s.query_tokens, (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_FLOAT_EQ(s.query(2, 3), 30.0f);  // a's row: [0, 10, 20, 30]
  removeToken(s, TokenSide::Query, 0);
  EXPECT_EQ(s.query_tokens, (std::vector<std::string>{"c", "a"}));
  EXPECT_FLOAT_EQ(s.query(0, 0), 2.0f);
  removeToken(s, TokenSide::Query, 0);
  EXPECT_THROW(removeToken(s, TokenSide::Query, 0), InputError);  // the last token stays
  EXPECT_THROW(moveToken(s, TokenSide::Query, 0, 3), InputError);
}

TEST(SceneEdit, CrossAttentionKeySideEditsLeaveQueriesAlone) {
  Scene s = smallScene();
  setCrossAttention(s, true);
  validateScene(s);
  insertToken(s, TokenSide::Key, 3, "k");
  validateScene(s);
  EXPECT_EQ(s.nQ(), 3);
  EXPECT_EQ(s.nK(), 4);
  EXPECT_EQ(s.key_tokens.back(), "k");
  EXPECT_EQ(s.value->rows(), 4);
  setCrossAttention(s, false);
  validateScene(s);
  EXPECT_EQ(s.nK(), 3);
}

TEST(SceneEdit, SentenceScene) {
  EXPECT_EQ(splitWords("The cat sat on the mat because it was tired."),
            (std::vector<std::string>{"The", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", "."}));
  EXPECT_EQ(splitWords("it's here"), (std::vector<std::string>{"it's", "here"}));
  const Scene s = makeSentenceScene("The cat sat.", 2, 8, 3);
  validateScene(s);
  EXPECT_EQ(s.nQ(), 4);
  EXPECT_EQ(s.numHeads(), 2);
  EXPECT_EQ(s.heads[0].dK(), 4);
  EXPECT_THROW(makeSentenceScene("   ", 2, 8, 3), InputError);
}
