// Gemma 1, 2 and 3: what is particular to the family (its maps against NumPy for model_type gemma, gemma2,
// gemma3_text and gemma3, its hostile configs and tensor, are rows of test_family_references.cpp): every switch
// (soft-capping, local and global layers, query_pre_attn_scalar, sandwich norms, q/k norms, the local rope base,
// the embedding scale's dtype) shown to change the maps.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "attnscope/model/model.h"
#include "compare.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace model = attnscope::model;

namespace {

std::string checkpoint(const std::string& args) { return model_test::referenceCheckpoint("gemma_reference.py", args); }

using model_test::idsOf;
using model_test::kLong;
using model_test::kWeightTol;
using model_test::worstMap;

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

}  // namespace
