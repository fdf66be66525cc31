// Each layer of the tiny Llama (GQA, llama3 scaling, biases), Mistral (MQA, sliding window), Qwen2 (biases,
// linear scaling) and Qwen3 (q_norm / k_norm, head_dim 12) checkpoints as a scene (model::llamaLayerScene, what
// `attnscope model --layer L --scene-out` writes), computed by the GPU backend: the CPU forward's maps and the
// NumPy float64 forward's (tests/model/llama_reference.py); and BERT / RoBERTa encoder layers, unmasked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "attnscope/model/model.h"
#include "command_support.h"
#include "compare.h"
#include "gpu_test_support.h"

using namespace attnscope;

TEST(GpuLlamaScene, EachLayerOfEachFamilyGivesTheForwardsMaps) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const char* const cases[] = {
      "--family llama --shards 3 --rope-scaling llama3 --attention-bias --rope-theta 500000",
      "--family mistral --dtype BF16 --window 5 --kv-heads 1 --positions 256",
      "--family qwen2 --dtype F16 --tie --rope-scaling linear --window 7 --layers 3 --positions 256",
      "--family qwen3 --head-dim 12 --seed 5",
  };
  const std::string text = "Hello there, attention heads! A window of five keys.";
  for (const char* args : cases) {
    const std::string dir = test::tempDir("attnscope_gpu_llama") + "/ckpt";
    const test::CommandRun made = test::run("/usr/bin/python3 '" ATTNSCOPE_SHADER_SOURCE_DIR
                                            "/../tests/model/llama_reference.py' '" + dir + "' " + args + " --text '" +
                                            text + "'");
    ASSERT_EQ(made.status, 0) << made.err;
    const nlohmann::json expected = nlohmann::json::parse(test::slurp(dir + "/expected.json"));
    const model::Model m = model::loadModel(dir);
    const std::vector<int> ids = m.tokenizer.encode(text);
    const model::ForwardResult forward = model::modelForward(m, ids, {.keep_ln1 = true});
    const model::HeadLayout layout = m.layout();
    std::vector<std::string> labels(ids.size(), "t");
    double vs_numpy = 0, vs_forward = 0;
    for (int l = 0; l < layout.n_layer; ++l) {
      const Scene s = model::modelLayerScene(m, forward, l, labels, "");
      const Result r = gpu->compute(s);
      for (int h = 0; h < layout.n_head; ++h) {
        const std::size_t hh = static_cast<std::size_t>(h), ll = static_cast<std::size_t>(l);
        vs_numpy = test::worse(vs_numpy, test::maxError(r.heads[hh].weights,
                                                        test::jsonMatrix(expected["weights"][ll][hh]), {}, "numpy"));
        vs_forward = test::worse(vs_forward, test::maxError(r.heads[hh].weights, Matrix(forward.map(l, h)),
                                                            {}, "forward"));
      }
    }
    // float32 on llvmpipe against float64, and against the CPU forward's float32 (the CPU forward's own
    // tolerance against NumPy, tests/model/test_llama_model.cpp).
    EXPECT_LE(vs_numpy, 1e-5) << args;
    EXPECT_LE(vs_forward, 1e-5) << args;
    std::printf("[ %s ] layer scenes (GPU): vs NumPy %.2g, vs the forward %.2g\n", args, vs_numpy, vs_forward);
  }
}

// BERT and RoBERTa (encoders: no mask) layer by layer as scenes (model::modelLayerScene) on the GPU backend: the
// CPU forward's full maps and the NumPy float64 forward's (tests/model/bert_reference.py).
TEST(GpuEncoderScene, EachLayerGivesTheForwardsFullMaps) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const std::string text = "Hello there, every key sees the query!";
  for (const char* args : {"--layers 2", "--family roberta --gamma-beta --dtype BF16"}) {
    const std::string dir = test::tempDir("attnscope_gpu_bert") + "/ckpt";
    const test::CommandRun made = test::run("/usr/bin/python3 '" ATTNSCOPE_SHADER_SOURCE_DIR
                                            "/../tests/model/bert_reference.py' '" + dir + "' " + args + " --text '" +
                                            text + "'");
    ASSERT_EQ(made.status, 0) << made.err;
    const nlohmann::json expected = nlohmann::json::parse(test::slurp(dir + "/expected.json"));
    const model::Model m = model::loadModel(dir);
    const std::vector<int> ids = m.tokenizer.encode(text);
    const model::ForwardResult forward = model::modelForward(m, ids, {.keep_ln1 = true});
    const model::HeadLayout layout = m.layout();
    EXPECT_FALSE(layout.causal);
    std::vector<std::string> labels(ids.size(), "t");
    double vs_numpy = 0, vs_forward = 0, least_upper = 1;
    for (int l = 0; l < layout.n_layer; ++l) {
      const Scene s = model::modelLayerScene(m, forward, l, labels, "");
      EXPECT_EQ(s.mask, MaskKind::None);
      const Result r = gpu->compute(s);
      for (int h = 0; h < layout.n_head; ++h) {
        const std::size_t hh = static_cast<std::size_t>(h), ll = static_cast<std::size_t>(l);
        const Matrix& w = r.heads[hh].weights;
        vs_numpy = test::worse(vs_numpy, test::maxError(w, test::jsonMatrix(expected["weights"][ll][hh]), {}, "numpy"));
        vs_forward = test::worse(vs_forward, test::maxError(w, Matrix(forward.map(l, h)), {}, "forward"));
        least_upper = std::min(least_upper, static_cast<double>(w.row(0).tail(w.cols() - 1).sum()));
      }
    }
    // float32 on the GPU against float64 and against the CPU forward (the CPU forward's tolerance against NumPy,
    // tests/model/test_bert_model.cpp); the first query's weight on later keys far from 0 (no causal mask).
    EXPECT_LE(vs_numpy, 1e-5) << args;
    EXPECT_LE(vs_forward, 1e-5) << args;
    EXPECT_GT(least_upper, 1e-2) << args;
    std::printf("[ %s ] encoder layer scenes (GPU): vs NumPy %.2g, vs the forward %.2g\n", args, vs_numpy, vs_forward);
  }
}
