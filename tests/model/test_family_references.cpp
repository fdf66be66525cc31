// Every family against its independent NumPy float64 forward, one harness over one table (family x case), as
// llama.cpp's tests/test-backend-ops.cpp runs one harness over every op. Each row is a tiny random checkpoint that a
// family's tests/model/*_reference.py writes in the family's own tensor names, with expected.json from a NumPy
// forward written from transformers' modeling_*.py (GPT-2's, which reads ids rather than text, is
// test_model_forward.cpp). For every row: `attnscope model` with the maps kept and past a 1 KiB maps limit (every
// map recomputed flash-style from Q, K and the row statistics), maps and rollout against NumPy; the final hidden
// state through the engine; each layer as a scene on the CPU backend (a soft-capped layer refused, naming the cap);
// the forward with each layer's attention computed by a backend (ForwardOptions::attention); the command's whole
// forward on the GPU (--backend gpu; every row on the GPU forward itself: tests/gpu/test_gpu_forward.cpp); and the
// hostile rows: a config field or a tensor made wrong, exit 2, one line naming the file and the field, nothing
// written. A new family is a registry row, a config reader, a reference script and rows in family_rows.h. What is
// particular to one family (its switches, its tokenizer, its config defaults) stays in its own test_*_model.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/model/model.h"
#include "compare.h"
#include "model/family_rows.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace fs = std::filesystem;
namespace model = attnscope::model;

