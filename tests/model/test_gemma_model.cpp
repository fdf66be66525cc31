// Gemma checkpoints end to end (model_type gemma, gemma2, gemma3_text, and gemma3 whose text_config holds the text
// model): tiny random checkpoints that gemma_reference.py writes in the families' exact tensor names (model.*, or
// gemma3's language_model.model.* beside a vision tensor), run through `attnscope model`, every map and the rollout
// against its NumPy float64 forward written from transformers' modeling_gemma*.py, the final hidden state and each
// layer's scene through the engine; every switch (soft-capping, local and global layers, query_pre_attn_scalar,
// sandwich norms, q/k norms, the local rope base, the embedding scale's dtype) shown to change the maps; hostile
// configs and a tensor of the wrong shape: exit 2, one line naming the file and the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/model/model.h"
#include "compare.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace fs = std::filesystem;
namespace model = attnscope::model;

namespace {

// float32 against float64 on the same stored weights (d 48, head_dim 16, 2 or 3 layers, 30 to 150 tokens): the
// Llama family's tolerances (tests/model/test_llama_model.cpp) for the same arithmetic depth; the sandwich and
// q/k norms add RMSNorms whose float32 rounding (about d x 6e-8 relative) is far inside them. Seen over the cases
// below (printed by each): maps to 5.1e-6 (scores up to about 30 with q and k drawn 2.5x larger: float32 rounding
// of 3e-6 on a score moves a weight by at most w(1 - w) x 3e-6), rollout 4.1e-7, hidden 7.4e-6, scenes 4.8e-6.
constexpr double kWeightTol = 1e-5, kRolloutTol = 1e-6, kHiddenTol = 5e-5;

std::string checkpoint(const std::string& args) { return model_test::referenceCheckpoint("gemma_reference.py", args); }

using model_test::idsOf;
using model_test::worstMap;

const std::string kShort = "Hello there, attention heads!";  // BOS + 29 byte tokens
const std::string kLong =  // 150 bytes: past attendHead's 128-row block, far past the windows of 5
    "A sliding window lets each query see only its last few keys; this text is long enough that the window, the "
    "blocks and the causal mask all matter.";

struct Case {
  const char* args;
  const char* text;
};

class GemmaModel : public ::testing::TestWithParam<Case> {};

TEST_P(GemmaModel, MatchesNumPyReference) {
  const Case c = GetParam();
  const std::string dir = checkpoint(std::string(c.args) + " --text '" + c.text + "'");
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  // The maps kept, and past a 1 KiB maps limit (flash-style, every map recomputed from Q, K, m and l; a
  // soft-capped Gemma 2 keeps its maps whatever the limit).
  for (const char* limit : {"", "ATTNSCOPE_MAPS_LIMIT=1K "}) {
    const std::string out = model_test::tempDir();
    const model_test::CommandRun r = model_test::run(std::string(limit) + "'" + ATTNSCOPE_BINARY + "' model '" + dir +
                                                     "' --text '" + c.text + "' --out '" + out + "/r.json'");
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(model_test::slurp(out + "/r.json"));
    EXPECT_EQ(j["token_ids"], expected["ids"]);
    const double worst = model_test::writtenMapsError(j, expected);
    const double rollout = attnscope::test::expectClose(attnscope::test::jsonMatrix(j["rollout"]),
                                                        attnscope::test::jsonMatrix(expected["rollout"]), kRolloutTol,
                                                        "rollout");
    EXPECT_LE(worst, kWeightTol);
    std::printf("[ %s%s ] vs NumPy: maps %.2g, rollout %.2g\n", limit, c.args, worst, rollout);
  }

  // The engine itself: the final hidden state, and each layer as a scene on the CPU backend giving the same maps
  // (a soft-capped layer refused as a scene, naming the cap).
  const model::Model m = model::loadModel(dir);
  const std::vector<int> ids = idsOf(expected);
  EXPECT_EQ(m.tokenizer.encode(c.text), ids);
  const model::ForwardResult f = model::modelForward(m, ids, {.keep_ln1 = true});
  const double hidden = attnscope::test::expectClose(f.hidden, attnscope::test::jsonMatrix(expected["hidden"]),
                                                     kHiddenTol, "hidden");
  std::vector<std::string> labels(ids.size(), "t");
  attnscope::CpuBackend cpu;
  double scenes = 0;
  for (int l = 0; l < m.layout().n_layer; ++l) {
    if (m.architecture().attn_softcap > 0) {
      try {
        (void)model::modelLayerScene(m, f, l, labels, "");
        ADD_FAILURE() << "a soft-capped layer opened as a scene";
      } catch (const attnscope::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("attn_logit_softcapping 3"), std::string::npos) << e.what();
      }
      continue;
    }
    const attnscope::Scene s = model::modelLayerScene(m, f, l, labels, "");
    const attnscope::Result r = cpu.compute(s);
    for (int h = 0; h < s.numHeads(); ++h)
      scenes = attnscope::test::worse(
          scenes, attnscope::test::maxError(r.heads[static_cast<std::size_t>(h)].weights,
                                            attnscope::test::jsonMatrix(expected["weights"][static_cast<std::size_t>(l)]
                                                                                [static_cast<std::size_t>(h)]),
                                            {}, "scene"));
  }
  EXPECT_LE(scenes, kWeightTol);
  std::printf("[ %s ] vs NumPy: hidden %.2g, layer scenes %.2g\n", c.args, hidden, scenes);
}

