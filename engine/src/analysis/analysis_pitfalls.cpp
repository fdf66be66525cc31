// The source texts' mistakes, computed beside the correct result: the wrong scale, no scale, an ignored mask,
// softmax over the wrong axis, and the reshape with d_k where d_v is meant. Each names the text it comes from.
#include <cmath>
#include <string>

#include "analysis/analysis_common.h"
#include "attnscope/analysis/analysis.h"

namespace attnscope {

namespace {

using MatrixD = Eigen::MatrixXd;

const std::vector<PitfallInfo> kPitfalls = {
    {Pitfall::ScaleFullWidth, "scale_full_width", "Scaled by the width of all heads",
     "004 (Keras tutorial): MultiHeadAttention.call passes self.d_k, the full Dense(d_k) width of all heads, to "
     "DotProductAttention, which divides by sqrt(d_k); a reader's comment points it out",
     "scores scaled by 1/sqrt(sum of d_k over the heads) instead of 1/sqrt(d_k of the head): the softmax flattens"},
    {Pitfall::ScaleDModel, "scale_d_model", "Scaled by d_model, not d_k",
     "004's readers' comments (scaling by the model width instead of the per-head depth); the issue's variant",
     "scores scaled by 1/sqrt(d_model) instead of 1/sqrt(d_k of the head)"},
    {Pitfall::NoScale, "no_scale", "Scores not scaled",
     "002 (blog post): 'For simplicity, let's ignore the scaling factor 1/sqrt(d_h) for now'",
     "scores not scaled at all: the softmax sharpens as d_k grows"},
    {Pitfall::MaskIgnored, "mask_ignored", "Mask ignored",
     "001 (course section): MultiHeadAttention.forward(self, X, mask=None) documents the mask and never uses it",
     "the scene's mask (causal, explicit, key padding) is accepted and ignored: every key is attended"},
    {Pitfall::SoftmaxQueryAxis, "softmax_query_axis", "Softmax over the queries",
     "none of the five texts makes it (000 and 001 write axis=-1, 002 and 003 dim=-1 explicitly); a common "
     "mistake when the axis is left out or given as 0",
     "softmax over the query axis (each key's column sums to 1) instead of the key axis (each query's row)"},
    {Pitfall::ReshapeDkForDv, "reshape_dk_for_dv", "Reshaped with d_k, not d_v",
     "004 (Keras tutorial): reshape_tensor reverts the heads with reshape(x, (batch, seq, self.d_k)) where the "
     "heads' outputs are d_v wide",
     "the heads' outputs (n, h, d_v) reshaped to rows of the full d_k instead of the full d_v before W_O"},
};

// Softmax along rows of `scores` (n_q, n_k) where `allowed` is non-zero; rows with no allowed key are all 0.
MatrixD maskedRowSoftmax(const MatrixD& scores, const MaskMatrix* allowed) {
  MatrixD w = MatrixD::Zero(scores.rows(), scores.cols());
  for (Eigen::Index i = 0; i < scores.rows(); ++i) {
    double max = -std::numeric_limits<double>::infinity();
    for (Eigen::Index j = 0; j < scores.cols(); ++j)
      if (!allowed || (*allowed)(i, j)) max = std::max(max, scores(i, j));
    if (!std::isfinite(max)) continue;
    double sum = 0;
    for (Eigen::Index j = 0; j < scores.cols(); ++j)
      if (!allowed || (*allowed)(i, j)) sum += w(i, j) = std::exp(scores(i, j) - max);
    w.row(i) /= sum;
  }
  return w;
}

// Rows are the distributions; `allowed` (same shape, empty: every cell) says which cells a row may weigh. A row
// with one allowed key has weight 1 there by construction and is left out, as the heads' statistics do
// (singleKeyRows), so that one head has one entropy everywhere.
double rowEntropyMean(const MatrixD& w, const MaskMatrix* allowed) {
  double total = 0;
  int rows = 0;
  for (Eigen::Index i = 0; i < w.rows(); ++i) {
    if (w.row(i).sum() <= 0) continue;
    if (w.cols() == 1 || (allowed && allowed->row(i).cast<int>().sum() == 1)) continue;
    double e = 0;
    for (Eigen::Index j = 0; j < w.cols(); ++j)
      if (w(i, j) > 0) e -= w(i, j) * std::log(w(i, j));
    total += e;
    ++rows;
  }
  return rows ? total / rows : 0.0;
}

double mistakenScale(const Scene& scene, int head, Pitfall pitfall) {
  switch (pitfall) {
    case Pitfall::ScaleFullWidth: {
      int width = 0;
      for (const HeadParams& p : scene.heads) width += p.dK();
      return 1.0 / std::sqrt(static_cast<double>(width));
    }
    case Pitfall::ScaleDModel:
      return 1.0 / std::sqrt(static_cast<double>(scene.d_model));
    case Pitfall::NoScale:
      return 1.0;
    default:
      return scene.headScale(head);
  }
}

// The layer output from per-head outputs in double: concat, then W_O and b_O when present. (n_q, d_model)
MatrixD layerOutput(const Scene& scene, const std::vector<MatrixD>& head_outputs) {
  MatrixD concat(scene.nQ(), scene.concatWidth());
  int col = 0;
  for (const MatrixD& o : head_outputs) {
    concat.middleCols(col, o.cols()) = o;
    col += static_cast<int>(o.cols());
  }
  if (!scene.w_o) return concat;
  MatrixD out = concat * scene.w_o->cast<double>();
  if (scene.b_o) out.rowwise() += scene.b_o->cast<double>();
  return out;
}

}  // namespace

const std::vector<PitfallInfo>& pitfallList() { return kPitfalls; }

const PitfallInfo& pitfallInfo(Pitfall pitfall) {
  for (const PitfallInfo& p : kPitfalls)
    if (p.pitfall == pitfall) return p;
  return kPitfalls.front();
}

Pitfall parsePitfall(const std::string& name) {
  std::string listed;
  for (const PitfallInfo& p : kPitfalls) {
    if (name == p.name) return p.pitfall;
    listed += (listed.empty() ? "" : ", ") + std::string(p.name);
  }
  throw InputError("pitfall", "one of " + listed, "'" + name + "'");
}

double meanRowEntropy(const Matrix& weights, const MaskMatrix* allowed) {
  return rowEntropyMean(weights.cast<double>(), allowed);
}

PitfallResult applyPitfall(const Scene& scene, const Result& correct, Pitfall pitfall) {
  // The mistaken maps are whole (n_q, n_k) matrices, so the correct ones must be kept (MapPolicy::Keep).
  detail::checkResultMatches(scene, correct, true);
  const MaskMatrix allowed = scene.hasMask() ? allowedMask(scene) : MaskMatrix();
  const MaskMatrix* mask = scene.hasMask() && pitfall != Pitfall::MaskIgnored ? &allowed : nullptr;

  PitfallResult r;
  r.pitfall = pitfall;
  // A mistake that changes nothing on this scene gives back the correct numbers exactly (differences 0, not
  // the 1e-7 of recomputing them in double).
  bool same_scale = true;
  for (int h = 0; h < scene.numHeads(); ++h)
    same_scale = same_scale && static_cast<float>(mistakenScale(scene, h, pitfall)) == scene.headScale(h);
  const bool scale_pitfall =
      pitfall == Pitfall::ScaleFullWidth || pitfall == Pitfall::ScaleDModel || pitfall == Pitfall::NoScale;
  if (pitfall == Pitfall::MaskIgnored && !scene.hasMask())
    r.note = "no effect on this scene: it has no mask to ignore";
  else if (scale_pitfall && same_scale)
    r.note = "no effect on this scene: the mistaken scale equals every head's own scale";
  const bool unchanged = !r.note.empty() || pitfall == Pitfall::ReshapeDkForDv;
  std::vector<MatrixD> head_outputs;
  for (int h = 0; h < scene.numHeads(); ++h) {
    const HeadResult& hr = correct.heads[static_cast<std::size_t>(h)];
    MatrixD w;  // (n_q, n_k)
    if (unchanged) {
      w = hr.weights.cast<double>();  // (the reshape comes after attention: its weights are the correct ones)
    } else {
      const MatrixD scores = mistakenScale(scene, h, pitfall) * hr.q.cast<double>() * hr.k().cast<double>().transpose();
      if (pitfall == Pitfall::SoftmaxQueryAxis) {
        const MaskMatrix allowed_t = mask ? MaskMatrix(mask->transpose()) : MaskMatrix();
        w = maskedRowSoftmax(scores.transpose(), mask ? &allowed_t : nullptr).transpose();
      } else {
        w = maskedRowSoftmax(scores, mask);
      }
    }
    r.weights.push_back(w.cast<float>());
    r.weight_diff.push_back((w - hr.weights.cast<double>()).cast<float>());
    r.max_abs_weight_diff.push_back((w - hr.weights.cast<double>()).cwiseAbs().maxCoeff());
    const MaskMatrix allowed_t = mask ? MaskMatrix(mask->transpose()) : MaskMatrix();
    r.entropy.push_back(pitfall == Pitfall::SoftmaxQueryAxis
                            ? rowEntropyMean(w.transpose(), mask ? &allowed_t : nullptr)
                            : rowEntropyMean(w, mask));
    r.correct_entropy.push_back(meanRowEntropy(hr.weights, scene.hasMask() ? &allowed : nullptr));
    head_outputs.push_back(MatrixD(w * hr.v().cast<double>()));
  }
  if (!r.note.empty()) {
    r.output = correct.output;
    r.output_diff = Matrix::Zero(correct.output.rows(), correct.output.cols());
    return r;
  }

  if (pitfall == Pitfall::ReshapeDkForDv) {
    int sum_dk = 0;
    for (const HeadParams& p : scene.heads) sum_dk += p.dK();
    const int sum_dv = scene.concatWidth();
    if (sum_dk != sum_dv) {
      r.note = "the reshape fails: the heads' outputs hold n x " + std::to_string(sum_dv) +
               " values per batch, which do not fit (n, " + std::to_string(sum_dk) +
               "); the text's code runs only because its d_k equals its d_v";
      return r;
    }
    r.note = "no effect on this scene: the full d_k equals the full d_v (" + std::to_string(sum_dk) +
             "), so the mistaken reshape reads the same numbers; give d_v another size to see it fail";
    r.output = correct.output;
    r.output_diff = Matrix::Zero(correct.output.rows(), correct.output.cols());
    return r;
  }
  const MatrixD out = layerOutput(scene, head_outputs);
  const MatrixD diff = out - correct.output.cast<double>();
  r.output = out.cast<float>();
  r.output_diff = diff.cast<float>();
  r.max_abs_output_diff = diff.size() ? diff.cwiseAbs().maxCoeff() : 0.0;
  return r;
}

}  // namespace attnscope