namespace {

using model_test::expectRefused;
using model_test::idsOf;
using model_test::kEncoderLong;
using model_test::kEncoderShort;
using model_test::kHiddenTol;
using model_test::kLong;
using model_test::kRolloutTol;
using model_test::kShort;
using model_test::kWeightTol;
using model_test::worstMap;

using model_test::checkpointOf;
using Row = model_test::FamilyRow;

// Over every head of every layer, the least mean weight a query puts on the keys after it: zero under a causal
// mask. NumPy's maps of the encoder rows give 0.43 to 0.45 (one query alone may put as little as 1e-5 there).
double leastUpperWeight(const model::ForwardResult& f) {
  double least = INFINITY;
  for (int l = 0; l < f.layout.n_layer; ++l)
    for (int h = 0; h < f.layout.n_head; ++h) {
      const attnscope::Matrix m = f.map(l, h);
      double sum = 0;
      for (Eigen::Index i = 0; i + 1 < m.rows(); ++i) sum += m.row(i).tail(m.cols() - i - 1).sum();
      least = std::min(least, sum / static_cast<double>(m.rows() - 1));
    }
  return least;
}

class FamilyReference : public ::testing::TestWithParam<Row> {};

TEST_P(FamilyReference, MatchesNumPy) {
  const Row row = GetParam();
  const std::string dir = checkpointOf(row);
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));

  // The command: the maps kept, and past a 1 KiB maps limit (a soft-capped Gemma 2 keeps its maps whatever the
  // limit); the grid and rollout figures written beside the numbers.
  for (const char* limit : {"", "ATTNSCOPE_MAPS_LIMIT=1K "}) {
    const std::string out = model_test::tempDir();
    const model_test::CommandRun r =
        model_test::run(std::string(limit) + "'" + ATTNSCOPE_BINARY + "' model '" + dir + "' --text '" + *row.text +
                        "' --out '" + out + "/r.json' --grid-out '" + out + "/grid.png' --rollout-out '" + out +
                        "/rollout.svg'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::file_size(out + "/grid.png") > 0 && fs::file_size(out + "/rollout.svg") > 0);
    const json j = json::parse(model_test::slurp(out + "/r.json"));
    EXPECT_EQ(j["token_ids"], expected["ids"]);
    const double maps = model_test::writtenMapsError(j, expected);
    if (expected.contains("kv_head")) {  // the query head's KV group, counted from 1 in the written file
      for (std::size_t l = 0; l < j["layers"].size(); ++l)
        for (std::size_t h = 0; h < expected["kv_head"].size(); ++h)
          EXPECT_EQ(j["layers"][l]["kv_head"][h], expected["kv_head"][h].get<int>() + 1);
    }
    const double rollout = attnscope::test::expectClose(attnscope::test::jsonMatrix(j["rollout"]),
                                                        attnscope::test::jsonMatrix(expected["rollout"]), kRolloutTol,
                                                        "rollout");
    EXPECT_LE(maps, kWeightTol);
    std::printf("[ %s%s %s ] vs NumPy: maps %.2g, rollout %.2g\n", limit, row.model_type, row.args, maps, rollout);
  }

  // The engine itself: the tokenizer, the final hidden state, the mask the family implies.
  const model::Model m = model::loadModel(dir);
  EXPECT_EQ(m.model_type, row.model_type);
  const std::vector<int> ids = idsOf(expected);
  EXPECT_EQ(m.tokenizer.encode(*row.text), ids);
  const model::ForwardResult f = model::modelForward(m, ids, {.keep_ln1 = true});
  const double hidden = attnscope::test::expectClose(f.hidden, attnscope::test::jsonMatrix(expected["hidden"]),
                                                     kHiddenTol, "hidden");
  const bool encoder = row.text == &kEncoderShort || row.text == &kEncoderLong;
  EXPECT_EQ(m.layout().causal, !encoder);
  if (encoder) {
    EXPECT_GT(leastUpperWeight(f), 0.1);  // full maps: queries weigh later keys
  }

  // Each layer as a scene on the CPU backend: the same maps; RoPE on the rotary dims only; an encoder's scene
  // masks nothing; a soft-capped layer cannot be a scene (the engine has no cap) and says so.
  const bool capped = m.architecture().attn_softcap > 0;
  std::vector<std::string> labels(ids.size(), "t");
  attnscope::CpuBackend cpu;
  double scenes = 0;
  for (int l = 0; l < m.layout().n_layer; ++l) {
    if (capped) {
      try {
        (void)model::modelLayerScene(m, f, l, labels, "");
        ADD_FAILURE() << "a soft-capped layer opened as a scene";
      } catch (const attnscope::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("attn_logit_softcapping"), std::string::npos) << e.what();
      }
      continue;
    }
    const attnscope::Scene s = model::modelLayerScene(m, f, l, labels, "");
    if (encoder) {
      EXPECT_EQ(s.mask, attnscope::MaskKind::None);
      EXPECT_FALSE(s.rope.has_value());
    } else {
      ASSERT_TRUE(s.rope.has_value());
      EXPECT_EQ(s.rope->dims, m.architecture().rotary_dims);
    }
    const attnscope::Result r = cpu.compute(s);
    for (int h = 0; h < s.numHeads(); ++h)
      scenes = attnscope::test::worse(
          scenes, attnscope::test::maxError(r.heads[static_cast<std::size_t>(h)].weights,
                                            attnscope::test::jsonMatrix(expected["weights"][static_cast<std::size_t>(l)]
                                                                                [static_cast<std::size_t>(h)]),
                                            {}, "scene"));
  }
  EXPECT_LE(scenes, kWeightTol);

  // The forward with each layer's attention computed by the CPU backend from its scene (ForwardOptions::attention):
  // the same maps.
  double via_scenes = 0;
  if (!capped) {
    via_scenes = worstMap(model::modelForward(m, ids, {.attention = &cpu}), expected);
    EXPECT_LE(via_scenes, kWeightTol);
  }
  std::printf("[ %s %s ] vs NumPy: hidden %.2g, layer scenes %.2g, forward through scenes %.2g\n", row.model_type,
              row.args, hidden, scenes, via_scenes);
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyReference, ::testing::ValuesIn(model_test::kFamilyRows),
                         model_test::familyRowName);

// --- hostile checkpoints: one field or tensor made wrong ----------------------------------------------------

// A checkpoint written once per (script, args) and copied for each row that edits it.
std::string copyOfOriginal(const std::string& script, const std::string& args) {
  static std::map<std::string, std::string> originals;
  std::string& original = originals[script + " " + args];
  if (original.empty()) original = model_test::referenceCheckpoint(script, args);
  const std::string dir = model_test::tempDir() + "/ck";
  fs::copy(original, dir);
  return dir;
}

struct BadConfig {
  const char* script;
  const char* args;
  const char* what;
  std::function<void(json&)> edit;  // of config.json
  std::vector<std::string> needles;
  const char* named_file = "config.json";  // the error names DIR/named_file
};

const std::string kGemma2 = "--family gemma2 --softcap 3", kGemma3 = "--family gemma3 --v5";

