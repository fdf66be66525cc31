// attnscope walkthrough [SCENE]: the steps of multi-head attention as text, matrices aligned, and one
// `differs:` line for each number the seed's worked example prints that disagrees with the computed one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/analysis/walkthrough.h"
#include "attnscope/text_bounds.h"
#include "cli/cli.h"

namespace attnscope::cli {

namespace {

constexpr int kMaxShown = 12;  // rows and columns shown of a larger matrix
constexpr std::size_t kWrap = 100;

// A matrix as aligned lines: an optional header of column labels, then "label [ a  b  c ]" per row.
std::vector<std::string> matrixLines(const Matrix& m, const std::vector<std::string>& row_labels,
                                     const std::vector<std::string>& col_labels, int decimals, bool fixed) {
  // Labels elided and made printable: a label is printed in every matrix, so its length must not multiply.
  std::vector<std::string> rows, cols;
  for (const std::string& l : row_labels) rows.push_back(terminalLabel(l));
  for (const std::string& l : col_labels) cols.push_back(terminalLabel(l));
  const long shown_rows = std::min<long>(m.rows(), kMaxShown), shown_cols = std::min<long>(m.cols(), kMaxShown);
  std::vector<std::vector<std::string>> cells(static_cast<std::size_t>(shown_rows));
  std::vector<std::size_t> width(static_cast<std::size_t>(shown_cols), 1);
  for (long j = 0; j < shown_cols && !cols.empty(); ++j) width[j] = cols[j].size();
  for (long i = 0; i < shown_rows; ++i)
    for (long j = 0; j < shown_cols; ++j) {
      const double x = m(i, j);
      cells[i].push_back(fixed && std::isfinite(x) ? printedNumber(x, decimals) : computedNumber(x, decimals));
      width[j] = std::max(width[j], cells[i].back().size());
    }
  std::size_t label_width = 0;
  for (long i = 0; i < shown_rows && !rows.empty(); ++i) label_width = std::max(label_width, rows[i].size());
  const auto pad = [](const std::string& s, std::size_t w) { return std::string(w - std::min(w, s.size()), ' ') + s; };

  std::vector<std::string> lines;
  if (!cols.empty()) {
    std::string header = std::string(label_width + (label_width ? 1 : 0), ' ') + "[";
    for (long j = 0; j < shown_cols; ++j) header += (j == 0 ? " " : "  ") + pad(cols[j], width[j]);
    header[label_width + (label_width ? 1 : 0)] = ' ';
    lines.push_back(header);
  }
  for (long i = 0; i < shown_rows; ++i) {
    std::string line = rows.empty() ? "" : pad(rows[i], label_width) + " ";
    line += "[";
    for (long j = 0; j < shown_cols; ++j) line += (j == 0 ? " " : "  ") + pad(cells[i][j], width[j]);
    line += m.cols() > shown_cols ? "  ... ]" : " ]";
    lines.push_back(line);
  }
  if (m.rows() > shown_rows || m.cols() > shown_cols)
    lines.push_back("(showing " + std::to_string(shown_rows) + " of " + std::to_string(m.rows()) + " rows, " +
                    std::to_string(shown_cols) + " of " + std::to_string(m.cols()) + " columns)");
  return lines;
}

void printWrapped(const std::string& text, const std::string& indent) {
  std::string line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > kWrap) {
      std::printf("%s%s\n", indent.c_str(), line.c_str());
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) std::printf("%s%s\n", indent.c_str(), line.c_str());
}

// "x3" for a row of token rows, "x1 -> x3" for a (query, key) entry, "" when the rows are not tokens.
std::string entryTokens(const StepMatrix& m, const Disagreement& d) {
  std::string s = d.row < static_cast<int>(m.row_labels.size()) ? terminalLabel(m.row_labels[d.row]) : "";
  if (d.col < static_cast<int>(m.col_labels.size())) s += " -> " + terminalLabel(m.col_labels[d.col]);
  return s;
}

void printStep(const Step& step, int number_of_step) {
  std::printf("\nStep %d. %s\n", number_of_step, step.title.c_str());
  printWrapped(step.note, "  ");
  for (const StepMatrix& m : step.matrices) {
    std::printf("  %s (%ld x %ld)%s\n", m.name.c_str(), static_cast<long>(m.computed.rows()),
                static_cast<long>(m.computed.cols()), m.printed ? "  computed | as printed in the text" : "");
    std::vector<std::string> left = matrixLines(m.computed, m.row_labels, m.col_labels, 4, false);
    if (m.printed) {
      const std::vector<std::string> right =
          matrixLines(*m.printed, {}, {}, m.printedDecimals(), true);
      std::size_t w = 0;
      for (const std::string& l : left) w = std::max(w, l.size());
      const std::size_t offset = left.size() - std::min(left.size(), right.size());  // skip the column header
      for (std::size_t i = 0; i < left.size(); ++i) {
        left[i] += std::string(w - left[i].size(), ' ');
        if (i >= offset && i - offset < right.size()) left[i] += "   |   " + right[i - offset];
      }
    }
    for (const std::string& l : left) std::printf("    %s\n", l.c_str());
    const int decimals = m.printedDecimals();
    for (const Disagreement& d : m.disagreements) {
      const std::string tokens = entryTokens(m, d);
      std::printf(
          "differs: step %d \"%s\", head %d, matrix %s, entry (%d, %d)%s: printed %s, computed %s, "
          "difference %s\n",
          number_of_step, step.title.c_str(), step.head + 1, m.name.c_str(), d.row + 1, d.col + 1,
          tokens.empty() ? "" : (" " + tokens).c_str(), printedNumber(d.printed, decimals).c_str(),
          computedNumber(d.computed).c_str(), computedNumber(d.difference(), 4, true).c_str());
    }
  }
}

}  // namespace

int runWalkthrough(Args& args) {
  const std::vector<std::string> files = args.positionals(1);
  const Scene scene = files.empty() ? workedExampleScene() : loadSceneFile(files[0]);
  CpuBackend backend;
  const Result result = backend.compute(scene);
  const Walkthrough walkthrough = buildWalkthrough(scene, result);

  std::printf("attnscope walkthrough: %s; %d head%s, d_model %d, %d query and %d key tokens\n",
              files.empty() ? "the built-in worked example of seed 001" : quoteFragment(files[0], 200).c_str(), scene.numHeads(),
              scene.numHeads() == 1 ? "" : "s", scene.d_model, scene.nQ(), scene.nK());
  std::printf(
      "(rows and columns are counted from 1; a printed number differs when it is further than half a unit\n"
      " of its last printed digit from the computed one)\n");
  int compared = 0;
  for (std::size_t i = 0; i < walkthrough.steps.size(); ++i) {
    printStep(walkthrough.steps[i], static_cast<int>(i) + 1);
    for (const StepMatrix& m : walkthrough.steps[i].matrices)
      compared += m.printed ? static_cast<int>(m.printed->size()) : 0;
  }
  std::printf("\n");
  if (compared == 0)
    std::printf("No printed numbers to compare: the scene's inputs differ from the worked example's.\n");
  else
    std::printf("%d of the %d numbers the text prints differ from the computed ones (the differs: lines above).\n",
                walkthrough.disagreementCount(), compared);
  return 0;
}

}  // namespace attnscope::cli
