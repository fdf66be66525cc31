// Each layer of tiny Gemma (head_dim 16 of hidden 48, scores by head_dim^-1/2), Gemma 2 without soft cap (sandwich
// norms, query_pre_attn_scalar 24, a local layer) and Gemma 3 (q_norm / k_norm with (1 + w), local layers on
// rope_local_base_freq, global ones on rope_theta with linear scaling; the multimodal gemma3 config) checkpoints
// as a scene (model::modelLayerScene, what `attnscope model --layer L --scene-out` writes), computed by the GPU
// backend: the CPU forward's maps and the NumPy float64 forward's (tests/model/gemma_reference.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "attnscope/model/model.h"
#include "command_support.h"
#include "compare.h"
#include "gpu_test_support.h"

using namespace attnscope;

TEST(GpuGemmaScene, EachLayerOfEachFamilyGivesTheForwardsMaps) {
  ATTNSCOPE_REQUIRE_GPU(gpu);
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const char* const cases[] = {
      "--family gemma",
      "--family gemma2 --dtype BF16 --softcap none",
      "--family gemma3_text --layers 3 --pattern 3 --rope-theta 1000000 --linear-scaling 4 --dtype F16",
      "--family gemma3 --layers 3 --layer-types sfs --kv-heads 1 --local-theta 300 --v5",
  };
  const std::string text = "Hello there, attention heads! A window of five keys.";
  for (const char* args : cases) {
    const std::string dir = test::tempDir("attnscope_gpu_gemma") + "/ckpt";
    const test::CommandRun made = test::run("/usr/bin/python3 '" ATTNSCOPE_SHADER_SOURCE_DIR
                                            "/../tests/model/gemma_reference.py' '" + dir + "' " + args + " --text '" +
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
    // float32 on the GPU against float64, and against the CPU forward's float32 (the CPU forward's own tolerance
    // against NumPy, tests/model/test_gemma_model.cpp). Seen on llvmpipe: vs NumPy to 3.4e-6, vs the forward 1.1e-6.
    EXPECT_LE(vs_numpy, 1e-5) << args;
    EXPECT_LE(vs_forward, 1e-5) << args;
    std::printf("[ %s ] layer scenes (GPU): vs NumPy %.2g, vs the forward %.2g\n", args, vs_numpy, vs_forward);
  }
}
