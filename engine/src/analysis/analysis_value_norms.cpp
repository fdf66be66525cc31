// sceneValueNorms (value_norms.h), in double.
#include "attnscope/analysis/value_norms.h"

namespace attnscope {

Matrix sceneValueNorms(const Scene& scene) {
  const int heads = scene.numHeads(), n_k = scene.nK();
  const Eigen::MatrixXd x = scene.valueRows().cast<double>();  // (n_k, d_model)
  Matrix norms(heads, n_k);
  int offset = 0;  // head h's first row of w_o: the d_v of the heads before it
  for (int h = 0; h < heads; ++h) {
    Eigen::MatrixXd v = x * scene.wV(h).cast<double>();  // (n_k, d_v)
    if (scene.bV(h)) v.rowwise() += scene.bV(h)->cast<double>();
    const int d_v = scene.dV(h);
    if (scene.w_o) v = v * scene.w_o->middleRows(offset, d_v).cast<double>();  // (n_k, d_model)
    norms.row(h) = v.rowwise().norm().transpose().cast<float>();
    offset += d_v;
  }
  return norms;
}

}  // namespace attnscope