INSTANTIATE_TEST_SUITE_P(
    Gemma, GemmaModel,
    ::testing::Values(
        // Gemma 1: head_dim 16 of hidden 48 / 4 heads, GQA 4:2, scores by head_dim^-1/2, (1 + w) norms, bf16 sqrt(48)
        Case{"--family gemma", kShort.c_str()},
        // Gemma 2 in BF16: soft cap 3, query_pre_attn_scalar 24, sandwich norms, layer 0 local (window 5), 151 tokens
        Case{"--family gemma2 --dtype BF16 --softcap 3", kLong.c_str()},
        // Gemma 2, F16, no soft cap, layer_types: global then local, sqrt(48) in float16, transformers 5's config
        Case{"--family gemma2 --dtype F16 --layer-types fs --torch-dtype float16 --v5", kLong.c_str()},
        // Gemma 3: q/k norms, 3 layers with pattern 3 (local, local, global), local base 10000, global 1e6 with
        // linear scaling 4
        Case{"--family gemma3_text --layers 3 --pattern 3 --rope-theta 1000000 --linear-scaling 4", kLong.c_str()},
        // Gemma 3's multimodal config (text_config, language_model.model.*), v5's per-layer-type rope_parameters,
        // layer_types sfs, MQA, float32 scale
        Case{"--family gemma3 --layers 3 --layer-types sfs --kv-heads 1 --rope-theta 50000 --local-theta 300 --v5 "
             "--torch-dtype float32",
             kLong.c_str()}));

// Each switch changes the maps: a pair of checkpoints with the same arrays (same seed; gemma_reference.py draws
// every array for every family) that differ in one switch give maps that the engine matches to NumPy within
// kWeightTol and that differ from each other by more than 10 x kWeightTol, so that a forward ignoring the switch
// would fail the match. Seen: soft cap 1, a local layer 1, query_pre_attn_scalar 0.41, sandwich norms 0.99,
// q/k norms 0.98, the local rope base 0.41, the embedding scale rounded to bf16 against float32 0.0079 (79x).
TEST(GemmaSwitches, EachChangesTheMaps) {
  // Gemma 2 with every switch off: no cap, both layers global, query_pre_attn_scalar = head_dim.
  const std::string g2 = "--family gemma2 --softcap none --layer-types ff --scalar 16";
  const std::string g3 = "--family gemma3_text --layer-types sf --scalar 16";
  struct Pair {
    std::string what, from, to;
  };
  const std::vector<Pair> pairs = {
      {"soft-capping", g2, g2 + " --softcap 3"},
      {"a local layer", g2, g2 + " --layer-types sf"},
      {"query_pre_attn_scalar", g2, g2 + " --scalar 24"},
      {"sandwich norms", "--family gemma", g2},  // Gemma: head_dim^-1/2 = 16^-1/2, no windows, no sandwich
      {"q/k norms", g2 + " --layer-types sf", g3 + " --layer-types sf"},  // same windows, local base 10000 = theta
      {"the local rope base", g3, g3 + " --local-theta 100"},
      {"the embedding scale's dtype", g2, g2 + " --torch-dtype float32"},
  };
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.what);
    json maps[2];
    double matched = 0;
    model::ForwardResult forwards[2];
    for (int k = 0; k < 2; ++k) {
      const std::string dir = checkpoint((k ? p.to : p.from) + " --text '" + kLong + "'");
      maps[k] = json::parse(model_test::slurp(dir + "/expected.json"));
      forwards[k] = model::modelForward(model::loadModel(dir), idsOf(maps[k]));
      matched = std::max(matched, worstMap(forwards[k], maps[k]));
    }
    const double moved = worstMap(forwards[1], maps[0]);
    EXPECT_LE(matched, kWeightTol);
    EXPECT_GT(moved, 10 * kWeightTol);
    std::printf("[ %s ] vs its NumPy %.2g; vs the other maps %.2g\n", p.what.c_str(), matched, moved);
  }
}

