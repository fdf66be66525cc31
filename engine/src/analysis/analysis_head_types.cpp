// Head-type scores: how much of each query's attention a head puts on the previous token, the token itself,
// the first token, a local window, the token after an earlier occurrence (induction), or earlier occurrences
// (duplicate token). Definitions in analysis.h and docs/cli.md. Every score is a sum over query rows, so a head
// without its map streams through weightRows in blocks of rows.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unordered_map>

#include "attnscope/analysis/analysis.h"
#include "attnscope/compute/similarity.h"
#include "attnscope/compute/tiles.h"
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

// What the scores need besides the weights, the same for every head, so built once per scene: O(n) memory.
struct HeadTypeContext {
  int window = 0;
  std::vector<std::uint8_t> single_key_rows;  // (n_q) rows with one allowed key (singleKeyRows)
  std::vector<int> latest;     // (n_q) the latest key j < i whose token is query i's, -1 if none (or no tokens)
  std::vector<int> prev_same;  // (n_k) the latest key j' < j with key j's token, -1 if none

  HeadTypeContext(const Scene& scene, int n_q, int n_k, int local_window) : window(local_window) {
    if (local_window < 0) throw InputError("window", "0 or more", std::to_string(local_window));
    single_key_rows = singleKeyRows(scene);
    latest.assign(static_cast<std::size_t>(n_q), -1);
    prev_same.assign(static_cast<std::size_t>(n_k), -1);
    const std::vector<std::string>& q_tokens = scene.query_tokens;
    const std::vector<std::string>& k_tokens = scene.keyTokens();
    if (static_cast<int>(q_tokens.size()) != n_q || static_cast<int>(k_tokens.size()) != n_k) return;
    // Keys enter the table in order, so at row i it holds the latest occurrence among keys [0, min(i, n_k)).
    std::unordered_map<std::string_view, int> last;
    int next_key = 0;
    for (int i = 0; i < n_q; ++i) {
      for (; next_key < std::min(i, n_k); ++next_key) {
        auto [it, fresh] = last.try_emplace(k_tokens[static_cast<std::size_t>(next_key)], next_key);
        if (!fresh) {
          prev_same[static_cast<std::size_t>(next_key)] = it->second;
          it->second = next_key;
        }
      }
      const auto it = last.find(q_tokens[static_cast<std::size_t>(i)]);
      if (it != last.end()) latest[static_cast<std::size_t>(i)] = it->second;
    }
  }
};

// One head's scores accumulated row by row, so a long head streams through weightRows.
struct HeadTypeSums {
  Mean previous, current, first, local, induction, duplicate;

  // w: query row i's weights over the n_k keys.
  void addRow(const HeadTypeContext& c, const float* w, int n_k, int i) {
    double total = 0;
    for (int j = 0; j < n_k; ++j) total += w[j];
    if (total <= 0) return;  // every key masked: this row attends nothing
    // One allowed key (query 0 under a causal mask): weight 1 by construction, whatever the head does.
    if (static_cast<std::size_t>(i) < c.single_key_rows.size() && c.single_key_rows[static_cast<std::size_t>(i)])
      return;
    if (i >= 1 && i - 1 < n_k) previous.add(w[i - 1]);
    if (i < n_k) current.add(w[i]);
    first.add(w[0]);
    double near = 0;  // keys with |i - j| <= window, in key order
    for (long j = std::max(0L, static_cast<long>(i) - c.window); j < n_k && j <= static_cast<long>(i) + c.window; ++j)
      near += w[j];
    local.add(near);
    const int latest = c.latest[static_cast<std::size_t>(i)];
    if (latest < 0) return;
    // Earlier occurrences of this query's token among the keys before position i, latest first.
    std::vector<int>& chain = chain_;
    chain.clear();
    for (int j = latest; j >= 0; j = c.prev_same[static_cast<std::size_t>(j)]) chain.push_back(j);
    double on_duplicates = 0;  // summed in key order, as a scan of the row would
    for (auto j = chain.rbegin(); j != chain.rend(); ++j) on_duplicates += w[*j];
    duplicate.add(on_duplicates);
    if (latest + 1 < n_k) induction.add(w[latest + 1]);
  }
  HeadTypeScores finish() const {
    return {previous.value(), current.value(), first.value(), local.value(), induction.value(), duplicate.value()};
  }

 private:
  std::vector<int> chain_;
};

}  // namespace

HeadTypeScores headTypeScores(const Scene& scene, const Eigen::Ref<const Matrix>& weights, int local_window) {
  // weights: (n_q, n_k)
  const int n_q = static_cast<int>(weights.rows()), n_k = static_cast<int>(weights.cols());
  const HeadTypeContext context(scene, n_q, n_k, local_window);
  HeadTypeSums sums;
  for (int i = 0; i < n_q; ++i) sums.addRow(context, weights.row(i).data(), n_k, i);
  return sums.finish();
}

std::vector<HeadTypeScores> allHeadTypeScores(const Scene& scene, const Result& result, int local_window) {
  const int h = static_cast<int>(result.heads.size()), n_q = scene.nQ(), n_k = scene.nK();
  const HeadTypeContext context(scene, n_q, n_k, local_window);
  std::vector<HeadTypeScores> scores(static_cast<std::size_t>(h));
  const KeyMask mask(scene);
  // Query rows per block: about 16 MiB of one head's weights, recomputed through weightRows when the result
  // keeps no maps; the heads spread over the OpenMP threads.
  const int block =
      std::clamp(static_cast<int>((std::size_t{4} << 20) / std::max<std::size_t>(1, n_k)), 1, std::max(1, n_q));
#pragma omp parallel for schedule(dynamic, 1)
  for (int head = 0; head < h; ++head) {
    const HeadResult& hr = result.heads[static_cast<std::size_t>(head)];
    HeadTypeSums sums;
    if (hr.hasMap()) {
      for (int i = 0; i < n_q; ++i) sums.addRow(context, hr.weights.row(i).data(), n_k, i);
    } else {
      Matrix w;  // (block, n_k)
      for (int row0 = 0; row0 < n_q; row0 += block) {
        const int row1 = std::min(n_q, row0 + block);
        weightRows(scene, result, mask, head, row0, row1, w);
        for (int r = 0; r < row1 - row0; ++r) sums.addRow(context, w.row(r).data(), n_k, row0 + r);
      }
    }
    scores[static_cast<std::size_t>(head)] = sums.finish();
  }
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
