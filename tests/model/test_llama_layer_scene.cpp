// A Llama-family layer opened as a scene (`attnscope model DIR --layer L --scene-out S.json`): each layer of the
// tiny Llama (GQA, llama3 RoPE scaling, biases), Mistral (MQA, sliding window), Qwen2 (q/k/v biases, linear
// scaling, a window from layer 2) and Qwen3 (q_norm / k_norm, head_dim != hidden / heads) checkpoints,
// computed by the CPU backend, gives the forward's maps and the NumPy float64 forward's
// (llama_reference.py). The GPU backend's run of the same scenes: tests/gpu/test_gpu_family_scenes.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/scene/scene_json.h"
#include "compare.h"
#include "model/test_model_support.h"

using nlohmann::json;

namespace {

struct Case {
  const char* args;
  int layers;
  bool grouped, rope_scaled, qk_norm, window;
};

const char* const kText = "Hello there, attention heads! A window of five keys.";

class LlamaLayerScene : public ::testing::TestWithParam<Case> {};

TEST_P(LlamaLayerScene, EachLayerGivesTheForwardsMaps) {
  const Case c = GetParam();
  const std::string dir = model_test::tempDir() + "/ckpt";
  const model_test::CommandRun made = model_test::run(std::string(model_test::kPython) + " '" + ATTNSCOPE_SOURCE_DIR +
                                                      "/tests/model/llama_reference.py' '" + dir + "' " + c.args +
                                                      " --text '" + kText + "'");
  ASSERT_EQ(made.status, 0) << made.err;
  const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
  ASSERT_EQ(expected["weights"].size(), static_cast<std::size_t>(c.layers));
  attnscope::CpuBackend cpu;
  double vs_numpy = 0, vs_forward = 0;
  bool any_window = false;
  for (int l = 0; l < c.layers; ++l) {
    const std::string out = model_test::tempDir(), scene_path = out + "/layer.json";
    const model_test::CommandRun r =
        model_test::run(std::string("'") + ATTNSCOPE_BINARY + "' model '" + dir + "' --text '" + kText + "' --layer " +
                        std::to_string(l + 1) + " --scene-out '" + scene_path + "' --out '" + out + "/maps.json'");
    ASSERT_EQ(r.status, 0) << r.err;
    const attnscope::Scene s = attnscope::loadSceneFile(scene_path);
    EXPECT_EQ(s.grouped(), c.grouped);
    EXPECT_EQ(s.rope && s.rope->scaling.type != attnscope::RopeScaling::Type::None, c.rope_scaled);
    EXPECT_EQ(s.q_norm.has_value() && s.k_norm.has_value(), c.qk_norm);
    any_window = any_window || s.mask == attnscope::MaskKind::Explicit;  // a sliding window: an explicit mask
    const json maps = json::parse(model_test::slurp(out + "/maps.json"));
    const attnscope::Result result = cpu.compute(s);
    for (int h = 0; h < s.numHeads(); ++h) {
      const std::size_t hh = static_cast<std::size_t>(h), ll = static_cast<std::size_t>(l);
      vs_numpy = attnscope::test::worse(
          vs_numpy, attnscope::test::maxError(result.heads[hh].weights,
                                              attnscope::test::jsonMatrix(expected["weights"][ll][hh]), {}, "numpy"));
      vs_forward = attnscope::test::worse(
          vs_forward, attnscope::test::maxError(result.heads[hh].weights,
                                                attnscope::test::jsonMatrix(maps["layers"][0]["heads"][hh]), {}, "forward"));
    }
  }
  EXPECT_EQ(any_window, c.window);
  // Seen: vs NumPy 1.5e-6 (llama), vs the forward 9.5e-7. float32 against float64 (the forward's own
  // tolerance, tests/model/test_llama_model.cpp), and two float32
  // orders of summation (the scene projects per head, the forward all heads at once).
  EXPECT_LE(vs_numpy, 1e-5);
  EXPECT_LE(vs_forward, 1e-5);
  std::printf("[ %s ] layer scenes (CPU): vs NumPy %.2g, vs the forward %.2g\n", c.args, vs_numpy, vs_forward);
}

INSTANTIATE_TEST_SUITE_P(
    Families, LlamaLayerScene,
    ::testing::Values(Case{"--family llama --shards 3 --rope-scaling llama3 --attention-bias --rope-theta 500000", 2,
                           true, true, false, false},
                      Case{"--family mistral --dtype BF16 --window 5 --kv-heads 1 --positions 256", 2, true, false,
                           false, true},
                      Case{"--family qwen2 --dtype F16 --tie --rope-scaling linear --window 7 --layers 3 --positions 256",
                           3, true, true, false, true},
                      Case{"--family qwen3 --head-dim 12 --seed 5", 2, true, false, true, false}));

}  // namespace
