// RoPE: inverse frequencies (with Llama 3 and linear scaling) and the rotate_half rotation. See rope.h.
#include "attnscope/compute/rope.h"

#include <cmath>
#include <cstdio>
#include <numbers>

#include "attnscope/error.h"

namespace attnscope {
namespace {

void need(bool ok, const std::string& field, const std::string& expected, const std::string& actual) {
  if (!ok) throw InputError(field, expected, actual);
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::vector<double> ropeInverseFrequencies(double theta, int dims, const RopeScaling& scaling,
                                           const std::string& field) {
  need(std::isfinite(theta) && theta > 0, field + ".theta", "a finite number > 0", number(theta));
  need(dims >= 2 && dims % 2 == 0, field + ".dims", "an even number >= 2", std::to_string(dims));
  const int half = dims / 2;
  std::vector<double> f(static_cast<std::size_t>(half));
  for (int t = 0; t < half; ++t) f[static_cast<std::size_t>(t)] = std::pow(theta, -2.0 * t / dims);
  if (scaling.type == RopeScaling::Type::None) return f;

  need(std::isfinite(scaling.factor) && scaling.factor > 0, field + ".rope_scaling.factor", "a finite number > 0",
       number(scaling.factor));
  if (scaling.type == RopeScaling::Type::Linear) {
    for (double& v : f) v /= scaling.factor;
    return f;
  }
  // Llama 3: wavelengths longer than old_context / low_freq_factor are scaled by 1/factor, shorter than
  // old_context / high_freq_factor kept, and those between blended linearly in old_context / wavelength.
  const double lo = scaling.low_freq_factor, hi = scaling.high_freq_factor;
  const double old_context = scaling.original_max_position_embeddings;
  need(std::isfinite(lo) && std::isfinite(hi) && lo > 0 && hi > lo, field + ".rope_scaling.high_freq_factor",
       "finite factors with high_freq_factor > low_freq_factor > 0", number(lo) + " and " + number(hi));
  need(old_context >= 1, field + ".rope_scaling.original_max_position_embeddings", "a number >= 1",
       number(old_context));
  const double low_freq_wavelen = old_context / lo, high_freq_wavelen = old_context / hi;
  for (double& v : f) {
    const double wavelen = 2 * std::numbers::pi / v;
    if (wavelen < high_freq_wavelen) continue;
    if (wavelen > low_freq_wavelen) {
      v /= scaling.factor;
      continue;
    }
    const double smooth = (old_context / wavelen - lo) / (hi - lo);
    v = (1 - smooth) * v / scaling.factor + smooth * v;
  }
  return f;
}

RopeTable::RopeTable(const std::vector<int>& positions, const std::vector<double>& inverse_frequencies)
    : rows_(static_cast<int>(positions.size())), half_(static_cast<int>(inverse_frequencies.size())) {
  const std::size_t count = positions.size() * inverse_frequencies.size();
  cos_.resize(count);
  sin_.resize(count);
  std::size_t i = 0;
  for (int p : positions) {
    for (double f : inverse_frequencies) {
      const double angle = static_cast<double>(p) * f;
      cos_[i] = static_cast<float>(std::cos(angle));
      sin_[i] = static_cast<float>(std::sin(angle));
      ++i;
    }
  }
}

void RopeTable::rotate(Matrix& x, int col0) const {
  if (x.rows() != rows_ || col0 < 0 || col0 + 2 * half_ > x.cols())
    throw InputError("rope", std::to_string(rows_) + " rows and " + std::to_string(col0 + 2 * half_) + " columns",
                     std::to_string(x.rows()) + " x " + std::to_string(x.cols()));
  for (int r = 0; r < rows_; ++r) {
    float* row = x.row(r).data() + col0;
    const float* c = cos_.data() + static_cast<std::size_t>(r) * half_;
    const float* s = sin_.data() + static_cast<std::size_t>(r) * half_;
    for (int t = 0; t < half_; ++t) {
      const float a = row[t], b = row[t + half_];
      row[t] = a * c[t] - b * s[t];
      row[t + half_] = b * c[t] + a * s[t];
    }
  }
}

}  // namespace attnscope
