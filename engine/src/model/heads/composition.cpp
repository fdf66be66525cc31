// Composition scores (Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits"): how much a later
// head's query (Q), key (K) or value (V) reads what an earlier head wrote, from the weights alone, through the
// (r x d) factors of each product's Gram matrix, never a d x d product per pair.
//
// For a writer A and a reader matrix M (d x d): ||W_OV^A M||_F^2 = tr(M^T G_A M) = <G_A, M M^T>_F with
// G_A = W_OV^A^T W_OV^A. Each Gram is F^T F for a factor F (head_dim x d):
//   writer  W_OV = V O            G   = O^T V^T V O          F = R(V) O
//   Q       M = W_QK = Q K^T      M M^T = Q K^T K Q^T        F = R(K) Q^T
//   K       M = W_QK^T = K Q^T    M M^T = K Q^T Q K^T        F = R(Q) K^T
//   V       M = W_OV^B = V O      M M^T = V O O^T V^T        F = R(O^T) V^T
// with R(X) the (cols x cols) factor of X^T X (its Cholesky factor). The inner products of all pairs are one matrix product of
// the flattened Grams, taken in slabs of rows of the symmetric d x d Grams (only columns c >= r, off-diagonal
// entries counted twice), so the memory is the factors plus one slab per head.
#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>

#include "attnscope/error.h"
#include "attnscope/model/head_finding.h"
#include "attnscope/scene/scene.h"
#include "model/arch/model_view.h"
#include "model/arch/stage_timings.h"

