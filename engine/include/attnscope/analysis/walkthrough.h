// The worked example as ordered, named steps, each with its computed matrices and, where the source text
// printed numbers for that step, the printed ones beside them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attnscope/compute/result.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// One entry where the printed number and the computed one disagree beyond the printed precision.
struct Disagreement {
  int row = 0, col = 0;  // 0-based
  double printed = 0, computed = 0;
  double difference() const { return computed - printed; }
};

struct StepMatrix {
  std::string name;                // "Q", "K", "V", "scores", "scaled scores", "weights", "output", ...
  Matrix computed;
  std::vector<std::string> row_labels, col_labels;  // tokens, where rows or columns are tokens; else empty
  std::optional<Matrix> printed;   // what the text printed for this matrix, when it printed it
  double printed_tolerance = 0;    // half a unit in the last printed digit (0.005 for 2 decimals)
  int printedDecimals() const;     // the decimals the text printed with (2 for 0.005, 0 for whole numbers)
  std::vector<Disagreement> disagreements;  // only entries that disagree
  // The text prints this matrix for the worked example, but the scene (same tokens) was edited where this
  // matrix depends on it, so the printed numbers were left out: the view says they no longer apply.
  bool printed_dropped = false;
};

struct Step {
  std::string title;  // "Head 1: Q = X W_Q", ...
  int head = -1;      // -1 for steps that are not per head
  std::string note;   // why this step, or how a value was derived (e.g. X from the printed products)
  std::vector<StepMatrix> matrices;
};

struct Walkthrough {
  std::vector<Step> steps;
  int disagreementCount() const;
};

// How the walkthrough's numbers are written, one way for the CLI and the window. A computed number: up to
// `decimals` decimals, trailing zeros dropped (0.70710677 -> "0.7071", 2 -> "2", -0 -> "0"; "-inf" for a masked
// score), with a sign when `sign`. A printed one as the text printed it (0.30, not 0.3).
std::string computedNumber(double x, int decimals = 4, bool sign = false);
std::string printedNumber(double x, int decimals);

// Steps for any scene; the printed numbers of seed 001 are attached when the scene is the worked example
// (same inputs and projections), so editing the scene drops the comparison for matrices that changed.
Walkthrough buildWalkthrough(const Scene& scene, const Result& result);

}  // namespace attnscope
