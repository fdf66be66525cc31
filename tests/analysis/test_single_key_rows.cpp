// Rows with a single allowed key (query 0 under a causal mask) carry no information about the head: their
// weight is 1 by construction. The head-type scores, the per-head statistics and so the window's per-head colour
// maximum leave them out. Numbers worked out by hand on a scene whose scores are all 0.
#include <gtest/gtest.h>

#include <cmath>

#include "attnscope/analysis/analysis.h"
#include "attnscope/compute/cpu_backend.h"
#include "attnscope/compute/similarity.h"

namespace attnscope {
namespace {

// Three tokens, d_model = 1, every input 0: every score is 0, so each query row is uniform over its allowed keys.
// Causal: row 0 = [1, 0, 0] (one key), row 1 = [1/2, 1/2, 0], row 2 = [1/3, 1/3, 1/3].
Scene zeroScoresCausal() {
  Scene s;
  s.d_model = 1;
  s.query_tokens = {"a", "b", "c"};
  s.query = Matrix::Zero(3, 1);
  HeadParams head;
  head.w_q = Matrix::Ones(1, 1);
  head.w_k = Matrix::Ones(1, 1);
  head.w_v = Matrix::Ones(1, 1);
  s.heads = {head};
  s.mask = MaskKind::Causal;
  return s;
}

// float32 weights (1/2, 1/3) against double formulas: the error seen is below 3e-8.
constexpr double kTol = 1e-6;

TEST(SingleKeyRows, CausalMarksOnlyQueryZero) {
  const std::vector<std::uint8_t> rows = singleKeyRows(zeroScoresCausal());
  EXPECT_EQ(rows, (std::vector<std::uint8_t>{1, 0, 0}));
  Scene none = zeroScoresCausal();
  none.mask = MaskKind::None;
  EXPECT_EQ(singleKeyRows(none), (std::vector<std::uint8_t>{0, 0, 0}));
  // Key padding of keys 1 and 2 leaves every row one key (key 0).
  none.key_padding = {0, 1, 1};
  EXPECT_EQ(singleKeyRows(none), (std::vector<std::uint8_t>{1, 1, 1}));
}

TEST(SingleKeyRows, StatisticsLeaveOutTheForcedRow) {
  const Result r = CpuBackend(1).compute(zeroScoresCausal());
  const HeadStats& st = r.stats[0];
  // Rows 1 and 2 only: entropy (ln 2 + ln 3) / 2; distance row 1: 1/2 * 1 = 0.5, row 2: (2 + 1 + 0) / 3 = 1,
  // mean 0.75; max weight 1/2 (row 0's forced 1 left out).
  EXPECT_NEAR(st.entropy, (std::log(2.0) + std::log(3.0)) / 2, kTol);
  EXPECT_NEAR(st.mean_distance, 0.75, kTol);
  EXPECT_NEAR(st.max_weight, 0.5, kTol);
}

TEST(SingleKeyRows, HeadTypeScoresLeaveOutTheForcedRow) {
  const Scene s = zeroScoresCausal();
  const HeadTypeScores t = allHeadTypeScores(s, CpuBackend(1).compute(s))[0];
  // Rows 1 and 2: first token 1/2 and 1/3 -> 5/12 (with row 0's forced 1 it was 11/18 and labelled first_token);
  // current 1/2 and 1/3 -> 5/12; previous (key i - 1) 1/2 and 1/3 -> 5/12. None reaches 0.5: no label.
  EXPECT_NEAR(*t.first_token, 5.0 / 12, kTol);
  EXPECT_NEAR(*t.current_token, 5.0 / 12, kTol);
  EXPECT_NEAR(*t.previous_token, 5.0 / 12, kTol);
  EXPECT_EQ(headTypeLabel(t), "");
}

}  // namespace
}  // namespace attnscope
