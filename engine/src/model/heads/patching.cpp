// Ablation and activation patching on the one forward (model/patching.h): each intervention a forward from its
// layer on (ForwardOptions::start_layer, edit_heads), the metric read from its final hidden states.
#include "attnscope/model/patching.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/error.h"

namespace attnscope::model {

namespace {

// A token typed as an id (digits) or as a text of one token (" Mary"), below the vocabulary's size.
int tokenOf(const Model& model, const std::string& typed, const std::string& whole) {
  const int vocab = model.architecture().vocab_size;
  if (!typed.empty() && typed.find_first_not_of("0123456789") == std::string::npos) {
    if (typed.size() <= 9 && std::stoi(typed) < vocab) return std::stoi(typed);
    throw InputError("--metric", "token ids from 0 to " + std::to_string(vocab - 1), whole);
  }
  const std::vector<int> ids = typed.empty() ? std::vector<int>() : model.tokenizer.encode(typed, false);
  if (ids.size() == 1 && ids[0] < vocab) return ids[0];
  std::string got = "\"" + typed + "\" is " + std::to_string(ids.size()) + " tokens";
  for (std::size_t k = 0; k < std::min<std::size_t>(ids.size(), 4); ++k)
    got += (k ? ", '" : ": '") + model.tokenizer.label(ids[k]) + "'";
  if (ids.size() > 4) got += ", ...";
  throw InputError("--metric", "each token an id or a text of one token", got);
}

// What every intervention's forward keeps: no maps (only what the metric reads), the layer inputs for starts.
ForwardOptions runOptions(bool keep_residual) {
  ForwardOptions o;
  o.keep_ln1 = false;
  o.maps = MapPolicy::Drop;
  o.keep_residual = keep_residual;
  return o;
}

// Rows of a batch of interventions (ForwardOptions::segments): enough for the GEMMs to reuse each weight read, few
// enough that a long text's batch stays small (activations are ~10 floats of hidden a row).
constexpr int kBatchRows = 512;

// One intervention at a layer: the residual stream entering it (the base run's, or one edited), and an edit of
// that layer's heads' outputs (n, n_head head_dim), or none.
struct Intervention {
  const Matrix* residual;
  std::function<void(Eigen::Block<Matrix> heads)> edit;
  std::function<void(Eigen::Block<Matrix> mlp_out)> edit_mlp = {};  // or of the layer's MLP output (n, hidden)
  // Or of the residual stream: its row `row` taken from `from` (n, hidden), copied in when the batch is built (a
  // text's n interventions never hold n residual streams at once).
  int row = -1;
  const Matrix* from = nullptr;
};

struct Runner {
  const Model& model;
  const LogitHead& head;
  const PatchMetric& metric;
  const PatchOptions& options;
  int done = 0, total = 0;

