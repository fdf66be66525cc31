// The scene keys that make a Llama 3.1 or Qwen3 layer exact as a scene: rope "scaling" (linear, llama3) and
// q_norm / k_norm (RMSNorm over d_k before the rotation). Validation messages, the JSON round trip, and
// `attnscope compute` against the independent NumPy float64 reference (gqa_rope_reference.py).
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "attnscope/error.h"
#include "attnscope/scene/scene.h"
#include "attnscope/scene/scene_edit.h"
#include "attnscope/scene/scene_json.h"
#include "command_support.h"
#include "compare.h"

using namespace attnscope;
using json = nlohmann::json;

namespace {

// 4 query heads (d_k 8) over 2 kv heads, d_model 6, 7 tokens at positions far apart (so that llama3's three
// bands all matter: with original context 16 and factors 1 / 4, wavelengths over 16 are scaled, under 4 kept).
Scene normedScene() {
  Scene s;
  s.d_model = 6;
  s.query_tokens = {"a", "b", "c", "d", "e", "f", "g"};
  s.query = randomMatrix(7, 6, 1.0f, 3);
  for (int g = 0; g < 2; ++g)
    s.kv_heads.push_back({randomMatrix(6, 8, 0.8f, 10 + g), randomMatrix(6, 3, 0.8f, 20 + g),
                          RowVector(randomMatrix(1, 8, 0.5f, 30 + g)), std::nullopt});
  for (int h = 0; h < 4; ++h) {
    HeadParams p;
    p.w_q = randomMatrix(6, 8, 0.8f, 50 + h);
    p.b_q = RowVector(randomMatrix(1, 8, 0.5f, 60 + h));
    p.kv = h / 2;
    s.heads.push_back(p);
  }
  s.w_o = randomMatrix(12, 6, 0.4f, 70);
  RopeScaling scaling;
  scaling.type = RopeScaling::Type::Llama3;
  scaling.factor = 8;
  scaling.low_freq_factor = 1;
  scaling.high_freq_factor = 4;
  scaling.original_max_position_embeddings = 16;
  s.rope = SceneRope{10000.0, 8, scaling};
  s.query_positions = s.key_positions = {0, 3, 9, 40, 41, 200, 1000};
  s.q_norm = SceneHeadNorm{RowVector(randomMatrix(1, 8, 0.5f, 80).array() + 1.0f), 1e-6};
  s.k_norm = SceneHeadNorm{RowVector(randomMatrix(1, 8, 0.5f, 81).array() + 1.0f), 1e-5};
  s.mask = MaskKind::Causal;
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

std::string errorOfJson(const json& j) {
  try {
    sceneFromJson(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(SceneQkNorm, NewKeysAreValidatedWithOneLine) {
  EXPECT_EQ(errorOf(normedScene()), "(no error)");
  const struct {
    const char* name;
    std::function<void(Scene&)> spoil;
    std::string message;
  } cases[] = {
      {"q_norm length", [](Scene& s) { s.q_norm->weight = RowVector::Ones(7); },
       "q_norm.weight: expected 8 numbers (d_k of heads[0]), got 7"},
      {"k_norm NaN", [](Scene& s) { s.k_norm->weight(2) = NAN; }, "k_norm.weight: expected finite numbers, got a NaN or infinity"},
      {"eps zero", [](Scene& s) { s.q_norm->eps = 0; }, "q_norm.eps: expected a finite number above 0, got 0.000000"},
      {"factor", [](Scene& s) { s.rope->scaling.factor = -1; }, "rope.scaling.factor: expected a finite number above 0, got -1.000000"},
      {"high below low", [](Scene& s) { s.rope->scaling.high_freq_factor = 0.5; },
       "rope.scaling.high_freq_factor: expected a finite number above low_freq_factor (1.000000), got 0.500000"},
      {"original context", [](Scene& s) { s.rope->scaling.original_max_position_embeddings = 0; },
       "rope.scaling.original_max_position_embeddings: expected at least 1, got 0"},
  };
  for (const auto& c : cases) {
    Scene s = normedScene();
    c.spoil(s);
    EXPECT_EQ(errorOf(s), c.message) << c.name;
  }
}

TEST(SceneQkNorm, JsonRoundTripsAndRefusesBadKeys) {
  const Scene s = normedScene();
  const json j = json::parse(formatJson(sceneToJson(s)));
  EXPECT_EQ(j["rope"]["scaling"]["rope_type"], "llama3");
  EXPECT_EQ(j["rope"]["scaling"]["original_max_position_embeddings"], 16);
  EXPECT_EQ(j["k_norm"]["eps"], 1e-5);
  const Scene back = sceneFromJson(j);
  ASSERT_TRUE(back.rope && back.q_norm && back.k_norm);
  EXPECT_EQ(back.rope->scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(back.rope->scaling.factor, 8.0);
  EXPECT_EQ(back.rope->scaling.high_freq_factor, 4.0);
  EXPECT_TRUE(back.q_norm->weight == s.q_norm->weight);
  EXPECT_TRUE(back.k_norm->weight == s.k_norm->weight);
  EXPECT_EQ(back.k_norm->eps, 1e-5);
  EXPECT_EQ(formatJson(sceneToJson(back)), formatJson(sceneToJson(s)));

  json bad = j;
  bad["rope"]["scaling"]["rope_type"] = "yarn";
  EXPECT_EQ(errorOfJson(bad), "rope.scaling.rope_type: expected \"linear\" or \"llama3\", got string \"yarn\"");
  bad = j;
  bad["rope"]["scaling"]["rope_type"] = "linear";
  EXPECT_EQ(errorOfJson(bad),
            "rope.scaling.low_freq_factor: expected no such key with rope_type \"linear\", got number 1.0");
  bad = j;
  bad["q_norm"]["scale"] = 1;
  EXPECT_EQ(errorOfJson(bad), "q_norm.scale: expected one of the keys weight, eps, got an unknown key");
  bad = j;
  bad["k_norm"].erase("weight");
  EXPECT_EQ(errorOfJson(bad), "k_norm.weight: expected a list of d_k numbers, got nothing (the key is missing)");
}

// `attnscope compute` (CPU) with q_norm, k_norm and llama3 (then linear) scaling against NumPy float64. Seen:
// q/k 8.3e-7, weights 1.7e-7, output 1.3e-6 (tolerances 5e-6, 2e-6, 4e-6, as GroupedRope's).
TEST(SceneQkNorm, ComputeMatchesNumpyReference) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const std::string dir = test::tempDir("attnscope_qknorm");
  for (const bool linear : {false, true}) {
    Scene s = normedScene();
    if (linear) s.rope->scaling = RopeScaling{RopeScaling::Type::Linear, 4.0};
    const std::string scene_path = dir + "/scene.json", ref_path = dir + "/ref.json";
    saveSceneFile(s, scene_path);
    const test::CommandRun ref = test::run("/usr/bin/python3 '" ATTNSCOPE_SOURCE_DIR
                                           "/tests/scene/gqa_rope_reference.py' '" + scene_path + "' '" + ref_path + "'");
    ASSERT_EQ(ref.status, 0) << ref.err;
    const test::CommandRun r = test::runAttnscope("compute '" + scene_path + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    const json got = json::parse(r.out), want = json::parse(test::slurp(ref_path));
    ASSERT_EQ(got["heads"].size(), 4u);
    double qk = 0, w = 0;
    for (std::size_t h = 0; h < 4; ++h) {
      const std::string what = "head " + std::to_string(h + 1);
      qk = test::worse(qk, test::expectClose(test::jsonMatrix(got["heads"][h]["q"]), test::jsonMatrix(want["heads"][h]["q"]), 5e-6, what + " q"));
      qk = test::worse(qk, test::expectClose(test::jsonMatrix(got["heads"][h]["k"]), test::jsonMatrix(want["heads"][h]["k"]), 5e-6, what + " k"));
      w = test::worse(w, test::expectClose(test::jsonMatrix(got["heads"][h]["weights"]),
                                           test::jsonMatrix(want["heads"][h]["weights"]), 2e-6, what + " weights"));
    }
    const double o = test::expectClose(test::jsonMatrix(got["output"]), test::jsonMatrix(want["output"]), 4e-6, "output");
    std::cout << "[ q/k norm + " << (linear ? "linear" : "llama3") << " scaling ] vs NumPy: q/k " << qk << ", weights "
              << w << ", output " << o << "\n";
  }
}
