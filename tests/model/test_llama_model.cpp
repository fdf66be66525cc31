// Llama, Mistral, Qwen2 and Qwen3: what is particular to the family (its maps against NumPy, and the config
// fields every family shares, are rows of test_family_references.cpp): the forward's progress and Cancel, the
// memory check counting the kept layer inputs, sharded checkpoints whose index and shards disagree (exit 2, one
// line naming the file and the field, no output), and transformers 5's rope_parameters beside the older keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
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

std::string checkpoint(const std::string& args) { return model_test::referenceCheckpoint("llama_reference.py", args); }

// --- hostile checkpoints ---------------------------------------------------------------------------------

using model_test::expectRefused;
using model_test::lineCount;

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
