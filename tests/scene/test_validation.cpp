// validateScene: every bad input gives its documented error, naming the field, the expected and the actual.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "attnscope/error.h"
#include "attnscope/scene/presets.h"
#include "attnscope/scene/scene.h"

using namespace attnscope;

namespace {

// A valid scene: d_model 4, 3 query tokens, 2 heads with d_k 2, d_v 3 (so w_o is 6 x 4).
Scene validScene() {
  Scene s;
  s.d_model = 4;
  s.query_tokens = {"a", "b", "c"};
  s.query = Matrix::Ones(3, 4);
  for (int i = 0; i < 2; ++i) {
    HeadParams h;
    h.w_q = Matrix::Ones(4, 2);
    h.w_k = Matrix::Ones(4, 2);
    h.w_v = Matrix::Ones(4, 3);
    s.heads.push_back(h);
  }
  s.w_o = Matrix::Ones(6, 4);
  return s;
}

struct BadCase {
  const char* name;
  std::function<void(Scene&)> spoil;
  std::string message;  // the whole InputError message
};

std::string errorOf(const Scene& s, const Limits& limits = {}) {
  try {
    validateScene(s, limits);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Validation, ValidSceneAndItsOptionalPartsPass) {
  Scene s = validScene();
  EXPECT_EQ(errorOf(s), "(no error)");
  s.key = Matrix::Zero(5, 4);
  s.value = Matrix::Zero(5, 4);
  s.key_tokens = {"1", "2", "3", "4", "5"};
  s.heads[0].b_q = RowVector::Zero(2);
  s.heads[0].b_k = RowVector::Zero(2);
  s.heads[0].b_v = RowVector::Zero(3);
  s.b_o = RowVector::Zero(4);
  s.mask = MaskKind::Explicit;
  s.explicit_mask = MaskMatrix::Ones(3, 5);
  s.key_padding = {0, 0, 0, 1, 1};
  s.scale = 0.5f;
  EXPECT_EQ(errorOf(s), "(no error)");
}

TEST(Validation, EveryBadInputNamesFieldExpectedAndActual) {
  const float inf = INFINITY, nan = NAN;
  const std::vector<BadCase> cases = {
      {"zero heads", [](Scene& s) { s.heads.clear(); }, "heads: expected 1 to 64 heads, got 0"},
      {"65 heads", [](Scene& s) { s.heads.resize(65, s.heads[0]); }, "heads: expected 1 to 64 heads, got 65"},
      {"d_model 0", [](Scene& s) { s.d_model = 0; }, "d_model: expected at least 1, got 0"},
      {"empty sequence",
       [](Scene& s) {
         s.query.resize(0, 4);
         s.query_tokens.clear();
       },
       "query: expected at least 1 row (an empty sequence has nothing to attend), got 0 rows"},
      {"query width", [](Scene& s) { s.query = Matrix::Ones(3, 5); }, "query: expected 3 x 4, got 3 x 5"},
      {"empty key", [](Scene& s) { s.key = Matrix(0, 4); }, "key: expected at least 1 row, got 0 rows"},
      {"key width", [](Scene& s) { s.key = Matrix::Ones(3, 2); }, "key: expected 3 x 4, got 3 x 2"},
      {"value rows", [](Scene& s) { s.value = Matrix::Ones(2, 4); }, "value: expected 3 x 4, got 2 x 4"},
      {"query tokens", [](Scene& s) { s.query_tokens.pop_back(); },
       "query_tokens: expected 3 tokens (one per query row), got 2"},
      {"key tokens",
       [](Scene& s) {
         s.key_tokens = {"x", "y"};
       },
       "key_tokens: expected 3 tokens (one per key row), got 2"},
      {"key rows without tokens", [](Scene& s) { s.key = Matrix::Ones(5, 4); },
       "key_tokens: expected 5 tokens (key rows differ in count from query rows), got none"},
      {"w_q rows", [](Scene& s) { s.heads[1].w_q = Matrix::Ones(3, 2); }, "heads[1].w_q: expected 4 x 2, got 3 x 2"},
      {"w_q no columns", [](Scene& s) { s.heads[0].w_q = Matrix(4, 0); },
       "heads[0].w_q: expected d_k of at least 1 column, got 0 columns"},
      {"w_k d_k", [](Scene& s) { s.heads[1].w_k = Matrix::Ones(4, 3); }, "heads[1].w_k: expected 4 x 2, got 4 x 3"},
      {"w_v rows", [](Scene& s) { s.heads[0].w_v = Matrix::Ones(5, 3); }, "heads[0].w_v: expected 4 x 3, got 5 x 3"},
      {"b_q", [](Scene& s) { s.heads[0].b_q = RowVector::Zero(3); }, "heads[0].b_q: expected 2 numbers, got 3"},
      {"b_k", [](Scene& s) { s.heads[1].b_k = RowVector::Zero(1); }, "heads[1].b_k: expected 2 numbers, got 1"},
      {"b_v", [](Scene& s) { s.heads[0].b_v = RowVector::Zero(2); }, "heads[0].b_v: expected 3 numbers, got 2"},
      {"w_o rows", [](Scene& s) { s.w_o = Matrix::Ones(4, 4); }, "w_o: expected 6 x 4, got 4 x 4"},
      {"b_o", [](Scene& s) { s.b_o = RowVector::Zero(6); }, "b_o: expected 4 numbers, got 6"},
      {"b_o without w_o",
       [](Scene& s) {
         s.w_o.reset();
         s.b_o = RowVector::Zero(4);
       },
       "b_o: expected no b_o without w_o (the output is then the concatenation), got b_o"},
      {"explicit mask shape",
       [](Scene& s) {
         s.mask = MaskKind::Explicit;
         s.explicit_mask = MaskMatrix::Ones(3, 2);
       },
       "mask: expected 3 x 3, got 3 x 2"},
      {"explicit mask value",
       [](Scene& s) {
         s.mask = MaskKind::Explicit;
         s.explicit_mask = MaskMatrix::Ones(3, 3);
         s.explicit_mask(1, 1) = 2;
       },
       "mask: expected 0 or 1 in every cell, got 2"},
      {"key_padding length",
       [](Scene& s) {
         s.key_padding = {0, 1};
       },
       "key_padding: expected 3 flags (one per key), got 2"},
      {"scale zero", [](Scene& s) { s.scale = 0.0f; }, "scale: expected a finite number above 0, got 0.000000"},
      {"non-finite query", [inf](Scene& s) { s.query(2, 1) = inf; },
       "query: expected finite numbers, got inf at [2][1]"},
      {"NaN in w_v", [nan](Scene& s) { s.heads[1].w_v(3, 2) = nan; },
       "heads[1].w_v: expected finite numbers, got nan at [3][2]"},
      {"non-finite bias",
       [inf](Scene& s) {
         s.heads[0].b_k = RowVector::Zero(2);
         (*s.heads[0].b_k)[1] = -inf;
       },
       "heads[0].b_k: expected finite numbers, got -inf at [0][1]"},
      {"non-finite w_o", [nan](Scene& s) { (*s.w_o)(0, 0) = nan; }, "w_o: expected finite numbers, got nan at [0][0]"},
      {"non-finite value",
       [inf](Scene& s) {
         s.value = Matrix::Ones(3, 4);
         (*s.value)(0, 3) = inf;
       },
       "value: expected finite numbers, got inf at [0][3]"},
  };
  for (const BadCase& c : cases) {
    Scene s = validScene();
    c.spoil(s);
    EXPECT_EQ(errorOf(s), c.message) << c.name;
  }
}

TEST(Validation, ErrorCarriesTheFieldName) {
  Scene s = validScene();
  s.heads[1].w_k = Matrix::Ones(4, 3);
  try {
    validateScene(s);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "heads[1].w_k");
  }
}

TEST(Validation, MemoryBudgetIsCheckedBeforeAllocatingWithEstimateAndLimit) {
  // The worked-example-sized scene of validScene: n = 3, per head q, k (3 x 2 each), v (3 x 3), scores and
  // weights (3 x 3 each), output (3 x 3), row maximum and sum (3 each): 6 + 6 + 9 + 18 + 9 + 6 = 54 floats,
  // two heads 108; concat 3 x 6 = 18; output 3 x 4 = 12. 138 floats = 552 bytes. Without the maps (tiles on
  // demand): 138 - 2 x 18 = 102 floats = 408 bytes.
  const Scene s = validScene();
  EXPECT_EQ(estimateResultBytes(s), 552u);
  EXPECT_EQ(estimateResultBytes(s, false), 408u);
  Limits limits;
  limits.memory_budget_bytes = 552;
  EXPECT_EQ(errorOf(s, limits), "(no error)");
  limits.memory_budget_bytes = 500;
  EXPECT_EQ(errorOf(s, limits),
            "scene size: expected a result within the memory budget of 500 bytes (set ATTNSCOPE_MEMORY_BUDGET to "
            "change it), got an estimated 552 bytes");
  limits.with_maps = false;  // 408 bytes fit in 500
  EXPECT_EQ(errorOf(s, limits), "(no error)");
}

TEST(Validation, LargeEstimatesAreGivenInMiBAndBytes) {
  // n = 4096, one head with d_k = d_v = 1, d_model 1: q, k, v, output 4 x 4096 floats, scores and weights
  // 2 x 4096^2, row maximum and sum 2 x 4096, concat and output 2 x 4096: (8 * 4096 + 2 * 4096^2) * 4 =
  // 134348800 bytes = 128.1 MiB.
  Scene s;
  s.d_model = 1;
  s.query = Matrix::Ones(4096, 1);
  s.query_tokens.assign(4096, "t");
  HeadParams h;
  h.w_q = h.w_k = h.w_v = Matrix::Ones(1, 1);
  s.heads.push_back(h);
  Limits limits;
  limits.memory_budget_bytes = std::size_t{64} << 20;
  EXPECT_EQ(errorOf(s, limits),
            "scene size: expected a result within the memory budget of 64.0 MiB (67108864 bytes) (set "
            "ATTNSCOPE_MEMORY_BUDGET to change it), got an estimated 128.1 MiB (134348800 bytes)");
}

namespace attnscope {
namespace {

// The random preset's estimate, worked by hand for n = 65536, 8 heads, d_model 512 (d_k = d_v = 64), W_O:
// scene: n d + h d (2 d_k + d_v) + h d_v d floats = 33554432 + 786432 + 262144 = 34603008 floats
//        = 138412032 bytes, plus 16 bytes of label per token (1048576): 139460608 bytes.
// result without maps, per head q, k, v, output (4 n 64), m and l (2 n): 8 (4 * 65536 * 64 + 2 * 65536)
//        = 135266304 floats; concat and output 2 n 512 = 67108864 floats; 202375168 floats = 809500672 bytes.
// with maps add 8 heads x 2 x n^2 floats = 68719476736 floats.
TEST(RandomPreset, EstimateBeforeTheSceneIsMadeByHand) {
  RandomSceneSpec spec;
  spec.n = 65536;
  spec.heads = 8;
  spec.d_model = 512;
  const RandomSceneEstimate on_demand = estimateRandomScene(spec, false);
  EXPECT_EQ(on_demand.scene_bytes, 139460608u);
  EXPECT_EQ(on_demand.result_bytes, 809500672u);
  const RandomSceneEstimate kept = estimateRandomScene(spec, true);
  EXPECT_EQ(kept.result_bytes, 809500672u + 68719476736u * 4u);
  EXPECT_NO_THROW(checkRandomSceneBudget(spec, false, std::size_t{1} << 30));  // 949 MB within 1 GiB
  try {
    checkRandomSceneBudget(spec, true, std::size_t{1} << 30);
    ADD_FAILURE() << "no refusal";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "scene size");
    EXPECT_NE(std::string(e.what()).find("263049.0 MiB"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnscope
