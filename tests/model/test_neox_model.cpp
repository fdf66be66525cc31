// GPT-NeoX / Pythia: what is particular to the family (its maps against NumPy in Pythia's exact tensor names, its
// hostile configs and fused tensor, are rows of test_family_references.cpp): every switch (parallel or sequential
// residual, the rotary fraction, the rotary base, the GELU) shown to change the maps.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attnscope/model/model.h"
#include "compare.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace model = attnscope::model;

namespace {

std::string checkpoint(const std::string& args) { return model_test::referenceCheckpoint("neox_reference.py", args); }

using model_test::idsOf;
using model_test::kLong;
using model_test::kShort;
using model_test::kWeightTol;
using model_test::worstMap;

// Each switch changes the maps: the same weights (same seed) with one switch flipped give maps that the engine
// matches to NumPy within kWeightTol, and that differ from the unflipped ones by more than 10 x kWeightTol, so
// that a forward ignoring the switch would fail the match. Seen: the residual form 0.55, the rotary fraction
// 0.98, the base 0.67; the GELU only 1.8e-4 (tanh and erf GELU differ by under 1e-3 anywhere), still 18x the
// tolerance, against engine-vs-NumPy errors of 6e-7.
TEST(NeoxSwitches, EachChangesTheMaps) {
  const std::string text = " --text '" + kShort + "'";
  const json base = json::parse(model_test::slurp(checkpoint(text) + "/expected.json"));
  for (const char* flip : {"--sequential", "--rotary-pct 0.5", "--rotary-base 100", "--act gelu_new"}) {
    SCOPED_TRACE(flip);
    const std::string dir = checkpoint(std::string(flip) + text);
    const json expected = json::parse(model_test::slurp(dir + "/expected.json"));
    const model::ForwardResult f = model::modelForward(model::loadModel(dir), idsOf(expected));
    const double matched = worstMap(f, expected), moved = worstMap(f, base);
    EXPECT_LE(matched, kWeightTol);
    EXPECT_GT(moved, 10 * kWeightTol);
    std::printf("[ %s ] vs its NumPy %.2g; vs the unflipped maps %.2g\n", flip, matched, moved);
  }
}

}  // namespace