namespace attnscope::model {

namespace {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr int kSlabRows = 32;  // rows of each d x d Gram per pass: 4 Grams x heads x 32 x d doubles

// F (cols x cols) with F^T F = X^T X: the Gram's Cholesky factor (X^T X = U^T U, one BLAS product and a cols^3 / 3
// factorisation), or, for a singular Gram (zero weights, d < head_dim), its
// eigen decomposition's sqrt(lambda) V^T.
MatrixD gramFactor(const MatrixD& x) {
  const MatrixD gram = x.transpose() * x;
  const Eigen::LLT<MatrixD> llt(gram);
  if (llt.info() == Eigen::Success) return llt.matrixU();
  const Eigen::SelfAdjointEigenSolver<MatrixD> eigen(gram);
  return eigen.eigenvalues().cwiseMax(0.0).cwiseSqrt().asDiagonal() * eigen.eigenvectors().transpose();
}

// Output rows [row0, row0 + count) of a projection in row-vector form (d x count), each input row d scaled by
// g[d]: the (out, in) matrix's rows transposed, or the conv1d (in, out) matrix's columns.
MatrixD inputFactor(const Matrix& w, bool conv1d, int row0, int count, const Eigen::VectorXd& g) {
  MatrixD f = conv1d ? MatrixD(w.middleCols(row0, count).cast<double>())
                     : MatrixD(w.middleRows(row0, count).transpose().cast<double>());
  return g.asDiagonal() * f;
}

// Head h's rows of W_O in row-vector form (head_dim x d): W_O is (hidden, q_dim), or (q_dim, hidden) for conv1d.
MatrixD outputFactor(const Matrix& w_o, bool conv1d, int h, int hd) {
  return conv1d ? MatrixD(w_o.middleRows(h * hd, hd).cast<double>())
                : MatrixD(w_o.middleCols(h * hd, hd).transpose().cast<double>());
}

// The layer's input-norm scale folded into W_Q, W_K, W_V (ones where the family has no input norm).
Eigen::VectorXd inputScale(const Architecture& a, const LayerView& layer, int hidden) {
  // OLMo 2 and the post-norm encoders have no input norm (their norm1 is the norm after attention).
  if (a.post_norms || a.residual == Residual::PostNorm || !layer.norm1_g || layer.norm1_g->size() != hidden) return Eigen::VectorXd::Ones(hidden);
  return layer.norm1_g->transpose().cast<double>();
}

enum Kind { kWriter, kReaderQ, kReaderK, kReaderV, kKinds };

struct HeadFactors {
  MatrixD f[kKinds];  // (r, d) each
  double norm2[kKinds] = {};  // ||F||_F^2: the squared Frobenius norm of W_OV (writer) or M (readers)
};

HeadFactors headFactors(const ModelView& v, int layer, int h) {
  const Architecture& a = v.arch;
  const LayerView& L = v.layers[static_cast<std::size_t>(layer)];
  const int hd = a.head_dim, q_dim = a.qDim(), kv_dim = a.kvDim(), kv = a.layout().kvHead(h);
  const Eigen::VectorXd g = inputScale(a, L, a.hidden);
  const MatrixD q = inputFactor(*L.w_qkv, a.conv1d, h * hd, hd, g);                     // (d, hd)
  const MatrixD k = inputFactor(*L.w_qkv, a.conv1d, q_dim + kv * hd, hd, g);            // (d, hd)
  const MatrixD val = inputFactor(*L.w_qkv, a.conv1d, q_dim + kv_dim + kv * hd, hd, g);  // (d, hd)
  const MatrixD o = outputFactor(*L.w_o, a.conv1d, h, hd);                              // (hd, d)
  HeadFactors f;
  f.f[kWriter] = gramFactor(val) * o;
  f.f[kReaderQ] = gramFactor(k) * q.transpose();
  f.f[kReaderK] = gramFactor(q) * k.transpose();
  f.f[kReaderV] = gramFactor(o.transpose()) * val.transpose();
  for (int kind = 0; kind < kKinds; ++kind) f.norm2[kind] = f.f[kind].squaredNorm();
  return f;
}

}  // namespace

std::size_t compositionBytes(const Model& model) {
  const Architecture a = model.architecture();
  const std::size_t heads = static_cast<std::size_t>(a.n_layer) * a.n_head, d = static_cast<std::size_t>(a.hidden);
  const std::size_t r = static_cast<std::size_t>(a.head_dim);
  // The factors, one slab of each Gram per head, and the three (heads x heads) score matrices.
  return sizeof(double) * (heads * kKinds * r * d + heads * kKinds * kSlabRows * d + 3 * heads * heads);
}

Composition compositionScores(const Model& model, std::size_t budget_bytes) {
  checkMemoryBudget("composition", "the composition of every pair of heads", compositionBytes(model), budget_bytes);
  StageTimings timings("composition");
  const ModelView v = viewOf(model);
  const Architecture& a = v.arch;
  const int layers = a.n_layer, per_layer = a.n_head, heads = layers * per_layer, d = a.hidden;
  std::vector<HeadFactors> factors(static_cast<std::size_t>(heads));
#pragma omp parallel for schedule(dynamic, 1)
  for (int i = 0; i < heads; ++i) factors[static_cast<std::size_t>(i)] = headFactors(v, i / per_layer, i % per_layer);
  timings.mark("factors (Cholesky, r x d)");

  // inner[kind - 1](A, B) = <G_A, H_B>, accumulated over slabs of Gram rows [r0, r1), columns [r0, d).
  MatrixD inner[3];
  for (MatrixD& m : inner) m = MatrixD::Zero(heads, heads);
  MatrixD slab[kKinds];
  for (int r0 = 0; r0 < d; r0 += kSlabRows) {
    const int rows = std::min(kSlabRows, d - r0), cols = d - r0;
    for (MatrixD& s : slab) s.resize(heads, static_cast<Eigen::Index>(rows) * cols);
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < heads * kKinds; ++i) {
      const int head = i / kKinds, kind = i % kKinds;
      const MatrixD& f = factors[static_cast<std::size_t>(head)].f[kind];
      // Gram rows [r0, r0 + rows), columns [r0, d): (rows, cols), row-major into the head's slab row.
      MatrixD g = f.middleCols(r0, rows).transpose() * f.middleCols(r0, cols);
      if (kind == kWriter)  // the symmetric sum: entries below the diagonal dropped, above it counted twice
        for (int r = 0; r < rows; ++r) {
          g.row(r).head(r).setZero();
          g.row(r).tail(cols - r - 1) *= 2.0;
        }
      slab[kind].row(head) = Eigen::Map<const Eigen::RowVectorXd>(g.data(), g.size());
    }
    timings.mark("gram slabs");
    // Only later layers read: writer layer la against reader layers > la.
    for (int la = 0; la + 1 < layers; ++la) {
      const int a0 = la * per_layer, b0 = (la + 1) * per_layer, nb = heads - b0;
      for (int m = 0; m < 3; ++m)
        inner[m].block(a0, b0, per_layer, nb).noalias() +=
            slab[kWriter].middleRows(a0, per_layer) * slab[kReaderQ + m].middleRows(b0, nb).transpose();
    }
    timings.mark("pair products");
  }

  Composition c;
  c.n_layer = layers;
  c.n_head = per_layer;
  std::vector<double>* out[3] = {&c.q, &c.k, &c.v};
  for (int m = 0; m < 3; ++m) {
    out[m]->assign(static_cast<std::size_t>(heads) * heads, 0.0);
    for (int A = 0; A < heads; ++A)
      for (int B = (A / per_layer + 1) * per_layer; B < heads; ++B) {
        const double wa = factors[static_cast<std::size_t>(A)].norm2[kWriter];
        const double mb = factors[static_cast<std::size_t>(B)].norm2[kReaderQ + m];
        // <G_A, H_B> >= 0 (both positive semi-definite); rounding may leave it a hair below.
        const double denom = wa * mb;
        (*out[m])[static_cast<std::size_t>(A) * heads + B] =
            denom > 0 ? std::sqrt(std::max(0.0, inner[m](A, B)) / denom) : 0.0;
      }
  }
  return c;
}

}  // namespace attnscope::model
