// Direct logit attribution (head_finding.h): the residual stream at one position split into its parts (the
// forward's trace), each head's part recomputed from its weights over the keys and the layer's normed input,
// every part read through the final norm with its scale frozen. In double throughout.
#include <cmath>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/model/families.h"
#include "attnscope/model/head_finding.h"
#include "model/arch/model_view.h"

namespace attnscope::model {

namespace {

using VectorD = Eigen::RowVectorXd;

// Query `position`'s weights over every key in head `head` of `layer`: the kept map's row, or recomputed.
VectorD weightRow(const ForwardResult& f, int layer, int head, int position) {
  if (f.keepsMaps()) return f.keptMap(layer * f.layout.n_head + head).row(position).cast<double>();
  Matrix row;  // (1, n)
  weightRows(f.tileScene(layer), *f.layerStats(layer, head), head, position, position + 1, row);
  return row.row(0).cast<double>();
}

// Output columns [col0, col0 + count) of a projection applied to the row vector u (d): u W^T or u W (conv1d).
VectorD project(const VectorD& u, const Matrix& w, bool conv1d, int col0, int count) {
  if (conv1d) return u * w.middleCols(col0, count).cast<double>();
  return u * w.middleRows(col0, count).transpose().cast<double>();
}

}  // namespace

double LogitAttribution::sum() const {
  double s = embedding + final_bias;
  for (std::size_t l = 0; l < mlp.size(); ++l) {
    for (double h : heads[l]) s += h;
    s += attention_bias[l] + attention_rest[l] + mlp[l];
  }
  return s;
}

std::string logitAttributionRefusal(const Model& model) {
  const Architecture& a = model.architecture();
  if (a.residual != Residual::PostNorm) return "";
  // BERT, RoBERTa: norms between the parts, and no unembedding read
  return "direct logit attribution needs a decoder: " + familyDisplayName(a.model_type) +
         " is an encoder, whose residual stream passes a norm after every sublayer, so no head writes to a logit "
         "directly";
}

LogitAttribution logitAttribution(const Model& model, const ForwardResult& forward, int position, int target,
                                  std::size_t budget_bytes) {
  const ModelView v = viewOf(model);
  const Architecture& a = v.arch;
  const int layers = a.n_layer, H = a.n_head, hd = a.head_dim, d = a.hidden;
  if (!logitAttributionRefusal(model).empty())
    throw InputError("dla", "a decoder (an encoder's residual stream passes a norm after every sublayer)",
                     familyDisplayName(a.model_type) + ", an encoder");
  if (position < 0 || position >= forward.n)
    throw InputError("--dla-position", "a token from 0 to " + std::to_string(forward.n - 1), std::to_string(position));
  if (forward.trace.rows() != 2 * layers + 1 || static_cast<int>(forward.ln1.size()) != layers)
    throw InputError("--dla-position", "a forward traced at the position, with its layers' normed inputs",
                     "a forward without them");
  const Matrix unembed_file = loadUnembedding(model.dir, a, budget_bytes);
  const Matrix& unembed = unembed_file.size() ? unembed_file : *v.embed;  // (vocab, d)
  const RowVector hidden = forward.hidden.row(position);
  LogitAttribution r;
  r.position = position;
  if (target < 0) {  // the top prediction: the largest logit, the lowest id among equals
    const Eigen::VectorXf logits = unembed * hidden.transpose();
    Eigen::Index best = 0;
    logits.maxCoeff(&best);
    target = static_cast<int>(best);
  }
  if (target >= unembed.rows())
    throw InputError("--dla-target", "a token id below the vocabulary's " + std::to_string(unembed.rows()),
                     std::to_string(target));
  r.target = target;
  const VectorD w_u = unembed.row(target).cast<double>();
  r.logit = hidden.cast<double>().dot(w_u);

  // The final norm with its scale frozen: each part p contributes (p - mean p) . u / s (LayerNorm) or p . u / s.
  const VectorD x = forward.trace.row(2 * layers).cast<double>();
  const bool layer_norm = a.norm == NormKind::LayerNorm;
  const double mean = layer_norm ? x.mean() : 0.0;
  const double s = std::sqrt((x.array() - mean).square().mean() + a.norm_eps);
  VectorD u = v.final_g->cast<double>().array() * w_u.array();
  if (layer_norm) u.array() -= u.mean();  // (p - mean p) . u = p . (u - mean u)
  const auto part = [&](const VectorD& p) { return p.dot(u) / s; };
  if (layer_norm && v.final_b && v.final_b->size()) r.final_bias = v.final_b->cast<double>().dot(w_u);

  r.embedding = part(forward.trace.row(0).cast<double>());
  r.heads.assign(static_cast<std::size_t>(layers), std::vector<double>(static_cast<std::size_t>(H)));
  r.attention_bias.assign(static_cast<std::size_t>(layers), 0.0);
  r.attention_rest.assign(static_cast<std::size_t>(layers), 0.0);
  r.mlp.assign(static_cast<std::size_t>(layers), 0.0);
  const int q_dim = a.qDim(), kv_dim = a.kvDim();
  for (int l = 0; l < layers; ++l) {
    const LayerView& L = v.layers[static_cast<std::size_t>(l)];
    const Matrix& ln1 = forward.ln1[static_cast<std::size_t>(l)];  // (n, d)
    const VectorD before = forward.trace.row(2 * l).cast<double>(), after_attn = forward.trace.row(1 + 2 * l).cast<double>();
    const VectorD attention = after_attn - before;
    std::vector<VectorD> outs(static_cast<std::size_t>(H));  // each head's z_h W_O^h (d)
    for (int h = 0; h < H; ++h) {
      const int kv = a.layout().kvHead(h);
      const VectorD w = weightRow(forward, l, h, position);  // (n)
      // z = sum_j w_j (x_j W_V + b_V) = (w . X) W_V + (sum w) b_V: one (d) vector through W_V, not n of them.
      const VectorD mixed = w * ln1.cast<double>();
      VectorD z = project(mixed, *L.w_qkv, a.conv1d, q_dim + kv_dim + kv * hd, hd);
      if (L.b_qkv && L.b_qkv->size()) z += w.sum() * L.b_qkv->segment(q_dim + kv_dim + kv * hd, hd).cast<double>();
      // Head h's part of W_O: its input columns h hd .. (h+1) hd; (hidden, q_dim), or (q_dim, hidden) for conv1d.
      const VectorD out = a.conv1d ? VectorD(z * L.w_o->middleRows(h * hd, hd).cast<double>())
                                   : VectorD(z * L.w_o->middleCols(h * hd, hd).transpose().cast<double>());
      outs[static_cast<std::size_t>(h)] = out;
    }
    VectorD bias = VectorD::Zero(d);
    if (L.b_o && L.b_o->size()) bias = L.b_o->cast<double>();
    // The attention's branch norm (Gemma 2/3's post_attention_layernorm, OLMo 2's): RMSNorm, linear once its scale
    // over this position's whole output o = sum of heads + b_O is frozen.
    const RowVector* post = L.attn_norms.branch.g;
    if (post) {
      VectorD o = bias;
      for (const VectorD& out : outs) o += out;
      const VectorD scale = post->cast<double>() / std::sqrt(o.squaredNorm() / d + a.norm_eps);
      for (VectorD& out : outs) out = out.cwiseProduct(scale);
      bias = bias.cwiseProduct(scale);
    }
    VectorD heads_sum = VectorD::Zero(d);
    for (int h = 0; h < H; ++h) {
      heads_sum += outs[static_cast<std::size_t>(h)];
      r.heads[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)] = part(outs[static_cast<std::size_t>(h)]);
    }
    r.attention_bias[static_cast<std::size_t>(l)] = part(bias);
    r.attention_rest[static_cast<std::size_t>(l)] = part(attention - heads_sum - bias);
    r.mlp[static_cast<std::size_t>(l)] = part(forward.trace.row(2 + 2 * l).cast<double>() - after_attn);
  }
  return r;
}

nlohmann::ordered_json logitAttributionJson(const LogitAttribution& dla) {
  nlohmann::ordered_json j;
  j["position"] = dla.position;
  j["target"] = dla.target;
  j["logit"] = dla.logit;
  j["heads"] = dla.heads;
  j["attention_bias"] = dla.attention_bias;
  j["attention_rest"] = dla.attention_rest;
  j["mlp"] = dla.mlp;
  j["embedding"] = dla.embedding;
  j["final_bias"] = dla.final_bias;
  j["sum"] = dla.sum();
  return j;
}

}  // namespace attnscope::model
