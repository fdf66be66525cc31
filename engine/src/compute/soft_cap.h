// A soft cap on attention scores, s -> cap tanh(s / cap) (Result::score_cap): the one place every score path caps
// (the forward's kept and flash-style attention, the tiles, the max-pooled pass, a capture's row statistics).
#pragma once

#include "attnscope/types.h"

namespace attnscope {

// In place on a block of scores; cap <= 0: none. Apply before the mask (a masked cell's -inf stays as the mask
// sets it afterwards).
template <typename Derived>
void softCapScores(Eigen::MatrixBase<Derived>& scores, float cap) {
  if (cap > 0) scores = ((scores.array() * (1.0f / cap)).tanh() * cap).matrix();
}

}  // namespace attnscope
