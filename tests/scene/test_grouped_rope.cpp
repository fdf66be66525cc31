// Grouped-query heads (kv_heads) and rotary positions (rope) in scenes (issue 19): validation messages, the JSON
// round trip, the KV-head count edit, and `attnscope compute` against an independent NumPy float64 reference
// (gqa_rope_reference.py, written from the formulas).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/scene/scene.h"
#include "attnscope/scene/scene_edit.h"
#include "attnscope/scene/scene_json.h"
#include "command_support.h"
#include "compare.h"

using namespace attnscope;
using json = nlohmann::json;

namespace {

// 4 query heads (d_k 4, d_v 3) over 2 key/value heads, d_model 6, 5 tokens, rope theta 100 on all 4 dims.
Scene groupedRopeScene(int dims, bool extras) {
  Scene s;
  s.d_model = 6;
  s.query_tokens = {"a", "b", "c", "d", "e"};
  s.query = randomMatrix(5, 6, 1.0f, 1);
  for (int g = 0; g < 2; ++g)
    s.kv_heads.push_back({randomMatrix(6, 4, 0.8f, 10 + g), randomMatrix(6, 3, 0.8f, 20 + g),
                          extras ? std::optional<RowVector>(randomMatrix(1, 4, 0.5f, 30 + g)) : std::nullopt,
                          extras ? std::optional<RowVector>(randomMatrix(1, 3, 0.5f, 40 + g)) : std::nullopt});
  for (int h = 0; h < 4; ++h) {
    HeadParams p;
    p.w_q = randomMatrix(6, 4, 0.8f, 50 + h);
    if (extras) p.b_q = RowVector(randomMatrix(1, 4, 0.5f, 60 + h));
    p.kv = h / 2;
    s.heads.push_back(p);
  }
  s.w_o = randomMatrix(12, 6, 0.4f, 70);
  s.rope = SceneRope{100.0, dims};
  if (extras) {
    s.query_positions = {3, 7, 8, 20, 21};
    s.key_positions = {0, 2, 4, 6, 30};
    s.mask = MaskKind::Causal;
  }
  return s;
}

std::string errorOf(const Scene& s) {
  try {
    validateScene(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(GroupedRope, EveryNewKeyIsValidatedWithOneLine) {
  EXPECT_EQ(errorOf(groupedRopeScene(4, true)), "(no error)");
  const struct {
    const char* name;
    std::function<void(Scene&)> spoil;
    std::string message;
  } cases[] = {
      {"kv out of range", [](Scene& s) { s.heads[3].kv = 2; }, "heads[3].kv: expected a kv_heads index from 0 to 1, got 2"},
      {"kv negative", [](Scene& s) { s.heads[0].kv = -1; }, "heads[0].kv: expected a kv_heads index from 0 to 1, got -1"},
      {"unused kv head", [](Scene& s) { s.heads[2].kv = 0, s.heads[3].kv = 0; },
       "kv_heads[1]: expected a key/value head some query head's kv names, got none uses it"},
      {"own w_k in a group", [](Scene& s) { s.heads[1].w_k = Matrix::Ones(6, 4); },
       "heads[1].w_k: expected no w_k, w_v, b_k or b_v (they belong to kv_heads[0]), got the head's own"},
      {"kv w_k shape", [](Scene& s) { s.kv_heads[1].w_k = Matrix::Ones(5, 4); }, "kv_heads[1].w_k: expected 6 x 4, got 5 x 4"},
      {"kv d_k differs from w_q", [](Scene& s) { s.kv_heads[0].w_k = Matrix::Ones(6, 3), s.kv_heads[0].b_k.reset(); },
       "heads[0].w_q: expected 3 columns (d_k of kv_heads[0]), got 4"},
      {"kv bias length", [](Scene& s) { s.kv_heads[0].b_v = RowVector::Ones(4); }, "kv_heads[0].b_v: expected 3 numbers, got 4"},
      {"non-finite kv weight", [](Scene& s) { s.kv_heads[1].w_v(2, 1) = NAN; },
       "kv_heads[1].w_v: expected finite numbers, got nan at [2][1]"},
      {"odd dims", [](Scene& s) { s.rope->dims = 3; }, "rope.dims: expected an even number of at least 2, got 3"},
      {"dims above d_k", [](Scene& s) { s.rope->dims = 6; }, "rope.dims: expected at most d_k = 4 (heads[0]), got 6"},
      {"theta zero", [](Scene& s) { s.rope->theta = 0; }, "rope.theta: expected a finite number above 0, got 0.000000"},
      {"theta inf", [](Scene& s) { s.rope->theta = INFINITY; }, "rope.theta: expected a finite number above 0, got inf"},
      {"query positions length", [](Scene& s) { s.query_positions = {0, 1}; },
       "query_positions: expected 5 positions (one per row), got 2"},
      {"key positions length", [](Scene& s) { s.key_positions = {0, 1, 2, 3, 4, 5}; },
       "key_positions: expected 5 positions (one per row), got 6"},
      {"negative position", [](Scene& s) { s.key_positions[2] = -4; }, "key_positions: expected positions of 0 or more, got -4"},
  };
  for (const auto& c : cases) {
    Scene s = groupedRopeScene(4, true);
    c.spoil(s);
    EXPECT_EQ(errorOf(s), c.message) << c.name;
  }
}

TEST(GroupedRope, JsonRoundTripsAndRefusesBadKeys) {
  const Scene s = groupedRopeScene(2, true);
  const Scene back = sceneFromJson(json::parse(formatJson(sceneToJson(s))));
  ASSERT_EQ(back.kv_heads.size(), 2u);
  ASSERT_EQ(back.numHeads(), 4);
  for (int h = 0; h < 4; ++h) {
    EXPECT_EQ(back.kvOf(h), h / 2);
    EXPECT_TRUE(back.wK(h) == s.wK(h) && back.wV(h) == s.wV(h) && *back.bK(h) == *s.bK(h)) << h;
    EXPECT_TRUE(back.heads[static_cast<std::size_t>(h)].w_q == s.heads[static_cast<std::size_t>(h)].w_q) << h;
  }
  ASSERT_TRUE(back.rope.has_value());
  EXPECT_EQ(back.rope->theta, 100.0);
  EXPECT_EQ(back.rope->dims, 2);
  EXPECT_EQ(back.query_positions, s.query_positions);
  EXPECT_EQ(back.key_positions, s.key_positions);
  EXPECT_EQ(formatJson(sceneToJson(back)), formatJson(sceneToJson(s)));

  const auto errorOfJson = [](json j) {
    try {
      sceneFromJson(j);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  json j = json::parse(formatJson(sceneToJson(s)));
  json bad = j;
  bad["heads"][1]["w_k"] = bad["kv_heads"][0]["w_k"];
  EXPECT_EQ(errorOfJson(bad), "heads[1].w_k: expected one of the keys w_q, b_q, kv, got an unknown key");
  bad = j;
  bad["heads"][2].erase("kv");
  EXPECT_EQ(errorOfJson(bad), "heads[2].kv: expected the index of its key/value head, got nothing (the key is missing)");
  bad = j;
  bad["rope"]["dims"] = 2.5;
  EXPECT_EQ(errorOfJson(bad), "rope.dims: expected an even whole number of at least 2, got number 2.5");
  bad = j;
  bad["query_positions"][0] = "x";
  EXPECT_EQ(errorOfJson(bad), "query_positions[0]: expected a whole number from 0, got string \"x\"");
}

// Lowering the count keeps each new group's first K/V; count == heads is classic MHA again (no kv_heads).
TEST(GroupedRope, KvHeadCountMergesAndSplits) {
  Scene s = groupedRopeScene(4, false);
  s.kv_heads.clear();
  for (HeadParams& p : s.heads) p.kv = 0;
  for (int h = 0; h < 4; ++h) {  // classic: head h has its own W_K = ones * (h + 1)
    s.heads[static_cast<std::size_t>(h)].w_k = Matrix::Constant(6, 4, static_cast<float>(h + 1));
    s.heads[static_cast<std::size_t>(h)].w_v = Matrix::Constant(6, 3, static_cast<float>(10 + h));
  }
  ASSERT_EQ(errorOf(s), "(no error)");
  setKvHeadCount(s, 2);
  ASSERT_EQ(errorOf(s), "(no error)");
  EXPECT_EQ(s.numKvHeads(), 2);
  const float want_k[] = {1, 1, 3, 3}, want_v[] = {10, 10, 12, 12};  // heads 1-2 share head 1's, 3-4 head 3's
  for (int h = 0; h < 4; ++h) {
    EXPECT_EQ(s.kvOf(h), h / 2);
    EXPECT_TRUE(s.wK(h) == Matrix::Constant(6, 4, want_k[h])) << h;
    EXPECT_TRUE(s.wV(h) == Matrix::Constant(6, 3, want_v[h])) << h;
  }
  setKvHeadCount(s, 1);  // multi-query: everyone reads head 1's
  for (int h = 0; h < 4; ++h) EXPECT_TRUE(s.wK(h) == Matrix::Constant(6, 4, 1.0f)) << h;
  setKvHeadCount(s, 4);  // split by copying: all still head 1's, now each its own, no kv_heads
  EXPECT_FALSE(s.grouped());
  ASSERT_EQ(errorOf(s), "(no error)");
  for (int h = 0; h < 4; ++h) EXPECT_TRUE(s.heads[static_cast<std::size_t>(h)].w_k == Matrix::Constant(6, 4, 1.0f)) << h;
  EXPECT_THROW(setKvHeadCount(s, 5), InputError);
}

// `attnscope compute` (CPU) on grouped scenes with rope against NumPy float64 from the formulas.
TEST(GroupedRope, ComputeMatchesNumpyReference) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const std::string dir = test::tempDir("attnscope_gqa");
  for (const bool extras : {false, true}) {
    const Scene s = groupedRopeScene(extras ? 2 : 4, extras);
    const std::string scene_path = dir + "/scene.json", ref_path = dir + "/ref.json";
    saveSceneFile(s, scene_path);
    const test::CommandRun ref = test::run("/usr/bin/python3 '" ATTNSCOPE_SOURCE_DIR
                                           "/tests/scene/gqa_rope_reference.py' '" + scene_path + "' '" + ref_path + "'");
    ASSERT_EQ(ref.status, 0) << ref.err;
    const test::CommandRun r = test::runAttnscope("compute '" + scene_path + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    const json got = json::parse(r.out), want = json::parse(test::slurp(ref_path));
    ASSERT_EQ(got["heads"].size(), 4u);
    double q = 0, k = 0, w = 0, o = 0;
    for (std::size_t h = 0; h < 4; ++h) {
      const std::string what = "head " + std::to_string(h + 1);
      // float32 projections and rotation against float64 (order-1 values, 6 terms): seen 7.3e-07
      q = test::worse(q, test::expectClose(test::jsonMatrix(got["heads"][h]["q"]), test::jsonMatrix(want["heads"][h]["q"]), 5e-6, what + " q"));
      k = test::worse(k, test::expectClose(test::jsonMatrix(got["heads"][h]["k"]), test::jsonMatrix(want["heads"][h]["k"]), 5e-6, what + " k"));
      // seen 2.0e-07
      w = test::worse(w, test::expectClose(test::jsonMatrix(got["heads"][h]["weights"]),
                                           test::jsonMatrix(want["heads"][h]["weights"]), 2e-6, what + " weights"));
    }
    // seen 9.5e-07
    o = test::expectClose(test::jsonMatrix(got["output"]), test::jsonMatrix(want["output"]), 4e-6, "output");
    std::cout << "[ gqa + rope" << (extras ? ", biases, positions, causal" : "") << " ] vs NumPy: q " << q << ", k "
              << k << ", weights " << w << ", output " << o << "\n";
  }
}

// The memory estimate counts K and V once per key/value head, as the result holds them. groupedRopeScene: 4 query
// heads (d_k 4, d_v 3) on 2 key/value heads, n_q = n_k = 5, d_model 6, W_O (12, 6). By hand, in floats:
//   per query head: q 5*4 = 20, scores and weights 2*5*5 = 50, row max and sum 2*5 = 10, output 5*3 = 15 -> 95;
//     4 heads -> 380 (180 without the maps);
//   per key/value head: k 5*4 = 20, v 5*3 = 15 -> 35; 2 of them -> 70 (a copy per query head would be 140);
//   concat 5*12 = 60; output 5*6 = 30.
//   With maps 380 + 70 + 60 + 30 = 540 floats = 2160 bytes; without 540 - 200 = 340 floats = 1360 bytes.
TEST(GroupedRope, EstimateAndResultHoldKeyValuesOncePerGroup) {
  const Scene s = groupedRopeScene(4, false);
  EXPECT_EQ(estimateResultBytes(s, true), 2160u);
  EXPECT_EQ(estimateResultBytes(s, false), 1360u);
  const Result r = CpuBackend().compute(s);
  ASSERT_EQ(r.heads.size(), 4u);
  EXPECT_TRUE(r.heads[1].sharesKeyValuesWith(r.heads[0]));
  EXPECT_TRUE(r.heads[3].sharesKeyValuesWith(r.heads[2]));
  EXPECT_FALSE(r.heads[2].sharesKeyValuesWith(r.heads[0]));
  EXPECT_EQ(r.heads[0].k().rows(), 5);
  EXPECT_EQ(r.heads[0].k().cols(), 4);
  EXPECT_EQ(r.heads[0].v().cols(), 3);
  // Recomputing one head of a copy writes fresh matrices (copy on write): the original's stay as they were.
  Result copy = r;
  Scene edited = s;
  edited.kv_heads[0].w_k(0, 0) += 1.0f;
  CpuBackend().recomputeHead(edited, 0, copy);
  EXPECT_TRUE(copy.heads[1].sharesKeyValuesWith(copy.heads[0]));
  EXPECT_FALSE(copy.heads[0].sharesKeyValuesWith(r.heads[0]));
  EXPECT_EQ(test::maxError(r.heads[0].k(), CpuBackend().compute(s).heads[0].k()), 0.0);
}
