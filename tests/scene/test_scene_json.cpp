// Scene files: save then load gives back the identical scene (float32 bit for bit), and every malformed file
// gives an error naming the JSON field, the expected and the actual. Also the Result as JSON.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>

#include "attnscope/atomic_file.h"
#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/scene/presets.h"
#include "attnscope/export/result_json.h"
#include "attnscope/scene/scene_json.h"

using namespace attnscope;
using json = nlohmann::json;

namespace {

// Bit-for-bit equality of float data (tells -0 from 0, and 0.1f from the float nearest 0.1 in double).
template <typename M>
bool sameBits(const M& a, const M& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 ||
          std::memcmp(a.data(), b.data(), sizeof(typename M::Scalar) * static_cast<std::size_t>(a.size())) == 0);
}
template <typename V>
bool sameOptional(const std::optional<V>& a, const std::optional<V>& b) {
  return a.has_value() == b.has_value() && (!a || sameBits(*a, *b));
}

void expectSameScene(const Scene& a, const Scene& b) {
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.d_model, b.d_model);
  EXPECT_EQ(a.query_tokens, b.query_tokens);
  EXPECT_EQ(a.key_tokens, b.key_tokens);
  EXPECT_TRUE(sameBits(a.query, b.query));
  EXPECT_TRUE(sameOptional(a.key, b.key));
  EXPECT_TRUE(sameOptional(a.value, b.value));
  ASSERT_EQ(a.heads.size(), b.heads.size());
  for (std::size_t i = 0; i < a.heads.size(); ++i) {
    SCOPED_TRACE("head " + std::to_string(i));
    EXPECT_TRUE(sameBits(a.heads[i].w_q, b.heads[i].w_q));
    EXPECT_TRUE(sameBits(a.heads[i].w_k, b.heads[i].w_k));
    EXPECT_TRUE(sameBits(a.heads[i].w_v, b.heads[i].w_v));
    EXPECT_TRUE(sameOptional(a.heads[i].b_q, b.heads[i].b_q));
    EXPECT_TRUE(sameOptional(a.heads[i].b_k, b.heads[i].b_k));
    EXPECT_TRUE(sameOptional(a.heads[i].b_v, b.heads[i].b_v));
  }
  EXPECT_TRUE(sameOptional(a.w_o, b.w_o));
  EXPECT_TRUE(sameOptional(a.b_o, b.b_o));
  EXPECT_EQ(a.mask, b.mask);
  EXPECT_TRUE(sameBits(a.explicit_mask, b.explicit_mask));
  EXPECT_EQ(a.key_padding, b.key_padding);
  EXPECT_EQ(a.scale.has_value(), b.scale.has_value());
  if (a.scale && b.scale) {
    EXPECT_EQ(std::memcmp(&*a.scale, &*b.scale, sizeof(float)), 0);
  }
}