const std::vector<BadConfig>& badConfigs() {
  static const std::vector<BadConfig> rows = {
      // Llama family (a checkpoint in two shards)
      {"llama_reference.py", "--family llama --shards 2", "yarn",
       [](json& j) { j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; },
       {"config.json: rope_scaling.rope_type", "default, linear or llama3", "yarn"}},
      {"llama_reference.py", "--family llama --shards 2", "heads not a multiple",
       [](json& j) { j["num_key_value_heads"] = 3; },
       {"config.json: num_attention_heads", "a multiple of num_key_value_heads (3)", "got 4"}},
      {"llama_reference.py", "--family llama --shards 2", "gelu", [](json& j) { j["hidden_act"] = "gelu"; },
       {"config.json: hidden_act", "silu"}},
      {"llama_reference.py", "--family llama --shards 2", "odd head_dim", [](json& j) { j["head_dim"] = 7; },
       {"config.json: head_dim", "even"}},
      {"llama_reference.py", "--family llama --shards 2", "unknown family",
       [](json& j) { j["model_type"] = "falcon"; }, {"config.json: model_type", "falcon"}},
      {"llama_reference.py", "--family llama --shards 2", "window",
       [](json& j) {
         j["model_type"] = "mistral";
         j["sliding_window"] = 0;
       },
       {"config.json: sliding_window", "from 1"}},
      {"llama_reference.py", "--family llama --shards 2", "no hidden size", [](json& j) { j.erase("hidden_size"); },
       {"config.json: hidden_size", "got nothing"}},
      // written with 2 kv heads of 8: k_proj is [16, 32]
      {"llama_reference.py", "--family llama --shards 2", "kv shape disagrees with config",
       [](json& j) { j["num_key_value_heads"] = 1; },
       {"tensor 'model.layers.0.self_attn.k_proj.weight' shape", "expected [8, 32]", "num_key_value_heads 1",
        "got [16, 32]"},
       ""},
      // GPT-NeoX
      {"neox_reference.py", "", "rotary_pct past 1", [](json& j) { j["rotary_pct"] = 1.5; },
       {"config.json: rotary_pct", "(0, 1]", "1.5"}},
      {"neox_reference.py", "", "odd rotary dims", [](json& j) { j["rotary_pct"] = 0.2; },  // int(16 x 0.2) = 3
       {"config.json: rotary_pct", "even number of rotary dims", "3 of head_dim 16"}},
      {"neox_reference.py", "", "disagreeing v5 fraction",
       [](json& j) { j["rope_parameters"] = {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}}; },
       {"config.json: rope_parameters.partial_rotary_factor", "0.25", "0.5"}},
      {"neox_reference.py", "", "residual not a bool", [](json& j) { j["use_parallel_residual"] = "yes"; },
       {"config.json: use_parallel_residual", "true or false"}},
      {"neox_reference.py", "", "heads not dividing", [](json& j) { j["num_attention_heads"] = 5; },
       {"config.json: hidden_size", "a multiple of num_attention_heads (5)", "64"}},
      {"neox_reference.py", "", "negative base", [](json& j) { j["rotary_emb_base"] = -1; },
       {"config.json: rotary_emb_base", "-1"}},
      {"neox_reference.py", "", "relu", [](json& j) { j["hidden_act"] = "relu"; }, {"config.json: hidden_act", "relu"}},
      {"neox_reference.py", "", "zero eps", [](json& j) { j["layer_norm_eps"] = 0; },
       {"config.json: layer_norm_eps", "number 0"}},
      // Gemma 2 and 3
      {"gemma_reference.py", kGemma2.c_str(), "query_pre_attn_scalar 0",
       [](json& j) { j["query_pre_attn_scalar"] = 0; }, {"config.json: query_pre_attn_scalar", "a number in (0, ", "0"}},
      {"gemma_reference.py", kGemma2.c_str(), "query_pre_attn_scalar negative",
       [](json& j) { j["query_pre_attn_scalar"] = -24; }, {"config.json: query_pre_attn_scalar", "-24"}},
      {"gemma_reference.py", kGemma2.c_str(), "negative soft cap", [](json& j) { j["attn_logit_softcapping"] = -5.0; },
       {"config.json: attn_logit_softcapping", "a number in (0, ", "-5"}},
      {"gemma_reference.py", kGemma2.c_str(), "zero final soft cap",
       [](json& j) { j["final_logit_softcapping"] = 0; }, {"config.json: final_logit_softcapping", "a number in (0, "}},
      {"gemma_reference.py", kGemma2.c_str(), "layer_types too long",
       [](json& j) { j["layer_types"] = {"sliding_attention", "full_attention", "full_attention"}; },
       {"config.json: layer_types", "num_hidden_layers (2)", "3 entries"}},
      {"gemma_reference.py", kGemma2.c_str(), "layer_types entry",
       [](json& j) { j["layer_types"] = {"sliding_attention", "global"}; },
       {"config.json: layer_types[1]", "\"sliding_attention\" or \"full_attention\"", "global"}},
      {"gemma_reference.py", kGemma2.c_str(), "sliding_window 0", [](json& j) { j["sliding_window"] = 0; },
       {"config.json: sliding_window", "from 1"}},
      {"gemma_reference.py", kGemma2.c_str(), "odd head_dim", [](json& j) { j["head_dim"] = 15; },
       {"config.json: head_dim", "an even number", "15"}},
      {"gemma_reference.py", kGemma2.c_str(), "kv heads not dividing", [](json& j) { j["num_key_value_heads"] = 3; },
       {"config.json: num_key_value_heads", "a divisor of num_attention_heads (4)", "3"}},
      {"gemma_reference.py", kGemma2.c_str(), "relu", [](json& j) { j["hidden_activation"] = "relu"; },
       {"config.json: hidden_activation", "relu"}},
      {"gemma_reference.py", kGemma2.c_str(), "dtype", [](json& j) { j["torch_dtype"] = "int8"; },
       {"config.json: torch_dtype", "bfloat16", "int8"}},
      {"gemma_reference.py", kGemma2.c_str(), "zero eps", [](json& j) { j["rms_norm_eps"] = 0; },
       {"config.json: rms_norm_eps", "got number 0"}},
      {"gemma_reference.py", kGemma3.c_str(), "no text_config", [](json& j) { j.erase("text_config"); },
       {"config.json: text_config", "an object", "nothing"}},
      {"gemma_reference.py", kGemma3.c_str(), "local rope type",
       [](json& j) { j["text_config"]["rope_parameters"]["sliding_attention"]["rope_type"] = "linear"; },
       {"config.json: text_config: rope_parameters.sliding_attention.rope_type", "default", "linear"}},
      {"gemma_reference.py", kGemma3.c_str(), "layer_types too short",
       [](json& j) { j["text_config"]["layer_types"] = {"full_attention"}; },
       {"config.json: text_config: layer_types", "num_hidden_layers (2)", "1 entries"}},
      // Phi-3, OLMo 2, Mixtral
      {"llama_kin_reference.py", "--family phi3", "rotary past 1", [](json& j) { j["partial_rotary_factor"] = 1.5; },
       {"config.json: partial_rotary_factor", "(0, 1]", "1.5"}},
      {"llama_kin_reference.py", "--family phi3", "odd rotary dims",
       [](json& j) { j["partial_rotary_factor"] = 0.2; },  // int(16 x 0.2) = 3
       {"config.json: partial_rotary_factor", "even number of rotary dims", "3 of head_dim 16"}},
      {"llama_kin_reference.py", "--family phi3", "zero rotary", [](json& j) { j["partial_rotary_factor"] = 0; },
       {"config.json: partial_rotary_factor", "(0, 1]", "number 0"}},
      {"llama_kin_reference.py", "--family phi3", "disagreeing v5 fraction",
       [](json& j) { j["rope_parameters"] = {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}}; },
       {"config.json: rope_parameters.partial_rotary_factor", "1", "0.5"}},
      {"llama_kin_reference.py", "--family phi3", "longrope (Phi-3 128k)",
       [](json& j) { j["rope_scaling"] = {{"type", "longrope"}, {"long_factor", {1.0}}, {"short_factor", {1.0}}}; },
       {"config.json: rope_scaling.type", "default, linear or llama3", "longrope"}},
      {"llama_kin_reference.py", "--family mixtral", "top-k past the experts",
       [](json& j) { j["num_experts_per_tok"] = 5; }, {"config.json: num_experts_per_tok", "1 to 4", "5"}},
      {"llama_kin_reference.py", "--family mixtral", "top-k 0", [](json& j) { j["num_experts_per_tok"] = 0; },
       {"config.json: num_experts_per_tok", "1 to 4", "0"}},
      {"llama_kin_reference.py", "--family mixtral", "no experts", [](json& j) { j["num_local_experts"] = 0; },
       {"config.json: num_local_experts", "1 to 1024", "0"}},
      {"llama_kin_reference.py", "--family olmo2", "attention biases", [](json& j) { j["attention_bias"] = true; },
       {"config.json: attention_bias", "false", "true"}},
      {"llama_kin_reference.py", "--family olmo2", "zero eps", [](json& j) { j["rms_norm_eps"] = 0; },
       {"config.json: rms_norm_eps", "number 0"}},
      // BERT and RoBERTa (some errors name model.safetensors: the needle is the folder)
      {"bert_reference.py", "", "relative positions", [](json& j) { j["position_embedding_type"] = "relative_key"; },
       {"config.json: position_embedding_type", "absolute", "relative_key"}},
      {"bert_reference.py", "", "no token types", [](json& j) { j["type_vocab_size"] = 0; },
       {"config.json: type_vocab_size", "0"}},
      {"bert_reference.py", "", "a decoder", [](json& j) { j["is_decoder"] = true; },
       {"config.json: is_decoder", "false", "true"}},
      {"bert_reference.py", "", "heads not dividing", [](json& j) { j["num_attention_heads"] = 5; },
       {"config.json: hidden_size", "a multiple of num_attention_heads (5)", "64"}},
      {"bert_reference.py", "", "relu", [](json& j) { j["hidden_act"] = "relu"; }, {"config.json: hidden_act", "relu"}},
      {"bert_reference.py", "", "zero eps", [](json& j) { j["layer_norm_eps"] = 0; },
       {"config.json: layer_norm_eps", "0"}},
      {"bert_reference.py", "--family roberta", "no room after padding",
       [](json& j) { j["max_position_embeddings"] = 2; },
       {"config.json: max_position_embeddings", "more than pad_token_id + 1 (2", "2"}},
      {"bert_reference.py", "", "token types past the tensor", [](json& j) { j["type_vocab_size"] = 3; },
       {"model.safetensors: tensor 'bert.embeddings.token_type_embeddings.weight' shape", "[3, 64]", "type_vocab_size",
        "got [2, 64]"},
       "model.safetensors"},
  };
  return rows;
}

