// Head-type scores: how much of each query's attention a head puts on the previous token, the token itself,
// the first token, a local window, the token after an earlier occurrence (induction), or earlier occurrences
// (duplicate token). Definitions in analysis.h and the README.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "attnscope/analysis/analysis.h"
#include "attnscope/compute/similarity.h"
#include "attnscope/error.h"

namespace attnscope {

namespace {

// A running mean over the rows that qualify; nullopt when none did.
struct Mean {
  double sum = 0;
  int count = 0;
  void add(double x) {
    sum += x;
    ++count;
  }
  // Clamped to [0, 1]: a row's float32 weights may sum to 1 + 1e-7.
  std::optional<double> value() const {
    return count ? std::optional<double>(std::clamp(sum / count, 0.0, 1.0)) : std::nullopt;
  }
};

}  // namespace

HeadTypeScores headTypeScores(const Scene& scene, const Matrix& weights, int local_window) {
  // weights: (n_q, n_k)
  if (local_window < 0) throw InputError("window", "0 or more", std::to_string(local_window));
  const int n_q = static_cast<int>(weights.rows()), n_k = static_cast<int>(weights.cols());
  const std::vector<std::string>& q_tokens = scene.query_tokens;
  const std::vector<std::string>& k_tokens = scene.keyTokens();
  const bool have_tokens = static_cast<int>(q_tokens.size()) == n_q && static_cast<int>(k_tokens.size()) == n_k;
  Mean previous, current, first, local, induction, duplicate;
  const std::vector<std::uint8_t> single_key_rows = singleKeyRows(scene);
  for (int i = 0; i < n_q; ++i) {
    const auto row = weights.row(i).cast<double>();
    if (row.sum() <= 0) continue;  // every key masked: this row attends nothing
    // One allowed key (query 0 under a causal mask): weight 1 by construction, whatever the head does.
    if (static_cast<std::size_t>(i) < single_key_rows.size() && single_key_rows[static_cast<std::size_t>(i)]) continue;
    if (i >= 1 && i - 1 < n_k) previous.add(row[i - 1]);
    if (i < n_k) current.add(row[i]);
    first.add(row[0]);
    double near = 0;
    for (int j = 0; j < n_k; ++j)
      if (std::abs(i - j) <= local_window) near += row[j];
    local.add(near);
    if (!have_tokens) continue;
    // Earlier occurrences of this query's token among the keys before position i.
    int latest = -1;
    double on_duplicates = 0;
    for (int j = 0; j < i && j < n_k; ++j)
      if (k_tokens[static_cast<std::size_t>(j)] == q_tokens[static_cast<std::size_t>(i)]) {
        on_duplicates += row[j];
        latest = j;
      }
    if (latest < 0) continue;
    duplicate.add(on_duplicates);
    if (latest + 1 < n_k) induction.add(row[latest + 1]);
  }
  return {previous.value(), current.value(), first.value(), local.value(), induction.value(), duplicate.value()};
}

std::vector<HeadTypeScores> allHeadTypeScores(const Scene& scene, const Result& result, int local_window) {
  std::vector<HeadTypeScores> scores;
  for (const HeadResult& hr : result.heads) scores.push_back(headTypeScores(scene, hr.weights, local_window));
  return scores;
}

const std::vector<std::string>& headTypeScoreNames() {
  static const std::vector<std::string> names = {"previous_token", "current_token", "first_token",
                                                 "local",          "induction",     "duplicate_token"};
  return names;
}

std::optional<double> headTypeScore(const HeadTypeScores& s, const std::string& name) {
  if (name == "previous_token") return s.previous_token;
  if (name == "current_token") return s.current_token;
  if (name == "first_token") return s.first_token;
  if (name == "local") return s.local;
  if (name == "induction") return s.induction;
  if (name == "duplicate_token") return s.duplicate_token;
  std::string listed;
  for (const std::string& n : headTypeScoreNames()) listed += (listed.empty() ? "" : ", ") + n;
  throw InputError("score", "one of " + listed, "'" + name + "'");
}

std::string headTypeLabel(const HeadTypeScores& scores, double threshold) {
  // "local" is left out of the label: a window of 2 covers most of any map on a short sequence.
  std::string best;
  double best_value = threshold;
  for (const std::string& name : headTypeScoreNames()) {
    if (name == "local") continue;
    const std::optional<double> v = headTypeScore(scores, name);
    if (v && *v >= best_value && (best.empty() || *v > best_value)) {
      best = name;
      best_value = *v;
    }
  }
  return best;
}

}  // namespace attnscope
