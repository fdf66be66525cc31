// Which heads matter, causally: a metric on the model's prediction, and how it moves when a head is ablated (its
// output zeroed, or replaced by its mean over the positions) or patched from another run (activation patching
// between a clean and a corrupted text of the same length, the IOI setup; Wang et al. 2022, Heimersheim and Nanda
// 2024). Every intervention reruns the forward from its layer on, from the kept run's residual stream entering that
// layer (ForwardOptions::start_layer), never from layer 0: the layers before it are the kept run's exactly.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/eigen.h"
#include "attnscope/model/architecture.h"
#include "attnscope/model/model.h"
#include "attnscope/types.h"

namespace attnscope::model {

// What is measured on a forward's final hidden states, at `position` (-1: the last token):
//   LogitDiff: logit[target] - logit[other];  LogProb: log softmax(logits)[target];
//   Loss: a decoder's mean next-token cross-entropy over positions max(position, 0) .. n - 2 (the second half of a
//   repeated text, say, where an induction head predicts); an encoder's (BERT, RoBERTa) mean cross-entropy of each
//   position's own token over max(position, 0) .. n - 1 (how well the masked LM reconstructs the text; for a
//   [MASK], measure logprob:T or logit-diff:A,B at its position).
// Logits are the final hidden state times the unembedding (the embedding where tied), soft-capped where the model
// caps them (Gemma 2's final_logit_softcapping); an encoder's go through its masked-LM head (LogitHead).
struct PatchMetric {
  enum class Kind { LogitDiff, LogProb, Loss } kind = Kind::LogitDiff;
  int position = -1;
  int target = -1, other = -1;  // token ids
};
// "logit-diff:A,B", "logprob:T", "loss", each of A, B, T a token id (digits) or a text `model`'s tokenizer makes
// one token of (" Mary"); InputError naming --metric otherwise (a text of several tokens says which).
PatchMetric parsePatchMetric(const Model& model, const std::string& text);
std::string patchMetricText(const PatchMetric& metric);  // with ids: "logit-diff:3,7"

// Mean: each head's (or MLP's) output averaged over the run's positions (or a reference text's: PatchOptions),
// at every position.
enum class Ablation { Zero, Mean };

// The maps of one run of interventions. Each value is the metric after that intervention; `normalised` (patching
// only) is (value - corrupt) / (clean - corrupt): 1 where the intervention restores the clean metric, 0 where it
// changes nothing (NaN where clean == corrupt).
struct PatchMaps {
  std::string kind;      // "ablation (zero)", "ablation (mean)", "patching (clean into corrupt)", ...
  PatchMetric metric;
  double clean = 0, corrupt = 0;  // the metric of the runs without intervention (ablation: corrupt unused)
  Eigen::MatrixXd heads;          // (layers, heads): each head's output ablated or patched
  Eigen::MatrixXd layers;         // (layers, 1): every head of the layer at once (its attention output; zero
                                  // ablation keeps W_O's bias, where the model has one)
  Eigen::MatrixXd mlp;            // (layers, 1): the layer's MLP output (a routed MLP: its experts' sum)
  Eigen::MatrixXd residual;       // (layers, n): patching only, the residual stream entering (layer, position)
  Eigen::MatrixXd normalised(const Eigen::MatrixXd& values) const;
};

struct PatchOptions {
  // Called after each intervention with (done, total); returning false stops: PatchCancelled is thrown.
  std::function<bool(int done, int total)> progress{};
  std::size_t budget_bytes = 0;  // for the forwards (0: defaultMemoryBudget())
  // Ablation::Mean: the means over this text's positions (token ids, any length up to the model's) instead of
  // over the ablated run's own.
  std::vector<int> reference{};
};
struct PatchCancelled : std::runtime_error {
  PatchCancelled() : std::runtime_error("patching cancelled") {}
};

// Why `model` has no metric to measure, in one sentence naming its family; "" for every family attnscope reads (the
// decoders' next-token prediction, the encoders' masked-LM head). Kept for a family that has neither.
std::string patchRefusal(const Model& model);

// What turns final hidden states into logits: the unembedding (loadUnembedding; empty: tied, the embedding), and for
// an encoder its masked-LM head before the embedding (loadMaskedLmHead).
struct LogitHead {
  Matrix unembed;
  std::optional<MaskedLmHead> masked_lm;
};
// `model`'s, read from its folder: InputError naming the missing tensor for an encoder saved without its head.
LogitHead loadLogitHead(const Model& model, std::size_t budget_bytes = 0);

// The metric of a forward's final hidden states (n, hidden) for ids (n). Throws InputError naming --metric for a
// token id outside the vocabulary or a position outside the text.
double patchMetricValue(const Model& model, const LogitHead& head, const Matrix& hidden, const std::vector<int>& ids,
                        const PatchMetric& metric);

// Every head, every layer's heads at once and every layer's MLP ablated on `ids`.
PatchMaps ablateHeads(const Model& model, const std::vector<int>& ids, const PatchMetric& metric, Ablation ablation,
                      const PatchOptions& options = {});
// Activation patching between two texts of the same token count. into_corrupt (denoising): the corrupt run with
// one clean activation patched in; else (noising) the clean run with one corrupt activation. Heads, layers' attention
// and MLP outputs, and the residual stream at each (layer, position).
PatchMaps patchActivations(const Model& model, const std::vector<int>& clean, const std::vector<int>& corrupt,
                           const PatchMetric& metric, bool into_corrupt, const PatchOptions& options = {});

// {"kind", "metric", "clean", "corrupt", "heads": [layer][head], "heads_normalised", "layers", "mlp", "residual":
// [layer][position], "residual_normalised", "tokens"} (NaN as null).
nlohmann::ordered_json patchMapsJson(const PatchMaps& maps, const std::vector<std::string>& tokens);

}  // namespace attnscope::model