TEST(FamilyHostile, ConfigFields) {
  for (const BadConfig& b : badConfigs()) {
    SCOPED_TRACE(std::string(b.script) + " " + b.args + ": " + b.what);
    const std::string dir = copyOfOriginal(b.script, b.args);
    json j = json::parse(model_test::slurp(dir + "/config.json"));
    b.edit(j);
    model_test::spit(dir + "/config.json", j.dump());
    std::vector<std::string> needles = b.needles;
    needles.push_back(dir + "/" + b.named_file);
    expectRefused(dir, needles);
  }
}

struct BadTensor {
  const char* script;
  const char* args;  // the script's switch that writes one tensor wrong
  std::vector<std::string> needles;  // the first follows DIR/model.safetensors
};

TEST(FamilyHostile, TensorsOfTheWrongSizeOrMissing) {
  const std::vector<BadTensor> rows = {
      {"neox_reference.py", "--bad-qkv",  // query_key_value with 2 x 64 rows, not 3 x 64
       {": tensor 'gpt_neox.layers.0.attention.query_key_value.weight' shape", "expected [192, 64]",
        "num_attention_heads 4 x head_dim 16", "got [128, 64]"}},
      {"gemma_reference.py", "--family gemma2 --bad-shape",  // q_proj with 3 heads' rows, not 4
       {": tensor 'model.layers.0.self_attn.q_proj.weight' shape", "expected [64, 48]",
        "num_attention_heads 4 x head_dim 16", "got [48, 48]"}},
      {"llama_kin_reference.py", "--family phi3 --bad-qkv",  // 16 rows short of (4 + 2 + 2) x 16
       {": tensor 'model.layers.0.self_attn.qkv_proj.weight' shape", "expected [128, 64]",
        "num_attention_heads 4 x head_dim 16 + 2 x num_key_value_heads 2", "got [112, 64]"}},
      {"llama_kin_reference.py", "--family phi3 --bad-gate-up",  // intermediate rows, not 2 x
       {": tensor 'model.layers.0.mlp.gate_up_proj.weight' shape", "expected [192, 64]", "2 x intermediate_size",
        "got [96, 64]"}},
      {"llama_kin_reference.py", "--family mixtral --drop-expert 3",
       {": tensor 'model.layers.0.block_sparse_moe.experts.3.w2.weight'", "config.json implies it", "got missing"}},
      {"bert_reference.py", "--bad-query",  // attention.self.query with 32 rows, not 64
       {": tensor 'bert.encoder.layer.0.attention.self.query.weight' shape", "expected [64, 64]",
        "num_attention_heads 4 x head_dim 16", "got [32, 64]"}},
  };
  for (const BadTensor& b : rows) {
    SCOPED_TRACE(std::string(b.script) + " " + b.args);
    const std::string dir = model_test::referenceCheckpoint(b.script, b.args);
    std::vector<std::string> needles = b.needles;
    needles[0] = dir + "/model.safetensors" + needles[0];
    expectRefused(dir, needles);
  }
}