  // Each intervention's metric on `ids`, all of them at `layer`, run from that layer on side by side in batches of
  // segments (one weight read per layer for the batch).
  std::vector<double> run(const std::vector<int>& ids, int layer, const std::vector<Intervention>& list) {
    const int n = static_cast<int>(ids.size()), per_batch = std::max(1, kBatchRows / n);
    std::vector<double> out;
    for (std::size_t first = 0; first < list.size(); first += static_cast<std::size_t>(per_batch)) {
      const int count = static_cast<int>(std::min<std::size_t>(per_batch, list.size() - first));
      Matrix residual(static_cast<Eigen::Index>(count) * n, model.architecture().hidden);
      std::vector<int> batch_ids;
      batch_ids.reserve(static_cast<std::size_t>(count) * ids.size());
      for (int s = 0; s < count; ++s) {
        const Intervention& in = list[first + static_cast<std::size_t>(s)];
        residual.middleRows(static_cast<Eigen::Index>(s) * n, n) = *in.residual;
        if (in.row >= 0) residual.row(static_cast<Eigen::Index>(s) * n + in.row) = in.from->row(in.row);
        batch_ids.insert(batch_ids.end(), ids.begin(), ids.end());
      }
      ForwardOptions o = runOptions(false);
      o.start_layer = layer, o.start_residual = &residual, o.segments = count;
      o.edit_heads = [&](int l, Matrix& heads) {
        if (l != layer) return;
        for (int s = 0; s < count; ++s)
          if (const auto& edit = list[first + static_cast<std::size_t>(s)].edit)
            edit(Eigen::Block<Matrix>(heads, static_cast<Eigen::Index>(s) * n, 0, n, heads.cols()));
      };
      o.edit_mlp = [&](int l, Matrix& mlp_out) {
        if (l != layer) return;
        for (int s = 0; s < count; ++s)
          if (const auto& edit = list[first + static_cast<std::size_t>(s)].edit_mlp)
            edit(Eigen::Block<Matrix>(mlp_out, static_cast<Eigen::Index>(s) * n, 0, n, mlp_out.cols()));
      };
      const ForwardResult f = modelForward(model, batch_ids, o, options.budget_bytes);
      for (int s = 0; s < count; ++s) {
        out.push_back(patchMetricValue(model, head, f.hidden.middleRows(static_cast<Eigen::Index>(s) * n, n), ids,
                                       metric));
        ++done;
      }
      if (options.progress && !options.progress(done, total)) throw PatchCancelled();
    }
    return out;
  }
};

void checkMeasurable(const Model& model) {
  if (const std::string why = patchRefusal(model); !why.empty())
    throw InputError("--metric", "a model with a metric to measure", why);
}

}  // namespace

PatchMetric parsePatchMetric(const Model& model, const std::string& text) {
  PatchMetric m;
  if (text == "loss") {
    m.kind = PatchMetric::Kind::Loss;
  } else if (text.rfind("logprob:", 0) == 0) {
    m.kind = PatchMetric::Kind::LogProb;
    m.target = tokenOf(model, text.substr(8), text);
  } else if (text.rfind("logit-diff:", 0) == 0) {
    const std::string rest = text.substr(11);
    const std::size_t comma = rest.find(',');
    if (comma == std::string::npos) throw InputError("--metric", "logit-diff:A,B, two tokens", text);
    m.kind = PatchMetric::Kind::LogitDiff;
    m.target = tokenOf(model, rest.substr(0, comma), text);
    m.other = tokenOf(model, rest.substr(comma + 1), text);
  } else {
    throw InputError("--metric", "logit-diff:A,B, logprob:T or loss (A, B, T token ids or one-token texts)", text);
  }
  return m;
}

std::string patchMetricText(const PatchMetric& m) {
  switch (m.kind) {
    case PatchMetric::Kind::LogitDiff: return "logit-diff:" + std::to_string(m.target) + "," + std::to_string(m.other);
    case PatchMetric::Kind::LogProb: return "logprob:" + std::to_string(m.target);
    case PatchMetric::Kind::Loss: break;
  }
  return "loss";
}

std::string patchRefusal(const Model&) { return ""; }

LogitHead loadLogitHead(const Model& model, std::size_t budget_bytes) {
  const Architecture& a = model.architecture();
  LogitHead head;
  head.unembed = loadUnembedding(model.dir, a, budget_bytes);
  if (a.residual == Residual::PostNorm) head.masked_lm = loadMaskedLmHead(model.dir, a);  // the encoders
  return head;
}

namespace {

// An encoder's masked-LM head before the embedding, on rows [r0, r1) of the last layer's output: LayerNorm(act(h
// W^T + b)) (rows, hidden), in float as the forward.
Matrix maskedLmTransform(const MaskedLmHead& m, const Architecture& a, const Matrix& hidden, int r0, int r1) {
  Matrix t = hidden.middleRows(r0, r1 - r0) * m.dense.transpose();
  t.rowwise() += m.dense_b;
  for (Eigen::Index i = 0; i < t.rows(); ++i) {
    for (Eigen::Index j = 0; j < t.cols(); ++j) {
      const float z = t(i, j);
      t(i, j) = m.act == Activation::GeluTanh
                    ? 0.5f * z * (1.0f + std::tanh(0.7978845608028654f * (z + 0.044715f * z * z * z)))
                    : 0.5f * z * (1.0f + std::erf(z * 0.70710678118654752f));
    }
    const float mean = t.row(i).mean();
    const float var = (t.row(i).array() - mean).square().mean();
    t.row(i) = ((t.row(i).array() - mean) / std::sqrt(var + static_cast<float>(a.norm_eps))).matrix();
    t.row(i) = (t.row(i).array() * m.norm_g.array() + m.norm_b.array()).matrix();
  }
  return t;
}

}  // namespace

double patchMetricValue(const Model& model, const LogitHead& head, const Matrix& hidden, const std::vector<int>& ids,
                        const PatchMetric& metric) {
  const Architecture& a = model.architecture();
  const Matrix& w_u = head.unembed.size() ? head.unembed : model.weights.embed;  // (vocab, hidden)
  const MaskedLmHead* mlm = head.masked_lm ? &*head.masked_lm : nullptr;
  const int n = static_cast<int>(hidden.rows()), vocab = static_cast<int>(w_u.rows());
  // The rows logits are read from: the hidden states, or an encoder's through its masked-LM head.
  const auto rows = [&](int r0, int r1) -> Matrix {
    return mlm ? maskedLmTransform(*mlm, a, hidden, r0, r1) : Matrix(hidden.middleRows(r0, r1 - r0));
  };
  const auto bias = [&](int id) { return mlm ? static_cast<double>(mlm->bias[id]) : 0.0; };
  const auto check_id = [&](int id) {
    if (id < 0 || id >= vocab)
      throw InputError("--metric", "token ids below the vocabulary's " + std::to_string(vocab), std::to_string(id));
  };
  // Log-softmax of rows [r0, r1) at id_of(row): their logits in one float32 product (the unembedding, vocab x
  // hidden, read once and never copied: a Qwen vocabulary's is 155M floats), soft-capped as the model caps them,
  // the softmax's sums in double.
  const auto log_softmax = [&](int r0, int r1, const std::function<int(int row)>& id_of) {
    Matrix z = rows(r0, r1) * w_u.transpose();  // (rows, vocab)
    if (mlm) z.rowwise() += mlm->bias;
    double sum = 0;
    for (int r = r0; r < r1; ++r) {
      Eigen::ArrayXd row = z.row(r - r0).transpose().cast<double>().array();
      if (a.final_softcap > 0) row = (row / a.final_softcap).tanh() * a.final_softcap;
      const double top = row.maxCoeff();
      sum += row[id_of(r)] - top - std::log((row - top).exp().sum());
    }
    return sum;
  };
  if (metric.kind == PatchMetric::Kind::Loss && mlm) {  // an encoder: each position's own token
    const int from0 = std::max(0, metric.position);
    if (from0 > n - 1)
      throw InputError("--position", "a token from 0 to " + std::to_string(n - 1), std::to_string(from0));
    return -log_softmax(from0, n, [&](int i) { return ids[static_cast<std::size_t>(i)]; }) / (n - from0);
  }
  if (metric.kind == PatchMetric::Kind::Loss) {  // predicting tokens from0 + 1 .. n - 1
    const int from0 = std::max(0, metric.position);
    if (from0 > n - 2)
      throw InputError("--position", "a token from 0 to " + std::to_string(n - 2) + " for the loss (one after it)",
                       std::to_string(from0));
    return -log_softmax(from0, n - 1, [&](int i) { return ids[static_cast<std::size_t>(i) + 1]; }) / (n - 1 - from0);
  }
  const int p = metric.position < 0 ? n - 1 : metric.position;
  if (p >= n) throw InputError("--position", "a token from 0 to " + std::to_string(n - 1), std::to_string(p));
  check_id(metric.target);
  if (metric.kind == PatchMetric::Kind::LogProb) return log_softmax(p, p + 1, [&](int) { return metric.target; });
  check_id(metric.other);
  // Only the two logits: two dot products, with the cap applied to each.
  const Matrix at = rows(p, p + 1);  // (1, hidden)
  const auto logit = [&](int id) {
    double z = w_u.row(id).cast<double>().dot(at.row(0).cast<double>()) + bias(id);
    if (a.final_softcap > 0) z = std::tanh(z / a.final_softcap) * a.final_softcap;
    return z;
  };
  return logit(metric.target) - logit(metric.other);
}

Eigen::MatrixXd PatchMaps::normalised(const Eigen::MatrixXd& values) const {
  const double span = clean - corrupt;
  if (span == 0) return Eigen::MatrixXd::Constant(values.rows(), values.cols(), std::numeric_limits<double>::quiet_NaN());
  return (values.array() - corrupt) / span;
}

PatchMaps ablateHeads(const Model& model, const std::vector<int>& ids, const PatchMetric& metric, Ablation ablation,
                      const PatchOptions& options) {
  checkMeasurable(model);
  const Architecture& a = model.architecture();
  const LogitHead head = loadLogitHead(model, options.budget_bytes);
  const ForwardResult run = modelForward(model, ids, runOptions(true), options.budget_bytes);
  // The means a mean ablation puts in: over this run's positions, or over a reference text's.
  const bool referenced = ablation == Ablation::Mean && !options.reference.empty();
  const ForwardResult reference =
      referenced ? modelForward(model, options.reference, runOptions(true), options.budget_bytes) : ForwardResult();
  const ForwardResult& means = referenced ? reference : run;
  PatchMaps out;
  out.kind = ablation == Ablation::Zero ? "ablation (zero)"
             : referenced               ? "ablation (mean over the reference text)"
                                        : "ablation (mean)";
  out.metric = metric;
  out.clean = patchMetricValue(model, head, run.hidden, ids, metric);
  out.corrupt = std::numeric_limits<double>::quiet_NaN();
  const int layers = a.n_layer, heads = a.n_head, hd = a.head_dim;
  out.heads.resize(layers, heads);
  out.layers.resize(layers, 1);
  out.mlp.resize(layers, 1);
  Runner runner{model, head, metric, options, 0, layers * (heads + 2)};
  for (int l = 0; l < layers; ++l) {
    const RowVector mean = means.head_outputs[static_cast<std::size_t>(l)].colwise().mean();  // (heads hd)
    const RowVector mlp_mean = means.mlp_outputs[static_cast<std::size_t>(l)].colwise().mean();  // (hidden)
    const auto ablate = [&](Eigen::Block<Matrix> m, int h) {
      if (ablation == Ablation::Zero) m.middleCols(h * hd, hd).setZero();
      else m.middleCols(h * hd, hd).rowwise() = mean.segment(h * hd, hd);
    };
    const Matrix* residual = &run.residual[static_cast<std::size_t>(l)];
    std::vector<Intervention> list;
    for (int h = 0; h < heads; ++h) list.push_back({residual, [&ablate, h](Eigen::Block<Matrix> m) { ablate(m, h); }});
    list.push_back({residual, [&](Eigen::Block<Matrix> m) {
                      for (int h = 0; h < heads; ++h) ablate(m, h);
                    }});
    list.push_back({residual, {}, [&](Eigen::Block<Matrix> m) {
                      if (ablation == Ablation::Zero) m.setZero();
                      else m.rowwise() = mlp_mean;
                    }});
    const std::vector<double> values = runner.run(ids, l, list);
    for (int h = 0; h < heads; ++h) out.heads(l, h) = values[static_cast<std::size_t>(h)];
    out.layers(l, 0) = values[static_cast<std::size_t>(heads)];
    out.mlp(l, 0) = values[static_cast<std::size_t>(heads + 1)];
  }
  return out;
}

PatchMaps patchActivations(const Model& model, const std::vector<int>& clean, const std::vector<int>& corrupt,
                           const PatchMetric& metric, bool into_corrupt, const PatchOptions& options) {
  checkMeasurable(model);
  if (clean.size() != corrupt.size())
    throw InputError("--corrupt", std::to_string(clean.size()) + " tokens (the clean text's)",
                     std::to_string(corrupt.size()));
  const Architecture& a = model.architecture();
  const LogitHead head = loadLogitHead(model, options.budget_bytes);
  const ForwardResult clean_run = modelForward(model, clean, runOptions(true), options.budget_bytes);
  const ForwardResult corrupt_run = modelForward(model, corrupt, runOptions(true), options.budget_bytes);
  PatchMaps out;
  out.kind = into_corrupt ? "patching (clean into corrupt)" : "patching (corrupt into clean)";
  out.metric = metric;
  out.clean = patchMetricValue(model, head, clean_run.hidden, clean, metric);
  out.corrupt = patchMetricValue(model, head, corrupt_run.hidden, corrupt, metric);
  // The run intervened on (base) and the run its activations come from (source).
  const ForwardResult& base = into_corrupt ? corrupt_run : clean_run;
  const ForwardResult& source = into_corrupt ? clean_run : corrupt_run;
  const std::vector<int>& ids = into_corrupt ? corrupt : clean;
  const int layers = a.n_layer, heads = a.n_head, hd = a.head_dim, n = static_cast<int>(ids.size());
  out.heads.resize(layers, heads);
  out.layers.resize(layers, 1);
  out.mlp.resize(layers, 1);
  out.residual.resize(layers, n);
  Runner runner{model, head, metric, options, 0, layers * (heads + 2 + n)};
  for (int l = 0; l < layers; ++l) {
    const Matrix& from = source.head_outputs[static_cast<std::size_t>(l)];
    const Matrix* residual = &base.residual[static_cast<std::size_t>(l)];
    std::vector<Intervention> list;
    for (int h = 0; h < heads; ++h)
      list.push_back({residual, [&from, h, hd](Eigen::Block<Matrix> m) {
                        m.middleCols(h * hd, hd) = from.middleCols(h * hd, hd);
                      }});
    list.push_back({residual, [&from](Eigen::Block<Matrix> m) { m = from; }});
    const Matrix& from_mlp = source.mlp_outputs[static_cast<std::size_t>(l)];
    list.push_back({residual, {}, [&from_mlp](Eigen::Block<Matrix> m) { m = from_mlp; }});
    // The residual stream entering layer l at position p (at layer 0: the embedding, token and position).
    for (int p = 0; p < n; ++p) list.push_back({residual, {}, {}, p, &source.residual[static_cast<std::size_t>(l)]});
    const std::vector<double> values = runner.run(ids, l, list);
    for (int h = 0; h < heads; ++h) out.heads(l, h) = values[static_cast<std::size_t>(h)];
    out.layers(l, 0) = values[static_cast<std::size_t>(heads)];
    out.mlp(l, 0) = values[static_cast<std::size_t>(heads + 1)];
    for (int p = 0; p < n; ++p) out.residual(l, p) = values[static_cast<std::size_t>(heads + 2 + p)];
  }
  return out;
}

nlohmann::ordered_json patchMapsJson(const PatchMaps& maps, const std::vector<std::string>& tokens) {
  const auto matrix = [](const Eigen::MatrixXd& m) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      nlohmann::ordered_json row = nlohmann::ordered_json::array();
      for (Eigen::Index j = 0; j < m.cols(); ++j)
        row.push_back(std::isfinite(m(i, j)) ? nlohmann::ordered_json(m(i, j)) : nlohmann::ordered_json(nullptr));
      rows.push_back(std::move(row));
    }
    return rows;
  };
  const auto number = [](double x) { return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr); };
  nlohmann::ordered_json j;
  j["kind"] = maps.kind;
  j["metric"] = patchMetricText(maps.metric);
  j["position"] = maps.metric.position;
  j["clean"] = number(maps.clean);
  j["corrupt"] = number(maps.corrupt);
  j["heads"] = matrix(maps.heads);
  j["layers"] = matrix(maps.layers);
  j["mlp"] = matrix(maps.mlp);
  if (maps.residual.size() > 0) {
    j["heads_normalised"] = matrix(maps.normalised(maps.heads));
    j["layers_normalised"] = matrix(maps.normalised(maps.layers));
    j["mlp_normalised"] = matrix(maps.normalised(maps.mlp));
    j["residual"] = matrix(maps.residual);
    j["residual_normalised"] = matrix(maps.normalised(maps.residual));
  }
  j["tokens"] = tokens;
  return j;
}

}  // namespace attnscope::model
