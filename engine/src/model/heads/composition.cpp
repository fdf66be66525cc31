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
// with R(X) the (cols x cols) factor of X^T X (its Cholesky factor; R(K) and R(V) once per KV head). The inner
// products of all pairs are matrix products of the flattened Grams, taken in slabs of rows of the symmetric d x d
// Grams (only columns c >= r, off-diagonal entries counted twice), so the memory is the factors plus one slab per
// head. Costs for L layers of H heads: factors ~7 L H r^2 d, Gram slabs 2 L H r d^2, pair products
// 3 (L H)^2 d^2 / 4 multiply-adds; in double (float32's rounding of sums of d^2 / 2 terms would not bound a
// score's error usefully).
#include <algorithm>
#include <cmath>

#include "attnscope/eigen.h"
#include "attnscope/error.h"
#include "attnscope/model/head_finding.h"
#include "attnscope/scene/scene.h"
#include "model/arch/model_view.h"
#include "model/arch/stage_timings.h"

namespace attnscope::model {

namespace {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr int kSlabRows = 32;    // rows of each d x d Gram per pass: 4 Grams x heads x 32 x d doubles
constexpr int kChunkLayers = 4;  // writer layers per pair product: 4 x heads a layer rows, few wasted pairs

// R (cols x cols) with R^T R = X^T X: the Gram's Cholesky factor (X^T X = U^T U, one BLAS product and a cols^3 / 3
// factorisation), or, for a singular Gram (zero weights, d < head_dim), its eigen decomposition's
// sqrt(lambda) V^T. (Multiplying by U as a triangular matrix halves the multiplications but, through Eigen's
// BLAS wrapper, ran 20% slower than the plain product on the build VM.)
template <typename X>
MatrixD gramFactor(const X& x) {
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
Eigen::VectorXd inputScale(const LayerView& layer, int hidden) {
  // OLMo 2 and the post-norm encoders have no input norm (theirs come after the attention).
  const RowVector* g = layer.attn_norms.in.g;
  if (!g || g->size() != hidden) return Eigen::VectorXd::Ones(hidden);
  return g->transpose().cast<double>();
}

enum Kind { kWriter, kReaderQ, kReaderK, kReaderV, kKinds };

// Doubles in one anonymous mapping of huge pages (MapBuffer): the factors are 4 x heads x r x d doubles (1.8 GiB
// for a Qwen3-0.6B shape) and the slabs half a GiB, whose first touch in 4 KiB pages costs seconds of page faults
// on the build VM.
class DoubleBuffer {
 public:
  explicit DoubleBuffer(std::size_t doubles) : floats_(2 * doubles) {}
  double* data() const { return reinterpret_cast<double*>(floats_.data()); }  // page-aligned

 private:
  MapBuffer floats_;
};

struct HeadFactors {
  double* f[kKinds] = {};     // (r, d) each, row-major, in the factors' buffer
  double norm2[kKinds] = {};  // ||F||_F^2: the squared Frobenius norm of W_OV (writer) or M (readers)
};

// What the query heads of one KV head share (grouped-query attention): its W_K and W_V columns in row-vector
// form (d, hd), input scale folded in, and their Gram factors R(K), R(V) (hd, hd).
struct KvFactors {
  MatrixD k, val, r_k, r_val;
};

KvFactors kvFactors(const ModelView& v, int layer, int kv) {
  const Architecture& a = v.arch;
  const LayerView& L = v.layers[static_cast<std::size_t>(layer)];
  const int hd = a.head_dim, q_dim = a.qDim(), kv_dim = a.kvDim();
  const Eigen::VectorXd g = inputScale(L, a.hidden);
  KvFactors f;
  f.k = inputFactor(*L.w_qkv, a.conv1d, q_dim + kv * hd, hd, g);
  f.val = inputFactor(*L.w_qkv, a.conv1d, q_dim + kv_dim + kv * hd, hd, g);
  f.r_k = gramFactor(f.k);
  f.r_val = gramFactor(f.val);
  return f;
}

// Head h's four factors into `out` (kKinds x r x d doubles).
HeadFactors headFactors(const ModelView& v, int layer, int h, const KvFactors& kv, double* out) {
  const Architecture& a = v.arch;
  const LayerView& L = v.layers[static_cast<std::size_t>(layer)];
  const int hd = a.head_dim;
  const MatrixD q = inputFactor(*L.w_qkv, a.conv1d, h * hd, hd, inputScale(L, a.hidden));  // (d, hd)
  const MatrixD o = outputFactor(*L.w_o, a.conv1d, h, hd);                                    // (hd, d)
  HeadFactors f;
  const Eigen::Index d = a.hidden;
  for (int kind = 0; kind < kKinds; ++kind) f.f[kind] = out + static_cast<std::ptrdiff_t>(kind) * hd * d;
  const auto factor = [&](int kind) { return Eigen::Map<MatrixD>(f.f[kind], hd, d); };
  factor(kWriter).noalias() = kv.r_val * o;
  factor(kReaderQ).noalias() = kv.r_k * q.transpose();
  factor(kReaderK).noalias() = gramFactor(q) * kv.k.transpose();
  factor(kReaderV).noalias() = gramFactor(o.transpose()) * kv.val.transpose();
  for (int kind = 0; kind < kKinds; ++kind) f.norm2[kind] = factor(kind).squaredNorm();
  return f;
}

}  // namespace

std::size_t compositionBytes(const Model& model) {
  const Architecture a = model.architecture();
  const std::size_t heads = static_cast<std::size_t>(a.n_layer) * a.n_head, d = static_cast<std::size_t>(a.hidden);
  const std::size_t r = static_cast<std::size_t>(a.head_dim);
  const std::size_t kv_heads = static_cast<std::size_t>(a.n_layer) * a.n_kv_head;
  // The factors (each KV head's shared ones too), one slab of each Gram per head, and the (heads x 3 heads)
  // inner products.
  return sizeof(double) *
         (heads * kKinds * r * d + kv_heads * 2 * (r * d + r * r) + heads * kKinds * kSlabRows * d + 3 * heads * heads);
}

Composition compositionScores(const Model& model, std::size_t budget_bytes, std::atomic<float>* done) {
  checkMemoryBudget("composition", "the composition of every pair of heads", compositionBytes(model), budget_bytes);
  StageTimings timings("composition");
  const ModelView v = viewOf(model);
  const Architecture& a = v.arch;
  const int layers = a.n_layer, per_layer = a.n_head, heads = layers * per_layer, d = a.hidden;
  // Each KV head's factors once for its group's query heads, then each query head's.
  const int per_layer_kv = a.n_kv_head, group = per_layer / per_layer_kv;
  std::vector<KvFactors> shared(static_cast<std::size_t>(layers * per_layer_kv));
#pragma omp parallel for schedule(dynamic, 1)
  for (int i = 0; i < layers * per_layer_kv; ++i)
    shared[static_cast<std::size_t>(i)] = kvFactors(v, i / per_layer_kv, i % per_layer_kv);
  const std::size_t per_head = static_cast<std::size_t>(kKinds) * a.head_dim * d;
  const DoubleBuffer factor_buffer(static_cast<std::size_t>(heads) * per_head);
  std::vector<HeadFactors> factors(static_cast<std::size_t>(heads));
  // The fraction done, by multiply-adds: the factors ~6 r^2 d a head, counted twice (their small products run at
  // about half the BLAS's rate of the rest), a slab pass of c columns ~(2 r + 3 heads / 4) c rows per head (its
  // Gram rows and its share of the pair products); a pass's c falls from d to 1 as it moves on.
  const double r = a.head_dim, factor_work = 2 * 6.0 * r * r * d * heads;
  const double pass_work = (2.0 * r + 0.75 * heads) * kSlabRows * heads,
               slab_work = pass_work * d * (d + 1) / 2.0 / kSlabRows;
  std::atomic<int> heads_done{0};
  const auto report = [&](double work) {
    if (done)
      done->store(static_cast<float>(std::min(1.0, work / (factor_work + slab_work))), std::memory_order_relaxed);
  };
#pragma omp parallel for schedule(dynamic, 1)
  for (int i = 0; i < heads; ++i) {
    const int layer = i / per_layer, h = i % per_layer;
    factors[static_cast<std::size_t>(i)] =
        headFactors(v, layer, h, shared[static_cast<std::size_t>(layer * per_layer_kv + h / group)],
                    factor_buffer.data() + static_cast<std::size_t>(i) * per_head);
    report(factor_work * (heads_done.fetch_add(1) + 1) / heads);
  }
  shared.clear();
  timings.mark("factors (Cholesky, r x d)");

  // inner(A, 3 B + m) = <G_A, H_B> for reader mode m (q, k, v), accumulated over slabs of Gram rows [r0, r0 + rows),
  // columns [r0, d). Each slab row holds the diagonal block (rows x rows) and then the block right of it (rows x
  // (cols - rows)), row-major; the writer's second block is made twice over (the Grams are symmetric: it stands
  // for the block below the diagonal too). The readers' rows are head-major (3 B + m), so the readers of every
  // layer from one on are one block of rows, and each pass is a few large products.
  MatrixD inner = MatrixD::Zero(heads, 3 * heads);
  const std::size_t slab_max = static_cast<std::size_t>(std::min(kSlabRows, d)) * static_cast<std::size_t>(d);
  const DoubleBuffer writer_buffer(static_cast<std::size_t>(heads) * slab_max),
      reader_buffer(static_cast<std::size_t>(3 * heads) * slab_max);
  for (int r0 = 0; r0 < d; r0 += kSlabRows) {
    const int rows = std::min(kSlabRows, d - r0), cols = d - r0, rest = cols - rows;
    const Eigen::Index slab = static_cast<Eigen::Index>(rows) * cols;
    Eigen::Map<MatrixD> writers(writer_buffer.data(), heads, slab), readers(reader_buffer.data(), 3 * heads, slab);
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < heads * kKinds; ++i) {
      const int head = i / kKinds, kind = i % kKinds;
      const Eigen::Map<const MatrixD> f(factors[static_cast<std::size_t>(head)].f[kind], a.head_dim, d);
      double* out = kind == kWriter ? writers.row(head).data() : readers.row(3 * head + kind - kReaderQ).data();
      const auto left = f.middleCols(r0, rows);
      Eigen::Map<MatrixD>(out, rows, rows).noalias() = left.transpose() * left;
      Eigen::Map<MatrixD> right(out + static_cast<std::ptrdiff_t>(rows) * rows, rows, rest);
      if (kind == kWriter)
        right.noalias() = 2.0 * left.transpose() * f.middleCols(r0 + rows, rest);
      else
        right.noalias() = left.transpose() * f.middleCols(r0 + rows, rest);
    }
    timings.mark("gram slabs");
    // Writers in chunks of kChunkLayers layers against the readers of every layer after the chunk's first: the
    // few pairs inside a chunk whose reader is not later are computed and never read.
    for (int la = 0; la + 1 < layers; la += kChunkLayers) {
      const int a0 = la * per_layer, na = std::min(kChunkLayers, layers - 1 - la) * per_layer;
      const int b0 = (la + 1) * per_layer, nb = heads - b0;
      inner.block(a0, 3 * b0, na, 3 * nb).noalias() +=
          writers.middleRows(a0, na) * readers.middleRows(3 * b0, 3 * nb).transpose();
    }
    timings.mark("pair products");
    report(factor_work +
           pass_work * (static_cast<double>(d) * (r0 + rows) - (r0 + rows) * (r0 + rows - 1) / 2.0) / kSlabRows);
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
        const double ab = inner(A, 3 * B + m);
        // <G_A, H_B> >= 0 (both positive semi-definite); rounding may leave it a hair below.
        const double denom = wa * mb;
        (*out[m])[static_cast<std::size_t>(A) * heads + B] = denom > 0 ? std::sqrt(std::max(0.0, ab) / denom) : 0.0;
      }
  }
  return c;
}

}  // namespace attnscope::model
