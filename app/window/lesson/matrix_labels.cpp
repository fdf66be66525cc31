// Names for a walkthrough matrix's rows and columns (lesson.h): tokens, or dimensions by the matrix's name; the
// printed numbers that disagree with the computation, each said in a sentence.
#include <cstdio>
#include <string>

#include "window/lesson/lesson.h"

namespace attnscope::app {

namespace {

std::vector<std::string> numbered(const std::string& prefix, Eigen::Index count) {
  std::vector<std::string> names;
  for (Eigen::Index k = 0; k < count; ++k) names.push_back(prefix + std::to_string(k + 1));
  return names;
}

// A token as a short label: at most 8 characters, an ellipsis marking the cut.
std::vector<std::string> shortened(const std::vector<std::string>& tokens) {
  std::vector<std::string> names;
  for (const std::string& t : tokens) names.push_back(t.size() <= 8 ? t : t.substr(0, 7) + "~");
  return names;
}

// The space a matrix's columns live in, by its name: "Q", "W_Q", "b_Q", "Q rotated" are a head's query space.
std::string columnSpace(const std::string& name, bool head_step) {
  if (name == "output" && head_step) return "v";  // a head's output: weights V
  const auto is = [&](const char* letter) {
    return name == letter || name == std::string("W_") + letter || name == std::string("b_") + letter ||
           name.rfind(std::string(letter) + " ", 0) == 0;
  };
  if (is("Q")) return "q";
  if (is("K")) return "k";
  if (is("V")) return "v";
  if (name == "concat") return "c";
  return "dim ";  // X, X_key, X_value, W_O, b_O, the layer's output (a head's output is named "output" too: below)
}

}  // namespace

AxisNames dimensionNames(const std::string& name, Eigen::Index rows, Eigen::Index cols, bool head_step) {
  AxisNames names;
  names.cols = numbered(columnSpace(name, head_step), cols);
  if (name.rfind("b_", 0) == 0)
    names.rows = {"b"};
  else if (name == "W_O")
    names.rows = numbered("c", rows);
  else  // W_Q, W_K, W_V: one row per input dimension
    names.rows = numbered("dim ", rows);
  return names;
}

AxisNames walkAxisNames(const StepMatrix& m, bool head_step) {
  const Eigen::Index rows = m.computed.rows(), cols = m.computed.cols();
  AxisNames names = dimensionNames(m.name, rows, cols, head_step);
  if (m.row_labels.size() == static_cast<std::size_t>(rows)) names.rows = shortened(m.row_labels);
  if (m.col_labels.size() == static_cast<std::size_t>(cols)) names.cols = shortened(m.col_labels);
  return names;
}

namespace {
std::string ownerOf(const Step& step) {
  return step.head >= 0 ? "Head " + std::to_string(step.head + 1) + "'s " : "The ";
}
}  // namespace

std::vector<std::string> disagreementSentences(const Step& step) {
  std::vector<std::string> sentences;
  for (const StepMatrix& m : step.matrices) {
    if (m.disagreements.empty()) continue;
    const AxisNames names = walkAxisNames(m, step.head >= 0);
    for (const Disagreement& d : m.disagreements) {
      const std::string& row = names.rows[static_cast<std::size_t>(d.row)];
      const std::string& col = names.cols[static_cast<std::size_t>(d.col)];
      // Weights and scores are a query's over a key: "x1 -> x3"; other matrices by row and column.
      std::string what;
      if (m.name == "weights")
        what = "weight for " + row + " -> " + col;
      else if (m.name == "scores" || m.name == "scaled scores")
        what = m.name.substr(0, m.name.size() - 1) + " for " + row + " -> " + col;
      else
        what = m.name + " at row " + row + ", column " + col;
      // Printed as the text printed it, computed as the tables show it (walkthrough.h): "0 printed, 2 computed."
      sentences.push_back(ownerOf(step) + what + " does not match the text: " +
                          printedNumber(d.printed, m.printedDecimals()) + " printed, " + computedNumber(d.computed) +
                          " computed.");
    }
  }
  return sentences;
}

std::vector<MisprintedStep> misprintedSteps(const Walkthrough& walk) {
  std::vector<MisprintedStep> steps;
  for (std::size_t k = 0; k < walk.steps.size(); ++k) {
    const Step& step = walk.steps[k];
    std::string what;
    for (const StepMatrix& m : step.matrices)
      if (!m.disagreements.empty()) what += (what.empty() ? ownerOf(step) : ", ") + m.name;
    if (!what.empty()) steps.push_back({static_cast<int>(k), what});
  }
  return steps;
}

}  // namespace attnscope::app
