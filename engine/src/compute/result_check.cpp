// The Result's numbers checked finite before anyone reads them: a scene of finite numbers (validateScene) can
// still overflow float32 in its products (inputs near 3e38), and a NaN map must never reach a view, a statistic
// or an exporter as if it were a result.
#include <cmath>
#include <string>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/scene/key_mask.h"
#include "attnscope/text_bounds.h"

namespace attnscope {

namespace {

// The first non-finite entry of m as (row, col), or false. x * 0 is NaN only for a non-finite x, and Eigen
// vectorises the sum; the scan that finds the entry runs only when there is one.
template <typename Derived>
bool firstNonFinite(const Eigen::MatrixBase<Derived>& m, Eigen::Index& row, Eigen::Index& col) {
  if (m.size() == 0 || !std::isnan((m.array() * 0.0f).sum())) return false;
  for (row = 0; row < m.rows(); ++row)
    for (col = 0; col < m.cols(); ++col)
      if (!std::isfinite(m(row, col))) return true;
  return false;
}

std::string valueText(float v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

std::string tokenText(const std::vector<std::string>& tokens, Eigen::Index i) {
  return i < static_cast<Eigen::Index>(tokens.size())
             ? " (" + quoteFragment(tokens[static_cast<std::size_t>(i)], 40) + ")"
             : "";
}

// Refuses `m` (rows are query rows unless key_rows) when it holds a non-finite entry.
void require(const Scene& scene, const Matrix& m, const std::string& field, bool key_rows, const std::string& why) {
  Eigen::Index i = 0, j = 0;
  if (!firstNonFinite(m, i, j)) return;
  const std::string row = (key_rows ? "key row " : "query row ") + std::to_string(i) +
                          tokenText(key_rows ? scene.keyTokens() : scene.query_tokens, i);
  throw InputError(field, "finite numbers (float32)",
                   valueText(m(i, j)) + " at " + row + ", column " + std::to_string(j) + ": " + why);
}

}  // namespace

void checkResultFinite(const Scene& scene, const Result& result) {
  for (std::size_t h = 0; h < result.heads.size(); ++h) {
    const HeadResult& hr = result.heads[h];
    const std::string head = "heads[" + std::to_string(h) + "].";
    require(scene, hr.q, head + "q", false, "the projection X W_Q + b_Q overflows float32");
    require(scene, hr.k(), head + "k", true, "the projection X W_K + b_K overflows float32");
    require(scene, hr.v(), head + "v", true, "the projection X W_V + b_V overflows float32");
    // Finite q and k whose dot product overflows: the score is inf, and the softmax's inf - inf is NaN. With the
    // row statistics (the CPU backend) a row's sum says so in O(1): NaN, or 0 although some key is allowed;
    // without them (a GPU read-back) the map itself is scanned.
    const auto overflow = [&](const std::string& value, Eigen::Index row, const std::string& key) {
      throw InputError(head + "weights", "finite numbers (float32)",
                       value + " at query row " + std::to_string(row) + tokenText(scene.query_tokens, row) + key +
                           ": a score scale * q . k of that row overflows float32, so its softmax is undefined");
    };
    if (hr.row_sum.size() == scene.nQ()) {
      const KeyMask mask(scene);
      for (Eigen::Index r = 0; r < hr.row_sum.size(); ++r) {
        if (std::isfinite(hr.row_sum[r]) && (hr.row_sum[r] > 0 || mask.allowedCount(static_cast<int>(r)) == 0))
          continue;
        // Rare: name the first key whose weight is undefined (in the map when kept, else the first allowed key).
        Eigen::Index key = 0;
        while (key + 1 < scene.nK() && (hr.hasMap() ? std::isfinite(hr.weights(r, key))
                                                    : !mask.allowed(static_cast<int>(r), static_cast<int>(key))))
          ++key;
        overflow("nan", r, ", key " + std::to_string(key));
      }
    } else if (Eigen::Index i = 0, j = 0; firstNonFinite(hr.weights, i, j)) {
      overflow(valueText(hr.weights(i, j)), i, ", key " + std::to_string(j));
    }
    require(scene, hr.output, head + "output", false, "the weighted sum of V overflows float32");
  }
  require(scene, result.concat, "concat", false, "the heads' outputs overflow float32");
  require(scene, result.output, "output", false, "the output projection concat W_O + b_O overflows float32");
}

}  // namespace attnscope
