// sceneValueNorms (value_norms.h), in double, and their checked float32 rounding.
#include "attnscope/analysis/value_norms.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "attnscope/error.h"

namespace attnscope {

Eigen::MatrixXd sceneValueNormsDouble(const Scene& scene) {
  const int heads = scene.numHeads(), n_k = scene.nK();
  const Eigen::MatrixXd x = scene.valueRows().cast<double>();  // (n_k, d_model)
  Eigen::MatrixXd norms(heads, n_k);
  int offset = 0;  // head h's first row of w_o: the d_v of the heads before it
  for (int h = 0; h < heads; ++h) {
    Eigen::MatrixXd v = x * scene.wV(h).cast<double>();  // (n_k, d_v)
    if (scene.bV(h)) v.rowwise() += scene.bV(h)->cast<double>();
    const int d_v = scene.dV(h);
    if (scene.w_o) v = v * scene.w_o->middleRows(offset, d_v).cast<double>();  // (n_k, d_model)
    // Float32 inputs keep every product and square within double's range: a coordinate of x W_V W_O is at most
    // (3.4e38)^3 d^2, its square (3.4e38)^6 d^4 ~ 1.5e231 d^4, below 1.8e308 for any d under 10^19. Eigen's
    // norm() is the plain sqrt of the squares.
    norms.row(h) = v.rowwise().norm().transpose();
    offset += d_v;
  }
  return norms;
}

Matrix sceneValueNorms(const Scene& scene) { return sceneValueNormsDouble(scene).cast<float>(); }

Matrix float32ValueNorms(const Eigen::MatrixXd& norms, const std::string& where) {
  constexpr double kLargest = std::numeric_limits<float>::max();
  for (Eigen::Index h = 0; h < norms.rows(); ++h)
    for (Eigen::Index j = 0; j < norms.cols(); ++j)
      if (!(norms(h, j) <= kLargest)) {  // NaN too
        char got[160];
        std::snprintf(got, sizeof got, "%.3g at %shead %ld (from 1), key %ld (from 0)", norms(h, j), where.c_str(),
                      static_cast<long>(h + 1), static_cast<long>(j));
        throw InputError("value norms",
                         "norms within float32's range (at most 3.4e+38), as a weighted map is written in float32",
                         got);
      }
  return norms.cast<float>();
}

}  // namespace attnscope
