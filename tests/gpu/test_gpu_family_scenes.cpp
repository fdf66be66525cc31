// Each layer of every family's tiny checkpoint as a scene (model::modelLayerScene, what `attnscope model --layer L
// --scene-out` writes), computed by the GPU backend: the CPU forward's maps and the NumPy float64 forward's (the
// family's tests/model/*_reference.py). One harness over one table, as tests/model/test_family_references.cpp for
// the CPU: GQA and MQA, llama3 and linear rope scaling, biases, sliding windows, q/k norms (Qwen3's per head, OLMo
// 2's over the whole projection), head_dim != hidden / heads, Gemma's (1 + w) norms and query_pre_attn_scalar,
// local and global rope bases, partial rotary (NeoX, Phi-3), routed experts, and encoders, unmasked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "attnscope/model/model.h"
#include "command_support.h"
#include "compare.h"
#include "gpu_test_support.h"

using namespace attnscope;

namespace {

struct Row {
  const char* script;  // tests/model/SCRIPT writes the checkpoint and expected.json
  const char* args;
  bool encoder = false;
};

const Row kRows[] = {
    {"llama_reference.py", "--family llama --shards 3 --rope-scaling llama3 --attention-bias --rope-theta 500000"},
    {"llama_reference.py", "--family mistral --dtype BF16 --window 5 --kv-heads 1 --positions 256"},
    {"llama_reference.py", "--family qwen2 --dtype F16 --tie --rope-scaling linear --window 7 --layers 3 --positions 256"},
    {"llama_reference.py", "--family qwen3 --head-dim 12 --seed 5"},
    {"neox_reference.py", "--sequential --rotary-pct 0.5"},
    {"gemma_reference.py", "--family gemma"},
    {"gemma_reference.py", "--family gemma2 --dtype BF16 --softcap none"},
    {"gemma_reference.py", "--family gemma3_text --layers 3 --pattern 3 --rope-theta 1000000 --linear-scaling 4 --dtype F16"},
    {"gemma_reference.py", "--family gemma3 --layers 3 --layer-types sfs --kv-heads 1 --local-theta 300 --v5"},
    {"llama_kin_reference.py", "--family phi3 --rotary 0.5 --window 5"},
    {"llama_kin_reference.py", "--family olmo2"},
    {"llama_kin_reference.py", "--family mixtral"},
    {"bert_reference.py", "--layers 2", true},
    {"bert_reference.py", "--family roberta --gamma-beta --dtype BF16", true},
};

}  // namespace

TEST(GpuFamilyScenes, EachLayerOfEachFamilyGivesTheForwardsMaps) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  for (const Row& row : kRows) {
    SCOPED_TRACE(std::string(row.script) + " " + row.args);
    const std::string text = row.encoder ? "Hello there, every key sees the query!"
                                         : "Hello there, attention heads! A window of five keys.";
    const std::string dir = test::tempDir("attnscope_gpu_family") + "/ckpt";
    const test::CommandRun made = test::run("/usr/bin/python3 '" ATTNSCOPE_SHADER_SOURCE_DIR "/../tests/model/" +
                                            std::string(row.script) + "' '" + dir + "' " + row.args + " --text '" +
                                            text + "'");
    ASSERT_EQ(made.status, 0) << made.err;
    const nlohmann::json expected = nlohmann::json::parse(test::slurp(dir + "/expected.json"));
    const model::Model m = model::loadModel(dir);
    const std::vector<int> ids = m.tokenizer.encode(text);
    const model::ForwardResult forward = model::modelForward(m, ids, {.keep_ln1 = true});
    const model::HeadLayout layout = m.layout();
    EXPECT_EQ(layout.causal, !row.encoder);
    std::vector<std::string> labels(ids.size(), "t");
    double vs_numpy = 0, vs_forward = 0, least_upper = 1;
    for (int l = 0; l < layout.n_layer; ++l) {
      const Scene s = model::modelLayerScene(m, forward, l, labels, "");
      if (row.encoder) {
        EXPECT_EQ(s.mask, MaskKind::None);
      }
      const Result r = gpu->compute(s);
      for (int h = 0; h < layout.n_head; ++h) {
        const std::size_t hh = static_cast<std::size_t>(h), ll = static_cast<std::size_t>(l);
        const Matrix& w = r.heads[hh].weights;
        vs_numpy = test::worse(vs_numpy, test::maxError(w, test::jsonMatrix(expected["weights"][ll][hh]), {}, "numpy"));
        vs_forward = test::worse(vs_forward, test::maxError(w, Matrix(forward.map(l, h)), {}, "forward"));
        least_upper = std::min(least_upper, static_cast<double>(w.row(0).tail(w.cols() - 1).sum()));
      }
    }
    // float32 on the GPU against float64, and against the CPU forward's float32: the CPU forward's own bar against
    // NumPy (tests/model/test_model_support.h, kWeightTol 1e-5). Seen on llvmpipe: vs NumPy to 3.4e-6, vs the
    // forward 1.1e-6. An encoder's first query puts weight on later keys (0 under a causal mask).
    EXPECT_LE(vs_numpy, 1e-5);
    EXPECT_LE(vs_forward, 1e-5);
    if (row.encoder) {
      EXPECT_GT(least_upper, 1e-2);
    }
    std::printf("[ %s %s ] layer scenes (GPU): vs NumPy %.2g, vs the forward %.2g\n", row.script, row.args, vs_numpy,
                vs_forward);
  }
}
