// Llama, Mistral, Qwen2 and Qwen3 checkpoints end to end: tiny random checkpoints that llama_reference.py
// writes in each family's own tensor names and layouts (sharded, BF16, F16, GQA with 2 query heads per kv head,
// Qwen3's head_dim != hidden / heads, llama3 and linear rope_scaling, sliding windows shorter than the text),
// run through `attnscope model`, every map and the rollout against its NumPy float64 forward written from the
// transformers definitions, the final hidden state through the engine; and hostile checkpoints: exit 2, one
// line naming the file and the field, no output.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <variant>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/model/family_configs.h"
#include "attnscope/model/model.h"
#include "compare.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace fs = std::filesystem;
namespace model = attnscope::model;

namespace {

// float32 against float64 on the same stored weights (d 32, 2 layers, 30 to 150 tokens). Seen over the cases
// below: maps 3.2e-6 (qwen2, F16), rollout 1.9e-7, hidden 5.6e-6 (printed by each case).
constexpr double kWeightTol = 1e-5, kRolloutTol = 1e-6, kHiddenTol = 5e-5;

model_test::CommandRun attnscope(const std::string& args) {
  return model_test::run(std::string("'") + ATTNSCOPE_BINARY + "' " + args);
}

std::string checkpoint(const std::string& args) {
  const std::string dir = model_test::tempDir() + "/ckpt";
  const model_test::CommandRun r = model_test::run(std::string(model_test::kPython) + " '" + ATTNSCOPE_SOURCE_DIR +
                                                   "/tests/model/llama_reference.py' '" + dir + "' " + args);
  if (r.status != 0) throw std::runtime_error("llama_reference.py failed: " + r.err);
  return dir;
}

struct Case {
  const char* args;
  const char* text;
};

const std::string kShort = "Hello there, attention heads!";  // BOS + 29 byte tokens
const std::string kLong =  // 150 bytes: past attendHead's 128-row block, far past the windows
    "A sliding window lets each query see only its last few keys; this text is long enough that the window, the "
    "blocks and the causal mask all matter.";

class LlamaModel : public ::testing::TestWithParam<Case> {};

TEST_P(LlamaModel, MatchesNumPyReference) {
  const Case c = GetParam();
  const std::string dir = checkpoint(std::string(c.args) + " --text '" + c.text + "'");
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  // Twice: the maps kept, and past a 1 KiB maps limit (attention flash-style, every map and the rollout
  // recomputed from Q, K and the row statistics as the outputs read them): the same NumPy numbers.
  for (const char* limit : {"", "ATTNSCOPE_MAPS_LIMIT=1K "}) {
    const std::string out = model_test::tempDir();
    const model_test::CommandRun r =
        model_test::run(std::string(limit) + "'" + ATTNSCOPE_BINARY + "' model '" + dir + "' --text '" + c.text +
                        "' --out '" + out + "/r.json' --grid-out '" + out + "/grid.png' --rollout-out '" + out +
                        "/rollout.svg'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::file_size(out + "/grid.png") > 0 && fs::file_size(out + "/rollout.svg") > 0);
    const json j = json::parse(model_test::slurp(out + "/r.json"));
    EXPECT_EQ(j["token_ids"], expected["ids"]);  // BOS, then one token per byte (the reference's own tokenizer)
    const double worst = model_test::writtenMapsError(j, expected);
    for (std::size_t l = 0; l < j["layers"].size(); ++l)
      for (std::size_t h = 0; h < expected["kv_head"].size(); ++h)
        EXPECT_EQ(j["layers"][l]["kv_head"][h], expected["kv_head"][h].get<int>() + 1);  // counted from 1
    const double rollout = attnscope::test::expectClose(attnscope::test::jsonMatrix(j["rollout"]),
                                                        attnscope::test::jsonMatrix(expected["rollout"]), kRolloutTol,
                                                        "rollout");
    EXPECT_LE(worst, kWeightTol);
    std::printf("[ %s%s ] vs NumPy: maps %.2g, rollout %.2g\n", limit, c.args, worst, rollout);
  }

  // The final hidden state through the engine itself.
  const model::Model m = model::loadModel(dir);
  std::vector<int> ids;
  for (const json& id : expected["ids"]) ids.push_back(id.get<int>());
  EXPECT_EQ(m.tokenizer.encode(c.text), ids);
  const model::ForwardResult f = model::modelForward(m, ids);
  const double hidden = attnscope::test::expectClose(f.hidden, attnscope::test::jsonMatrix(expected["hidden"]),
                                                     kHiddenTol, "hidden");
  std::printf("[ %s ] vs NumPy: hidden %.2g\n", c.args, hidden);
}

INSTANTIATE_TEST_SUITE_P(
    Families, LlamaModel,
    ::testing::Values(
        // sharded into 3 files, GQA 4 query heads on 2 kv heads, Llama 3.1's rope scaling, q/k/v/o biases
        Case{"--family llama --shards 3 --rope-scaling llama3 --attention-bias --rope-theta 500000", kShort.c_str()},
        // BF16, a sliding window of 5 over 151 tokens, MQA (4 query heads on 1 kv head)
        Case{"--family mistral --dtype BF16 --window 5 --kv-heads 1 --positions 256", kLong.c_str()},
        // F16, Qwen2's q/k/v biases, tied embeddings, linear rope scaling, a window of 7 from layer 2 on
        Case{"--family qwen2 --dtype F16 --tie --rope-scaling linear --window 7 --layers 3 --positions 256",
             kLong.c_str()},
        // Qwen3: head_dim 12 != 32 / 4, q_norm and k_norm before RoPE, GQA 2 per kv head
        Case{"--family qwen3 --head-dim 12 --seed 5", kShort.c_str()}));

// --- hostile checkpoints ---------------------------------------------------------------------------------

int lineCount(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

void expectRefused(const std::string& dir, const std::vector<std::string>& needles) {
  const std::string out = model_test::tempDir() + "/out.json";
  const model_test::CommandRun r = attnscope("model '" + dir + "' --text 'hi' --out '" + out + "'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lineCount(r.err), 1) << r.err;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' in " << r.err;
  EXPECT_FALSE(fs::exists(out));
}

template <typename Edit>
void editJson(const std::string& path, Edit edit) {
  json j = json::parse(model_test::slurp(path));
  edit(j);
  model_test::spit(path, j.dump());
}

const std::string& shardedOriginal() {
  static const std::string dir = checkpoint("--family llama --shards 2");
  return dir;
}

std::string sharded() {
  const std::string dir = model_test::tempDir() + "/ck";
  fs::copy(shardedOriginal(), dir);
  return dir;
}

// The window's progress bar and Cancel: modelForward calls progress after each layer (1, then 2 of 2), and a
// false from it stops the forward with ForwardCancelled.
TEST(LlamaModelProgress, EachLayerThenCancel) {
  const model::Model m = model::loadModel(shardedOriginal());
  const std::vector<int> ids = m.tokenizer.encode("hi there");
  std::vector<int> seen;
  model::ForwardOptions options;
  options.progress = [&seen](int done) {
    seen.push_back(done);
    return true;
  };
  EXPECT_EQ(model::modelForward(m, ids, options).n, static_cast<int>(ids.size()));
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  seen.clear();
  options.progress = [&seen](int done) {
    seen.push_back(done);
    return false;
  };
  EXPECT_THROW(model::modelForward(m, ids, options), model::ForwardCancelled);
  EXPECT_EQ(seen, (std::vector<int>{1}));
}

// The window's forward keeps each layer's input norm for "Open layer as scene", and the memory check counts it:
// n_layer x (n, hidden) float32 = 2 x 9 x 32 x 4 = 2304 bytes for "hi there" (BOS + 8 byte tokens) on this
// 2-layer, hidden-32 checkpoint. A budget that fits the forward without them refuses the forward with them.
TEST(LlamaModelBudget, KeptLayerInputsAreCounted) {
  const model::Model m = model::loadModel(shardedOriginal());
  const std::vector<int> ids = m.tokenizer.encode("hi there");
  ASSERT_EQ(ids.size(), 9u);
  const std::size_t without = model::modelForwardBytes(m, 9, {.keep_ln1 = false});
  const std::size_t with = model::modelForwardBytes(m, 9, {.keep_ln1 = true});
  EXPECT_EQ(with - without, 2304u);
  EXPECT_THROW(model::modelForward(m, ids, {.keep_ln1 = true}, without), attnscope::InputError);
  EXPECT_TRUE(model::modelForward(m, ids, {.keep_ln1 = false}, without).ln1.empty());
  const model::ForwardResult r = model::modelForward(m, ids, {.keep_ln1 = true}, with);
  ASSERT_EQ(r.ln1.size(), 2u);
  for (const attnscope::Matrix& ln : r.ln1) EXPECT_TRUE(ln.rows() == 9 && ln.cols() == 32);
}

TEST(LlamaModelHostile, ShardMissing) {
  const std::string dir = sharded();
  fs::remove(dir + "/model-00002-of-00002.safetensors");
  expectRefused(dir, {dir + "/model.safetensors.index.json: weight_map[", "model-00002-of-00002.safetensors",
                      "a shard file that exists"});
}

TEST(LlamaModelHostile, IndexNamesTheWrongShard) {
  const std::string dir = sharded();  // model.norm.weight lives in shard 2
  editJson(dir + "/model.safetensors.index.json",
           [](json& j) { j["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors"; });
  expectRefused(dir, {dir + "/model-00001-of-00002.safetensors: tensor 'model.norm.weight'",
                      "model.safetensors.index.json places it in this shard", "missing"});
}

TEST(LlamaModelHostile, IndexWithoutAnEntry) {
  const std::string dir = sharded();
  editJson(dir + "/model.safetensors.index.json", [](json& j) { j["weight_map"].erase("model.layers.1.mlp.up_proj.weight"); });
  expectRefused(dir, {"model.safetensors.index.json: weight_map[", "model.layers.1.mlp.up_proj.weight", "got none"});
}

TEST(LlamaModelHostile, KvShapeDisagreesWithConfig) {
  const std::string dir = sharded();  // written with 2 kv heads of 8: k_proj is [16, 32]
  editJson(dir + "/config.json", [](json& j) { j["num_key_value_heads"] = 1; });
  expectRefused(dir, {"tensor 'model.layers.0.self_attn.k_proj.weight' shape", "expected [8, 32]",
                      "num_key_value_heads 1", "got [16, 32]"});
}

TEST(LlamaModelHostile, ConfigFields) {
  struct Bad {
    const char* what;
    std::function<void(json&)> edit;
    std::vector<std::string> needles;
  };
  const std::vector<Bad> cases = {
      {"yarn", [](json& j) { j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; },
       {"config.json: rope_scaling.rope_type", "default, linear or llama3", "yarn"}},
      {"heads not a multiple", [](json& j) { j["num_key_value_heads"] = 3; },
       {"config.json: num_attention_heads", "a multiple of num_key_value_heads (3)", "got 4"}},
      {"gelu", [](json& j) { j["hidden_act"] = "gelu"; }, {"config.json: hidden_act", "silu"}},
      {"odd head_dim", [](json& j) { j["head_dim"] = 7; }, {"config.json: head_dim", "even"}},
      {"unknown family", [](json& j) { j["model_type"] = "falcon"; }, {"config.json: model_type", "falcon"}},
      {"window", [](json& j) { j["model_type"] = "mistral"; j["sliding_window"] = 0; },
       {"config.json: sliding_window", "from 1"}},
      {"no hidden size", [](json& j) { j.erase("hidden_size"); }, {"config.json: hidden_size", "got nothing"}},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.what);
    const std::string dir = sharded();
    editJson(dir + "/config.json", b.edit);
    std::vector<std::string> needles = b.needles;
    needles.push_back(dir + "/config.json");
    expectRefused(dir, needles);
  }
}

// transformers v5 writes rope_parameters {"rope_type", "rope_theta", the type's numbers} where older configs
// have rope_theta and rope_scaling: either form, or both when they agree; a conflict is one line.
TEST(LlamaConfig, RopeParametersAndTheOlderKeys) {
  const json base = {{"model_type", "llama"}, {"hidden_size", 32},       {"num_hidden_layers", 1},
                     {"num_attention_heads", 4}, {"intermediate_size", 48}, {"vocab_size", 10},
                     {"max_position_embeddings", 64}};
  const json llama3 = {{"rope_type", "llama3"},      {"rope_theta", 500000}, {"factor", 8.0},
                       {"low_freq_factor", 1.0},     {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  json j = base;
  j["rope_parameters"] = llama3;
  model::LlamaConfig c = model::llamaConfigFromJson(j, "cfg");
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, attnscope::RopeScaling::Type::Llama3);
  EXPECT_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);

  j = base;  // v5's plain RoPE
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
  c = model::llamaConfigFromJson(j, "cfg");
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.type, attnscope::RopeScaling::Type::None);

  j = base;  // both forms, agreeing (a config saved through both versions)
  j["rope_parameters"] = llama3;
  j["rope_theta"] = 500000;
  j["rope_scaling"] = llama3;
  j["rope_scaling"].erase("rope_theta");
  c = model::llamaConfigFromJson(j, "cfg");
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, attnscope::RopeScaling::Type::Llama3);

  const auto refusal = [](const json& config) {
    try {
      model::llamaConfigFromJson(config, "cfg");
    } catch (const attnscope::InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  j = base;
  j["rope_theta"] = 10000;
  j["rope_parameters"] = llama3;
  std::string e = refusal(j);
  EXPECT_EQ(lineCount(e), 0) << e;
  EXPECT_EQ(e.rfind("cfg: rope_parameters.rope_theta: expected the same as rope_theta (number 10000), got ", 0), 0u) << e;
  EXPECT_NE(e.find("500000"), std::string::npos) << e;

  j = base;
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  j["rope_parameters"] = llama3;
  e = refusal(j);
  EXPECT_EQ(e.rfind("cfg: rope_parameters: expected the same rope type and factors as rope_scaling (linear, factor 2), "
                    "got llama3, factor 8",
                    0),
            0u)
      << e;

  j = base;
  j["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 10000}, {"factor", 4.0}};
  e = refusal(j);
  EXPECT_NE(e.find("cfg: rope_parameters.rope_type: expected default, linear or llama3"), std::string::npos) << e;
}

}  // namespace
