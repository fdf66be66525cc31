// Phi-3, OLMo 2 and Mixtral, the Llama kin (llama_kin_reference.py writes them in each family's exact tensor
// names: Phi-3's fused qkv_proj and gate_up_proj, OLMo 2's whole-projection q_norm / k_norm and post norms,
// Mixtral's block_sparse_moe router and experts). What is particular to them (their maps against NumPy, their
// hostile configs and tensors, are rows of test_family_references.cpp): every switch (partial rotary, sliding
// window, top-k routing, transformers 5's rope_parameters) shown to change the maps, OLMo 2's two new pieces shown
// to matter, the memory check counting every expert, the config defaults, and safetensors' __metadata__ anywhere.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/model/family_configs.h"
#include "attnscope/model/model.h"
#include "compare.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace model = attnscope::model;

namespace {

std::string checkpoint(const std::string& args) { return model_test::referenceCheckpoint("llama_kin_reference.py", args); }

using model_test::idsOf;
using model_test::kLong;
using model_test::kShort;
using model_test::kWeightTol;
using model_test::worstMap;

// Each switch changes the maps: the same weights (same seed) with one switch flipped give maps that the engine
// matches to NumPy within kWeightTol, and that differ from the unflipped ones by more than 10 x kWeightTol, so
// that a forward ignoring the switch would fail the match. Seen (engine vs its NumPy 3.9e-7 to 1.5e-6): Phi-3's
// partial rotary 0.98, its window 0.92, theta 0.95; Mixtral's top-k 0.71, its window 0.98; OLMo 2's theta 0.47.
TEST(LlamaKinSwitches, EachChangesTheMaps) {
  struct Flip {
    const char* family;
    const char* base;
    const char* flipped;
  };
  const std::string text = " --text '" + kLong + "'";
  for (const Flip& flip : {Flip{"phi3", "", "--rotary 0.5"}, Flip{"phi3", "", "--window 40"},
                           Flip{"phi3", "", "--theta 500"}, Flip{"mixtral", "--topk 2", "--topk 1"},
                           Flip{"mixtral", "", "--window 40"}, Flip{"olmo2", "", "--theta 500"}}) {
    SCOPED_TRACE(std::string(flip.family) + " " + flip.flipped);
    const std::string family = std::string("--family ") + flip.family + " ";
    const json base = json::parse(model_test::slurp(checkpoint(family + flip.base + text) + "/expected.json"));
    const std::string dir = checkpoint(family + flip.flipped + text);
    const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
    const model::ForwardResult f = model::modelForward(model::loadModel(dir), idsOf(expected));
    const double matched = worstMap(f, expected), moved = worstMap(f, base);
    EXPECT_LE(matched, kWeightTol);
    EXPECT_GT(moved, 10 * kWeightTol);
    std::printf("[ %s %s ] vs its NumPy %.2g; vs the unflipped maps %.2g\n", flip.family, flip.flipped, matched, moved);
  }
}

// OLMo 2's two new pieces matter: NumPy forwards that get them wrong (q_norm / k_norm per head as Qwen3's, or the
// norms before the sublayers as Llama's) give maps far from the engine's, which matches the right one. Seen: 0.19
// (per head) and 0.45 (pre norms), against 3.9e-7 engine vs NumPy.
TEST(LlamaKinSwitches, Olmo2NormsMatter) {
  const std::string text = " --text '" + kShort + "'";
  const std::string dir = checkpoint("--family olmo2" + text);
  const model::ForwardResult f =
      model::modelForward(model::loadModel(dir), idsOf(json::parse(model_test::slurp(dir + "/expected.json"))));
  EXPECT_LE(worstMap(f, json::parse(model_test::slurp(dir + "/expected.json"))), kWeightTol);
  for (const char* wrong : {"per-head-qk", "pre-norm"}) {
    const json other =
        json::parse(model_test::slurp(checkpoint(std::string("--family olmo2 --wrong ") + wrong + text) +
                                      "/expected.json"));
    const double moved = worstMap(f, other);
    EXPECT_GT(moved, 10 * kWeightTol) << wrong;
    std::printf("[ olmo2 ] vs a forward with %s: %.2g\n", wrong, moved);
  }
}

// A checkpoint's memory counts every expert: with 4 experts of (3 x 96 x 64) floats each per layer, the weights are
// past a budget that one expert's share would fit.
TEST(LlamaKinModelHostile, MemoryCountsEveryExpert) {
  const std::string dir = checkpoint("--family mixtral");
  // Embedding 300 x 64, per layer: 2 norms, q 64x64, k and v 32x64, o 64x64, router 4x64, 4 experts x 3 x 96x64;
  // the final norm. Worked in floats:
  const std::size_t per_layer = 2 * 64 + 64 * 64 + 2 * 32 * 64 + 64 * 64 + 4 * 64 + 4 * 3 * 96 * 64;
  const std::size_t floats = 300 * 64 + 2 * per_layer + 64;
  const model::Model m = model::loadModel(dir, 4 * floats);  // exactly enough
  EXPECT_EQ(m.model_type, "mixtral");
  try {
    (void)model::loadModel(dir, 4 * floats - 4);
    ADD_FAILURE() << "loaded past its memory budget";
  } catch (const attnscope::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the memory budget"), std::string::npos) << e.what();
  }
}

// Config defaults as transformers' Phi3Config, Olmo2Config and MixtralConfig set them, and transformers 5's
// rope_parameters read in place of rope_theta.
TEST(LlamaKinConfig, DefaultsAndRopeParameters) {
  const json base = {{"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                     {"intermediate_size", 96}, {"vocab_size", 300}, {"max_position_embeddings", 256}};
  for (const char* type : {"phi3", "olmo2", "mixtral"}) {
    SCOPED_TRACE(type);
    json j = base;
    j["model_type"] = type;
    const model::Architecture a = model::llamaKinArchitectureFromJson(j, "c.json");
    EXPECT_EQ(a.norm_eps, 1e-5);
    EXPECT_EQ(a.n_kv_head, 4);  // num_key_value_heads absent: one per query head
    EXPECT_EQ(a.rotary_dims, 16);
    EXPECT_EQ(a.rope_theta, std::string(type) == "mixtral" ? 1e6 : 1e4);
    EXPECT_EQ(a.n_experts, std::string(type) == "mixtral" ? 8 : 0);
    EXPECT_EQ(a.experts_per_tok, std::string(type) == "mixtral" ? 2 : 0);
    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500.0}};
    EXPECT_EQ(model::llamaKinArchitectureFromJson(j, "c.json").rope_theta, 500.0);
    j["rope_theta"] = 400.0;  // both forms, disagreeing
    try {
      (void)model::llamaKinArchitectureFromJson(j, "c.json");
      ADD_FAILURE() << "disagreeing rope_theta and rope_parameters.rope_theta accepted";
    } catch (const attnscope::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("c.json: rope_parameters.rope_theta"), std::string::npos) << e.what();
    }
  }
  json phi = base;
  phi["model_type"] = "phi3";
  phi["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.75}};
  EXPECT_EQ(model::llamaKinArchitectureFromJson(phi, "c.json").rotary_dims, 12);  // int(16 x 0.75), Phi-4-mini's
}

// safetensors' __metadata__ is not a tensor wherever it stands in the header: the Phi-3 checkpoint rewritten with
// __metadata__ first and more entries in it opens and gives NumPy's maps.
TEST(LlamaKinMetadata, IgnoredWhereverItStands) {
  const std::string dir = checkpoint("--family phi3");
  const std::string bytes = model_test::slurp(dir + "/model.safetensors");
  std::uint64_t size = 0;
  std::memcpy(&size, bytes.data(), 8);
  const nlohmann::ordered_json header = nlohmann::ordered_json::parse(bytes.substr(8, size));
  ASSERT_TRUE(header.contains("__metadata__"));  // every test checkpoint carries one (gpt2_reference.py)
  nlohmann::ordered_json moved;
  moved["__metadata__"] = {{"format", "pt"}, {"total_size", "12345"}, {"note", "{\"dtype\": \"F32\"}"}};
  for (const auto& [name, value] : header.items())
    if (name != "__metadata__") moved[name] = value;
  std::string text = moved.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const std::uint64_t new_size = text.size();
  std::memcpy(out.data(), &new_size, 8);
  model_test::spit(dir + "/model.safetensors", out + text + bytes.substr(8 + size));
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  const model::ForwardResult f = model::modelForward(model::loadModel(dir), idsOf(expected));
  EXPECT_LE(worstMap(f, expected), kWeightTol);
}

}  // namespace
