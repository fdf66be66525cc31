// Framework weight layouts -> per-head row-vector projections (Q = X W_Q + b_Q, W_Q (d_model, d_k)).
#include "attnscope/scene/layouts.h"

#include <string>

#include "attnscope/error.h"

namespace attnscope {

void applyProjections(Scene& scene, Projections projections) {
  scene.heads = std::move(projections.heads);
  scene.w_o = std::move(projections.w_o);
  scene.b_o = std::move(projections.b_o);
}

namespace {

// Rows [first, first + count) of a (3d, d) Linear weight, transposed into a (d, count) row-vector projection.
Matrix rowsAsProjection(const Matrix& weight, int first, int count) {
  return weight.middleRows(first, count).transpose();
}

std::optional<RowVector> biasSegment(const std::optional<RowVector>& bias, int first, int count) {
  if (!bias) return std::nullopt;
  return RowVector(bias->segment(first, count));
}

}  // namespace

Projections fromFusedQkv(const Matrix& weight, const std::optional<RowVector>& bias, int heads,
                         FusedQkvOrder order) {
  const long d = weight.cols();
  if (heads < 1) throw InputError("num_heads", "at least 1", std::to_string(heads));
  if (weight.rows() != 3 * d) throw InputError("qkv weight", shapeString(3 * d, d) + " (3d x d)", shapeString(weight.rows(), d));
  if (d % heads != 0)
    throw InputError("num_heads", "a divisor of d = " + std::to_string(d), std::to_string(heads));
  if (bias && bias->size() != 3 * d)
    throw InputError("qkv bias", std::to_string(3 * d) + " numbers", std::to_string(bias->size()));
  const int d_h = static_cast<int>(d) / heads;
  Projections p;
  for (int i = 0; i < heads; ++i) {
    // Offsets of head i's q, k and v rows among the 3d outputs.
    int q0, k0, v0;
    if (order == FusedQkvOrder::SplitThenHeads) {
      q0 = i * d_h;
      k0 = static_cast<int>(d) + i * d_h;
      v0 = 2 * static_cast<int>(d) + i * d_h;
    } else {
      q0 = 3 * i * d_h;
      k0 = q0 + d_h;
      v0 = q0 + 2 * d_h;
    }
    p.heads.push_back(HeadParams{rowsAsProjection(weight, q0, d_h), rowsAsProjection(weight, k0, d_h),
                                 rowsAsProjection(weight, v0, d_h), biasSegment(bias, q0, d_h),
                                 biasSegment(bias, k0, d_h), biasSegment(bias, v0, d_h)});
  }
  return p;
}

Projections fromTorchMultiheadAttention(const TorchMhaWeights& w) {
  const long e = w.in_proj_weight.cols();
  if (w.out_proj_weight.rows() != e || w.out_proj_weight.cols() != e)
    throw InputError("out_proj.weight", shapeString(e, e), shapeString(w.out_proj_weight.rows(), w.out_proj_weight.cols()));
  if (w.out_proj_bias && w.out_proj_bias->size() != e)
    throw InputError("out_proj.bias", std::to_string(e) + " numbers", std::to_string(w.out_proj_bias->size()));
  Projections p = fromFusedQkv(w.in_proj_weight, w.in_proj_bias, w.num_heads, FusedQkvOrder::SplitThenHeads);
  p.w_o = w.out_proj_weight.transpose();  // y = concat W^T + b
  p.b_o = w.out_proj_bias;
  return p;
}

namespace {

void checkTensor(const std::string& field, const Tensor3& t, int d0, int d1, int d2) {
  const auto shape = [](int a, int b, int c) {
    return "[" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + "]";
  };
  if (t.d0 != d0 || t.d1 != d1 || t.d2 != d2) throw InputError(field, shape(d0, d1, d2), shape(t.d0, t.d1, t.d2));
  if (t.data.size() != static_cast<std::size_t>(d0) * d1 * d2)
    throw InputError(field, std::to_string(static_cast<std::size_t>(d0) * d1 * d2) + " numbers",
                     std::to_string(t.data.size()));
}

// kernel (d_model, heads, dim) -> head i's (d_model, dim).
Matrix kernelSlice(const Tensor3& kernel, int head) {
  Matrix m(kernel.d0, kernel.d2);
  for (int r = 0; r < kernel.d0; ++r)
    for (int c = 0; c < kernel.d2; ++c) m(r, c) = kernel.at(r, head, c);
  return m;
}

std::optional<RowVector> biasRow(const std::string& field, const std::optional<Matrix>& bias, int head, int heads,
                                 int dim) {
  if (!bias) return std::nullopt;
  if (bias->rows() != heads || bias->cols() != dim)
    throw InputError(field, shapeString(heads, dim), shapeString(bias->rows(), bias->cols()));
  return RowVector(bias->row(head));
}

}  // namespace

Projections fromKerasMultiHeadAttention(const KerasMhaWeights& w) {
  const int d = w.query_kernel.d0, heads = w.query_kernel.d1, key_dim = w.query_kernel.d2;
  const int value_dim = w.value_kernel.d2;
  checkTensor("key_kernel", w.key_kernel, d, heads, key_dim);
  checkTensor("query_kernel", w.query_kernel, d, heads, key_dim);
  checkTensor("value_kernel", w.value_kernel, d, heads, value_dim);
  checkTensor("output_kernel", w.output_kernel, heads, value_dim, d);
  Projections p;
  for (int i = 0; i < heads; ++i)
    p.heads.push_back(HeadParams{kernelSlice(w.query_kernel, i), kernelSlice(w.key_kernel, i),
                                 kernelSlice(w.value_kernel, i), biasRow("query_bias", w.query_bias, i, heads, key_dim),
                                 biasRow("key_bias", w.key_bias, i, heads, key_dim),
                                 biasRow("value_bias", w.value_bias, i, heads, value_dim)});
  // Output kernel (heads, value_dim, d_model): row i * value_dim + j of W_O is kernel[i, j, :], matching the
  // concatenation order of the heads' outputs.
  Matrix w_o(heads * value_dim, d);
  for (int i = 0; i < heads; ++i)
    for (int j = 0; j < value_dim; ++j)
      for (int c = 0; c < d; ++c) w_o(i * value_dim + j, c) = w.output_kernel.at(i, j, c);
  p.w_o = std::move(w_o);
  if (w.output_bias) {
    if (w.output_bias->size() != d)
      throw InputError("output_bias", std::to_string(d) + " numbers", std::to_string(w.output_bias->size()));
    p.b_o = w.output_bias;
  }
  return p;
}

}  // namespace attnscope
