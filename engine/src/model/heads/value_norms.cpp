// Value-norm weighting (head_finding.h): per head and key, the norm of what the head writes for that key,
// ||(x_j W_V + b_V) W_O^h||, from the layer's kept attention input. Through head_dim x head_dim Grams of W_O's rows:
// never the (n, d) product per head.
#include <memory>
#include <string>

#include "attnscope/error.h"
#include "attnscope/model/head_finding.h"
#include "model/arch/model_view.h"

namespace attnscope::model {

Eigen::MatrixXd valueNormsDouble(const Model& model, const ForwardResult& forward, int layer) {
  const ModelView v = viewOf(model);
  const Architecture& a = v.arch;
  if (layer < 0 || layer >= a.n_layer)
    throw InputError("layer", "0 to " + std::to_string(a.n_layer - 1), std::to_string(layer));
  if (static_cast<int>(forward.ln1.size()) != a.n_layer)
    throw InputError("forward.ln1", std::to_string(a.n_layer) + " layers (a forward with keep_ln1)",
                     std::to_string(forward.ln1.size()));
  const LayerView& L = v.layers[static_cast<std::size_t>(layer)];
  const Matrix& x = forward.ln1[static_cast<std::size_t>(layer)];  // (n, d)
  const int hd = a.head_dim, q_dim = a.qDim(), kv_dim = a.kvDim(), v0 = q_dim + kv_dim;
  // Every KV head's values (n, kv_dim), in float32 as the forward's: W_QKV's V outputs are columns v0 .. v0 + kv_dim
  // of x W (conv1d, W (d, q + 2 kv)), or rows of W (q + 2 kv, d).
  Matrix values;
  if (a.conv1d) values.noalias() = x * L.w_qkv->middleCols(v0, kv_dim);
  else values.noalias() = x * L.w_qkv->middleRows(v0, kv_dim).transpose();
  if (L.b_qkv && L.b_qkv->size()) values.rowwise() += L.b_qkv->segment(v0, kv_dim);

  using MatrixD = Eigen::MatrixXd;
  MatrixD norms(a.n_head, x.rows());
#pragma omp parallel for schedule(dynamic, 1)
  for (int h = 0; h < a.n_head; ++h) {
    // Head h's rows of W_O in row-vector form (hd, d): W_O is (d, q_dim), or (q_dim, d) for conv1d.
    const MatrixD o = a.conv1d ? MatrixD(L.w_o->middleRows(h * hd, hd).cast<double>())
                               : MatrixD(L.w_o->middleCols(h * hd, hd).transpose().cast<double>());
    const MatrixD gram = o * o.transpose();  // (hd, hd): ||v O||^2 = v gram v^T
    const MatrixD vd = values.middleCols(a.layout().kvHead(h) * hd, hd).cast<double>();  // (n, hd)
    // gram is positive semi-definite: a square a hair below 0 is rounding. Float32 inputs keep the squares
    // within double's range (3.4e38^4 x head_dim^2 x d is far below 1.8e308): a norm past float32's is kept.
    norms.row(h) = (vd * gram).cwiseProduct(vd).rowwise().sum().cwiseMax(0.0).cwiseSqrt().transpose();
  }
  return norms;
}

Matrix valueNorms(const Model& model, const ForwardResult& forward, int layer) {
  return valueNormsDouble(model, forward, layer).cast<float>();
}

Matrix carriedValueNorms(const ForwardResult& forward, int layer) {
  if (layer < 0 || layer >= forward.layout.n_layer)
    throw InputError("layer", "0 to " + std::to_string(forward.layout.n_layer - 1), std::to_string(layer));
  if (forward.keepsMaps())
    throw InputError("value norms", "a forward that carries them (a capture with v and w_o)", "kept maps only");
  const std::shared_ptr<const Result> r = forward.layerStats(layer);
  Matrix norms(forward.layout.n_head, forward.n);
  for (int h = 0; h < forward.layout.n_head; ++h) {
    const RowVector& row = r->heads.at(static_cast<std::size_t>(h)).value_norm;
    if (row.size() != forward.n)
      throw InputError("value norms", "layer " + std::to_string(layer) + "'s v and w_o (a capture with values=True)",
                       "none");
    norms.row(h) = row;
  }
  return norms;
}

}  // namespace attnscope::model