// --- `attnscope model --backend gpu`: the whole forward of every family on the GPU -------------------------------

// GPU (llvmpipe here) against NumPy and against --backend cpu on the same checkpoint, through the command: the GPU
// forward sums in another order (one float32 rounding per term, ~1e-7 relative), carried through the same two
// layers: the family table's bar (maps 1e-5). Skipped where no GL 4.3 context can be made (failed under
// ATTNSCOPE_REQUIRE_GPU=1). Seen on llvmpipe (146 tokens): GPU vs NumPy 4.2e-7 to 2.0e-6, GPU vs CPU up to 2.0e-6
// (Gemma 2 with a soft cap of 3 among them: 9.9e-7).
TEST(FamilyBackends, GpuAgreesWithCpuOnEveryFamily) {
  struct Ckpt {
    const char* script;
    const char* args;
  };
  const std::string text = kLong;
  for (const Ckpt& c : {Ckpt{"llama_reference.py", "--family mistral --window 40 --positions 256"},
                        Ckpt{"llama_reference.py", "--family qwen3 --positions 256"},
                        Ckpt{"neox_reference.py", "--rotary-pct 0.5 --positions 256"},
                        Ckpt{"llama_kin_reference.py", "--family phi3 --rotary 0.5 --window 40"},
                        Ckpt{"llama_kin_reference.py", "--family olmo2"},
                        Ckpt{"llama_kin_reference.py", "--family mixtral"},
                        // soft-capped scores, sandwich norms, a local layer: the GPU forward's own flash stages
                        Ckpt{"gemma_reference.py", "--family gemma2 --softcap 3"}}) {
    SCOPED_TRACE(std::string(c.script) + " " + c.args);
    const std::string dir = model_test::referenceCheckpoint(c.script, std::string(c.args) + " --text '" + text + "'");
    const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
    json written[2];
    const char* names[2] = {"cpu", "gpu"};
    for (int b = 0; b < 2; ++b) {
      const std::string out = model_test::tempDir() + "/r.json";
      const model_test::CommandRun r =
          model_test::run("EGL_PLATFORM=surfaceless '" + std::string(ATTNSCOPE_BINARY) + "' model '" + dir +
                          "' --text '" + text + "' --backend " + names[b] + " --out '" + out + "'");
      if (b == 1 && r.status != 0 && r.err.find("GPU") != std::string::npos) {
        const char* required = std::getenv("ATTNSCOPE_REQUIRE_GPU");
        if (required && std::string(required) == "1") GTEST_FAIL() << "ATTNSCOPE_REQUIRE_GPU=1 but: " << r.err;
        GTEST_SKIP() << "no GPU backend: " << r.err;
      }
      ASSERT_EQ(r.status, 0) << r.err;
      written[b] = json::parse(model_test::slurp(out));
    }
    const double cpu = model_test::writtenMapsError(written[0], expected);
    const double gpu = model_test::writtenMapsError(written[1], expected);
    EXPECT_LE(cpu, kWeightTol);
    EXPECT_LE(gpu, kWeightTol);
    // GPU against CPU directly: each within kWeightTol of NumPy, so within 2 kWeightTol of each other.
    double apart = 0;
    for (std::size_t l = 0; l < written[0]["layers"].size(); ++l)
      for (std::size_t h = 0; h < written[0]["layers"][l]["heads"].size(); ++h)
        apart = attnscope::test::worse(
            apart, attnscope::test::maxError(attnscope::test::jsonMatrix(written[1]["layers"][l]["heads"][h]),
                                             attnscope::test::jsonMatrix(written[0]["layers"][l]["heads"][h]), {},
                                             "gpu vs cpu"));
    EXPECT_LE(apart, 2 * kWeightTol);
    std::printf("[ %s %s ] vs NumPy: cpu %.2g, gpu %.2g; gpu vs cpu %.2g\n", c.script, c.args, cpu, gpu, apart);
  }
}

}  // namespace