// A fresh folder for this test's files.
std::string tempDir() {
  std::string pattern = ::testing::TempDir() + "attnscope_json_XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

// The worked example's JSON with one change, as text.
json example() { return json::parse(formatJson(sceneToJson(workedExampleScene()))); }

std::string errorOf(const json& j) {
  try {
    sceneFromJson(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string errorOfFile(const std::string& text) {
  const std::string path = tempDir() + "/scene.json";
  writeFileAtomically(path, text);
  try {
    loadSceneFile(path);
  } catch (const InputError& e) {
    const std::string what = e.what();
    // The path is this test's temporary file: replace it for a stable message.
    return what.rfind(path, 0) == 0 ? "PATH" + what.substr(path.size()) : what;
  }
  return "(no error)";
}

}  // namespace

TEST(SceneJson, SaveThenLoadGivesTheIdenticalScene) {
  RandomSceneSpec spec;
  spec.n = 5;
  spec.heads = 3;
  spec.d_model = 6;
  spec.d_k = 4;
  spec.d_v = 3;
  spec.seed = 7;
  Scene s = makeRandomScene(spec);
  s.description = "round trip: \"quotes\", unicode \u00e9, newline\nhere";
  s.query_tokens = {"The", "cat", "\"sat\"", "on", "mat"};
  s.key = s.query * 0.5f;
  s.value = s.query * -0.25f;
  s.key_tokens = {"k1", "k2", "k3", "k4", "k5"};
  // Floats that a careless writer would lose: 0.1f (needs 9 digits), -0, the smallest denormal, the largest
  // float, a value just above 1, and values below double's shortest-form ambiguity.
  s.query(0, 0) = 0.1f;
  s.query(0, 1) = -0.0f;
  s.query(0, 2) = std::numeric_limits<float>::denorm_min();
  s.query(0, 3) = std::numeric_limits<float>::max();
  s.query(0, 4) = std::nextafter(1.0f, 2.0f);
  s.query(0, 5) = 16777217.0f;  // rounds to 16777216 as float: an integer written as an integer
  s.heads[0].b_q = RowVector::Constant(4, 1.0f / 3.0f);
  s.heads[1].b_k = RowVector::Constant(4, -2.5e-20f);
  s.heads[2].b_v = RowVector::Constant(3, 7e30f);
  s.b_o = RowVector::LinSpaced(6, -1.0f, 1.0f);
  s.mask = MaskKind::Explicit;
  s.explicit_mask = MaskMatrix::Ones(5, 5);
  s.explicit_mask(0, 4) = 0;
  s.explicit_mask(3, 1) = 0;
  s.key_padding = {0, 0, 1, 0, 0};
  s.scale = 0.3f;

  const std::string path = tempDir() + "/scene.json";
  saveSceneFile(s, path);
  const Scene loaded = loadSceneFile(path);
  expectSameScene(s, loaded);

  // And a causal scene without the optional parts.
  spec.causal = true;
  spec.with_w_o = false;
  const Scene causal = makeRandomScene(spec);
  saveSceneFile(causal, path);
  expectSameScene(causal, loadSceneFile(path));
}

TEST(SceneJson, WorkedExampleRoundTripsAndWritesShortNumbers) {
  const Scene s = workedExampleScene();
  const std::string text = formatJson(sceneToJson(s));
  expectSameScene(s, sceneFromJson(json::parse(text)));
  // Integral values are written as integers, a matrix one row per line.
  EXPECT_NE(text.find("\"query\": [\n    [1, 0, 1, 0],\n    [0, 1, 0, 1],\n    [1, 1, 0, 0]\n  ]"), std::string::npos)
      << text;
  // 0.1f is written as 0.1, and reads back as 0.1f.
  Scene t = s;
  t.query(0, 0) = 0.1f;
  EXPECT_NE(formatJson(sceneToJson(t)).find("[0.1, 0, 1, 0]"), std::string::npos);
}

TEST(SceneJson, Float64InTheFileIsRoundedToFloat32) {
  json j = example();
  j["query"][0][0] = 0.1;  // double 0.1
  const Scene s = sceneFromJson(j);
  EXPECT_EQ(s.query(0, 0), 0.1f);
}

TEST(SceneJson, EveryMalformedValueIsNamedByItsPath) {
  struct Case {
    const char* name;
    std::function<void(json&)> spoil;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"not an object",
       [](json& j) {
         j = json::array({1, 2});
       },
       "scene: expected a JSON object with \"format\": \"attnscope-scene\", got array [1,2]"},
      {"wrong format", [](json& j) { j["format"] = "other"; },
       "format: expected \"attnscope-scene\", got string \"other\""},
      {"missing format", [](json& j) { j.erase("format"); },
       "format: expected \"attnscope-scene\", got nothing (the key is missing)"},
      {"wrong version", [](json& j) { j["version"] = 2; },
       "version: expected 1 (the only version this program reads), got number 2"},
      {"unknown key", [](json& j) { j["qeury"] = 1; },
       "qeury: expected one of the keys format, version, description, d_model, query_tokens, key_tokens, query, "
       "key, value, heads, w_o, b_o, mask, key_padding, scale, kv_heads, rope, query_positions, key_positions, q_norm, k_norm, got an unknown key"},
      {"unknown head key", [](json& j) { j["heads"][1]["w_x"] = 1; },
       "heads[1].w_x: expected one of the keys w_q, w_k, w_v, b_q, b_k, b_v, got an unknown key"},
      {"d_model fraction", [](json& j) { j["d_model"] = 4.5; }, "d_model: expected a positive integer, got number 4.5"},
      {"d_model missing", [](json& j) { j.erase("d_model"); },
       "d_model: expected a positive integer, got nothing (the key is missing)"},
      {"short query row",
       [](json& j) {
         j["query"][2] = {1, 1, 0};
       },
       "query[2]: expected 4 numbers, got 3"},
      {"query row not a list", [](json& j) { j["query"][1] = 5; },
       "query[1]: expected a row of 4 numbers, got number 5"},
      {"string in query", [](json& j) { j["query"][1][2] = "abc"; },
       "query[1][2]: expected a number, got string \"abc\""},
      {"null in query", [](json& j) { j["query"][0][0] = nullptr; }, "query[0][0]: expected a number, got null"},
      {"beyond float32", [](json& j) { j["query"][0][1] = 1e39; },
       "query[0][1]: expected a finite number within float32 range (magnitude below 3.4e38), got 1e+39"},
      {"non-finite (programmatic)", [](json& j) { j["heads"][0]["w_q"][0][0] = INFINITY; },
       "heads[0].w_q[0][0]: expected a finite number within float32 range (magnitude below 3.4e38), got inf"},
      {"ragged w_k",
       [](json& j) {
         j["heads"][1]["w_k"][2] = {0, 1, 1};
       },
       "heads[1].w_k[2]: expected 2 numbers (as in row 0), got 3"},
      {"w_k shape", [](json& j) { j["heads"][1]["w_k"] = json::parse("[[0,0,0],[0,0,0],[0,1,0],[1,0,0]]"); },
       "heads[1].w_k: expected 4 x 2, got 4 x 3"},
      {"w_v missing", [](json& j) { j["heads"][0].erase("w_v"); },
       "heads[0].w_v: expected a d_model x d_v matrix, got nothing (the key is missing)"},
      {"head not an object", [](json& j) { j["heads"][1] = 3; },
       "heads[1]: expected a head object with w_q, w_k, w_v, got number 3"},
      {"no heads", [](json& j) { j["heads"] = json::array(); }, "heads: expected 1 to 64 heads, got 0"},
      {"bias length",
       [](json& j) {
         j["heads"][0]["b_q"] = {1, 2, 3};
       },
       "heads[0].b_q: expected 2 numbers, got 3"},
      {"bias string",
       [](json& j) {
         j["heads"][0]["b_v"] = {1, "x"};
       },
       "heads[0].b_v[1]: expected a number, got string \"x\""},
      {"w_o shape", [](json& j) { j["w_o"] = json::parse("[[1,0,0,0]]"); }, "w_o: expected 4 x 4, got 1 x 4"},
      {"tokens count",
       [](json& j) {
         j["query_tokens"] = {"a", "b"};
       },
       "query_tokens: expected 3 tokens (one per query row), got 2"},
      {"token not a string", [](json& j) { j["query_tokens"][1] = 7; },
       "query_tokens[1]: expected a string, got number 7"},
      {"empty sequence",
       [](json& j) {
         j["query"] = json::array();
         j["query_tokens"] = json::array();
       },
       "query: expected at least 1 row (an empty sequence has nothing to attend), got 0 rows"},
      {"mask word", [](json& j) { j["mask"] = "upper"; },
       "mask: expected \"none\", \"causal\" or a list of rows of 0/1 (1 = may attend), got string \"upper\""},
      {"mask shape", [](json& j) { j["mask"] = json::parse("[[1,1,1],[1,1,1]]"); }, "mask: expected 3 x 3, got 2 x 3"},
      {"mask value", [](json& j) { j["mask"] = json::parse("[[1,1,1],[1,2,1],[1,1,1]]"); },
       "mask[1][1]: expected 0 or 1 (or false/true), got number 2"},
      {"key_padding length",
       [](json& j) {
         j["key_padding"] = {0, 1};
       },
       "key_padding: expected 3 flags (one per key), got 2"},
      {"key_padding value",
       [](json& j) {
         j["key_padding"] = {0, 1, 3};
       },
       "key_padding[2]: expected 0 or 1 (or false/true), got number 3"},
      {"scale negative", [](json& j) { j["scale"] = -1; }, "scale: expected a finite number above 0, got -1.000000"},
      {"key width", [](json& j) { j["key"] = json::parse("[[1,2]]"); }, "key[0]: expected 4 numbers, got 2"},
      {"value rows", [](json& j) { j["value"] = json::parse("[[1,2,3,4]]"); }, "value: expected 3 x 4, got 1 x 4"},
  };
  for (const Case& c : cases) {
    json j = example();
    c.spoil(j);
    EXPECT_EQ(errorOf(j), c.message) << c.name;
  }
  // The unspoilt example loads.
  EXPECT_EQ(errorOf(example()), "(no error)");
}

TEST(SceneJson, FileErrorsNameThePathAndWhere) {
  EXPECT_EQ(errorOfFile("{\n  \"format\": \"attnscope-scene\",\n  \"version\": 1,,\n}"),
            "PATH: expected valid JSON, got a syntax error at line 3, column 16: syntax error while parsing object "
            "key - unexpected ','; expected string literal, near 'ne\",\\n  \"version\": 1,,\\n}'");
  // nlohmann refuses 1e999 while parsing (it would be inf): named by line and column.
  EXPECT_EQ(errorOfFile("{\"format\": \"attnscope-scene\",\n \"query\": [[1e999]]}"),
            "PATH: expected finite numbers, got '1e999' at line 2, column 13 (too large: not finite)");
  try {
    loadSceneFile("/nonexistent/attnscope/scene.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "scene file: expected a readable file of at most 256.0 MiB, got '/nonexistent/attnscope/scene.json' (No such file or directory)");
  }
}

TEST(SceneJson, ResultJsonWritesMaskedScoresAsNull) {
  Scene s = workedExampleScene();
  s.mask = MaskKind::Causal;
  const Result r = CpuBackend(1).compute(s);
  const json j = json::parse(formatJson(resultToJson(s, r)));
  // Causal: query 1 sees key 1 only, so scores row 1 = [0, null, null] (Q1 row 1 . K1 row 1 = 0) and weights
  // row 1 = [1, 0, 0].
  EXPECT_EQ(j["heads"][0]["scores"][0], json::parse("[0, null, null]"));
  EXPECT_EQ(j["heads"][0]["weights"][0], json::parse("[1, 0, 0]"));
  EXPECT_TRUE(j["heads"][1]["scores"][2][2].is_number());
  for (const char* key : {"tokens", "heads", "concat", "output", "similarity", "warnings"})
    EXPECT_TRUE(j.contains(key)) << key;
  for (const char* key : {"q", "k", "v", "scores", "weights", "output", "stats"})
    EXPECT_TRUE(j["heads"][1].contains(key)) << key;
}

TEST(SceneJson, TheDocsExampleIsAValidScene) {
  // The first ```json block of docs/formats.md ("Scene files") documents every key; it must stay a scene this
  // program reads.
  std::ifstream in(ATTNSCOPE_SOURCE_DIR "/docs/formats.md");
  ASSERT_TRUE(in) << "docs/formats.md";
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t start = readme.find("```json\n");
  ASSERT_NE(start, std::string::npos);
  const std::size_t end = readme.find("```", start + 8);
  const Scene s = sceneFromJson(json::parse(readme.substr(start + 8, end - start - 8)));
  // Cross-attention with 2 keys, a causal mask and the second key padded, as docs/formats.md describes.
  EXPECT_EQ(s.nQ(), 3);
  EXPECT_EQ(s.nK(), 2);
  EXPECT_EQ(s.mask, MaskKind::Causal);
  EXPECT_EQ(s.key_padding, (std::vector<std::uint8_t>{0, 1}));
  EXPECT_EQ(s.scale, 0.5f);
}