// --- hostile checkpoints ---------------------------------------------------------------------------------

int lineCount(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

void expectRefused(const std::string& dir, const std::vector<std::string>& needles) {
  const std::string out = model_test::tempDir() + "/out.json";
  const model_test::CommandRun r =
      model_test::run(std::string("'") + ATTNSCOPE_BINARY + "' model '" + dir + "' --text 'hi' --out '" + out + "'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lineCount(r.err), 1) << r.err;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' in " << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(GemmaModelHostile, ConfigFields) {
  static const std::string original = checkpoint("--family gemma2 --softcap 3");
  struct Bad {
    const char* what;
    std::function<void(json&)> edit;
    std::vector<std::string> needles;
  };
  const std::vector<Bad> cases = {
      {"query_pre_attn_scalar 0", [](json& j) { j["query_pre_attn_scalar"] = 0; },
       {"config.json: query_pre_attn_scalar", "a number in (0, ", "0"}},
      {"query_pre_attn_scalar negative", [](json& j) { j["query_pre_attn_scalar"] = -24; },
       {"config.json: query_pre_attn_scalar", "-24"}},
      {"negative soft cap", [](json& j) { j["attn_logit_softcapping"] = -5.0; },
       {"config.json: attn_logit_softcapping", "a number in (0, ", "-5"}},
      {"zero final soft cap", [](json& j) { j["final_logit_softcapping"] = 0; },
       {"config.json: final_logit_softcapping", "a number in (0, "}},
      {"layer_types too long",
       [](json& j) { j["layer_types"] = {"sliding_attention", "full_attention", "full_attention"}; },
       {"config.json: layer_types", "num_hidden_layers (2)", "3 entries"}},
      {"layer_types entry", [](json& j) { j["layer_types"] = {"sliding_attention", "global"}; },
       {"config.json: layer_types[1]", "\"sliding_attention\" or \"full_attention\"", "global"}},
      {"sliding_window 0", [](json& j) { j["sliding_window"] = 0; }, {"config.json: sliding_window", "from 1"}},
      {"odd head_dim", [](json& j) { j["head_dim"] = 15; }, {"config.json: head_dim", "an even number", "15"}},
      {"kv heads not dividing", [](json& j) { j["num_key_value_heads"] = 3; },
       {"config.json: num_key_value_heads", "a divisor of num_attention_heads (4)", "3"}},
      {"relu", [](json& j) { j["hidden_activation"] = "relu"; }, {"config.json: hidden_activation", "relu"}},
      {"dtype", [](json& j) { j["torch_dtype"] = "int8"; }, {"config.json: torch_dtype", "bfloat16", "int8"}},
      {"zero eps", [](json& j) { j["rms_norm_eps"] = 0; }, {"config.json: rms_norm_eps", "got number 0"}},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.what);
    const std::string dir = model_test::tempDir() + "/ck";
    fs::copy(original, dir);
    json j = json::parse(model_test::slurp(dir + "/config.json"));
    b.edit(j);
    model_test::spit(dir + "/config.json", j.dump());
    std::vector<std::string> needles = b.needles;
    needles.push_back(dir + "/config.json");
    expectRefused(dir, needles);
  }
}

TEST(GemmaModelHostile, Gemma3Fields) {
  static const std::string original = checkpoint("--family gemma3 --v5");
  const std::vector<std::pair<std::function<void(json&)>, std::vector<std::string>>> cases = {
      {[](json& j) { j.erase("text_config"); }, {"config.json: text_config", "an object", "nothing"}},
      {[](json& j) { j["text_config"]["rope_parameters"]["sliding_attention"]["rope_type"] = "linear"; },
       {"config.json: text_config: rope_parameters.sliding_attention.rope_type", "default", "linear"}},
      {[](json& j) { j["text_config"]["layer_types"] = {"full_attention"}; },
       {"config.json: text_config: layer_types", "num_hidden_layers (2)", "1 entries"}},
  };
  for (const auto& [edit, needles] : cases) {
    const std::string dir = model_test::tempDir() + "/ck";
    fs::copy(original, dir);
    json j = json::parse(model_test::slurp(dir + "/config.json"));
    edit(j);
    model_test::spit(dir + "/config.json", j.dump());
    std::vector<std::string> all = needles;
    all.push_back(dir + "/config.json");
    expectRefused(dir, all);
  }
}

TEST(GemmaModelHostile, TensorOfTheWrongShape) {
  const std::string dir = checkpoint("--family gemma2 --bad-shape");  // q_proj with 3 heads' rows, not 4
  expectRefused(dir, {dir + "/model.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight' shape",
                      "expected [64, 48]", "num_attention_heads 4 x head_dim 16", "got [48, 48]"});
}

}  // namespace
