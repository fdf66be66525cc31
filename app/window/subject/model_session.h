// The checkpoint the window shows in its centre pane (any family model::loadModel reads: GPT-2, Llama, Mistral,
// Qwen2, Qwen3): the folder and text typed in the Checkpoint tab, and the forward over them, run off the UI thread
// (loading and the forward of GPT-2 small take seconds) with its progress per layer and a cancel. The UI thread calls
// poll() once a frame; it never waits for the forward. Or, instead of a forward, an attention tensor opened from a file
// (the file bar's Open): the views need only per-layer per-head maps and token labels, which both give.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/arrays/attention_tensor.h"
#include "attnscope/model/head_finding.h"
#include "attnscope/model/model.h"
#include "attnscope/model/tokenizer.h"
#include "window/latest_worker.h"
#include "window/maps/token_attention.h"
#include "attnscope/model/patching.h"

namespace attnscope::app {

class RunMaps;  // maps/run_maps.h

class ModelSession {
 public:
  ModelSession();
  ~ModelSession();  // stops a running forward at its next layer

  std::string dir;                               // the checkpoint folder, as typed
  static constexpr const char* kDefaultText = "The cat sat on the mat.";
  std::string text = kDefaultText;  // as typed

  // Starts loading `dir` (once per folder) and the forward over `text`, replacing one that has not started. A
  // path to a file in the folder (its config.json) opens the folder; a folder that is not there is refused in
  // `error` ("no such folder: PATH") before anything is read.
  // `repeated` > 0: instead of the text, that many random token ids and the same again (head_finding.h's
  // repeatedRandomTokens, seeded by `repeated_seed`), the text on which induction heads show.
  void start(int repeated = 0);
  int repeated_length = 50, repeated_seed = 0;  // the Checkpoint tab's repeated-random-tokens fields
  // The forward on the GPU (GpuForward, on the worker thread's own headless context, the weights kept there
  // between runs): what start() asks when the window's backend is the GPU. Where none starts, the CPU's.
  bool on_gpu = false;
  // Where the forward shown was computed: "the CPU", "the GPU (RENDERER)", and what its run-time check said.
  const std::string& computedOn() const { return computed_on_; }
  // Asks the running forward to stop after its current layer; what was shown before stays.
  void cancel();
  // Once a frame: takes a finished forward (or its error). True when a new forward landed this frame.
  bool poll();
  bool running() const { return running_; }
  int layersDone() const { return progress_->layers_done.load(); }
  int layersTotal() const { return progress_->layers_total.load(); }
  // While the weights go up to the GPU (the first run of a checkpoint on_gpu): bytes done of the total; 0 of 0 else.
  std::pair<std::size_t, std::size_t> uploadDone() const {
    return {progress_->upload_done.load(), progress_->upload_total.load()};
  }

  // Shows a saved attention tensor from `path` in place of any forward (a forward still running is cancelled).
  void showTensor(arrays::AttentionTensor tensor, const std::string& path);
  // The tensor's file while one is shown (else ""), and its analysis for one layer (cached per layer).
  const std::string& tensorFile() const { return tensor_file_; }
  const arrays::TensorLayerAnalysis& tensorAnalysis(int layer);
  // What is shown, in a few words: the family ("GPT-2") or the tensor's file name ("attn.npz [layer0]").
  std::string title() const;

  // The last forward that finished or tensor opened (n == 0: none yet), with its checkpoint and token labels.
  const model::ForwardResult& forward() const { return *forward_; }
  // The same forward, shared: background work on it (the grid's pooled tiles) holds this, so a newer forward
  // landing only drops the session's reference and the old one lives until that work ends. Never mutated.
  std::shared_ptr<const model::ForwardResult> sharedForward() const { return forward_; }
  // The checkpoint that made forward(); null while a tensor is shown.
  const model::Model* checkpoint() const { return tensor_file_.empty() ? checkpoint_.get() : nullptr; }
  std::shared_ptr<const model::Model> sharedCheckpoint() const { return tensor_file_.empty() ? checkpoint_ : nullptr; }
  // Whether the maps can be weighted by value norms: a checkpoint's, or a capture's that stores v and W_O's rows.
  bool hasValueNorms() const { return checkpoint() != nullptr || (!tensor_file_.empty() && tensor_value_norms_); }
  // The checkpoint's layers x heads and each head's kv head (call only with a checkpoint).
  const model::HeadLayout& layout() const { return forward_->layout; }
  int numLayers() const { return checkpoint_->layout().n_layer; }
  // Per layer, the keys a query sees: 0 = every earlier key, W = the last W (a sliding window; GPT-2 and a
  // tensor: 0).
  int windowOf(int layer) const;
  // The checkpoint's shapes in words: "2 layers x 4 heads, 2 KV heads, head_dim 8".
  std::string describe() const;
  // The weights' dtype as config.json states it ("bfloat16", from torch_dtype or dtype), else "".
  const std::string& statedDtype() const { return stated_dtype_; }
  const std::vector<std::string>& labels() const { return labels_; }
  // The labels as words a reader reads (model::tokenWords), made once when the labels change: the token strip
  // draws them every frame.
  const std::vector<model::TokenWord>& words() const { return words_; }
  // The tokens as ids (a tensor's: one id per distinct label), for the scores that compare tokens.
  const std::vector<int>& ids() const { return ids_; }
  // Every layer's and head's head-type scores ([layer][head], head_finding.h's modelHeadScores), computed off the
  // UI thread once per forward or tensor: null until they land (asking starts the work).
  using HeadScores = std::vector<std::vector<HeadTypeScores>>;
  const HeadScores* headScores();
  // The attention rollout of the run (gpt2.h's attentionRollout, (n, n)), computed off the UI thread once per
  // forward or tensor (L products of n x n matrices: seconds at 1024 tokens): null until it lands.
  const Matrix* rollout();
  // The composition of every head with every later head (head_finding.h's compositionScores), from the
  // checkpoint's weights alone (no forward), computed off the UI thread once per checkpoint: null until it lands
  // (then `error` says why it was refused, e.g. past the memory budget) and while a tensor is shown.
  struct HeadPair {
    int la = 0, ha = 0, lb = 0, hb = 0;  // head ha of layer la writes, head hb of the later layer lb reads
    double score = 0;
  };
  struct CompositionResult {
    model::Composition scores;
    std::array<std::vector<HeadPair>, 3> strongest;  // q, k, v: the five strongest pairs of the model, strongest first
    std::string error;
  };
  const CompositionResult* composition();
  // While composition() is null: the fraction of its work done, 0 to 1.
  float compositionDone() const { return composition_done_->load(); }
  // Direct logit attribution (head_finding.h's logitAttribution) at `position` (from 0) for token id `target`
  // (-1: the top prediction there), off the UI thread: from the forward itself at its last position (its trace),
  // elsewhere through one more forward traced there (maps dropped). Null until it lands, and for a tensor.
  struct Attribution {
    model::LogitAttribution dla;
    std::string error;  // why not (an id outside the vocabulary ...)
  };
  const Attribution* logitAttribution(int position, int target);
  // Which heads matter (model/patching.h) off the UI thread, once per Run: `kind` 0 zero ablation, 1 mean
  // ablation, 2 patching clean into corrupt (denoising), 3 corrupt into clean; `metric` as --metric takes it
  // ("logit-diff: Mary, John"); `corrupt` the corrupted text (kinds 2 and 3). Null until it lands (or for a tensor).
  struct Patching {
    model::PatchMaps maps;
    std::string error;  // why not (a metric naming no token, texts of different lengths, cancelled)
  };
  struct PatchRequest {
    int kind = 0;  // FindHeadsState::patch_kind's
    std::string metric = "loss", corrupt, reference;
    int position = -1;  // the metric's (PatchMetric::position)
    int run = 0;  // the Run button's count: each press computes again
    bool operator==(const PatchRequest&) const = default;
  };
  const Patching* patching(const PatchRequest& request);
  bool patchingPending() const { return patching_.pending(); }
  // While patching() is null: interventions done and their total; cancel() stops at the next batch.
  std::pair<int, int> patchingDone() const { return {patch_progress_->done.load(), patch_progress_->total.load()}; }
  void cancelPatching() { patch_progress_->cancel = true; }
  // The token view's numbers (maps/token_attention.h) for `of_layer` and `state`, off the UI thread: a capture's
  // layer is read and its heads' row statistics worked out there (seconds at 128k tokens). Null until they land;
  // `weighted`: times the value-norm scales (MapWeighting on).
  const TokenViewValues* tokenAttention(int of_layer, const TokenViewState& state, bool weighted);
  bool tokenAttentionPending() const { return token_attention_.pending(); }
  TokenViewValues token_view_shown;  // the last numbers landed for this subject, drawn while newer ones compute
  bool attributing() const { return attribution_.pending(); }
  // The tokenizer's label of id `id` (" mat"), for the attribution's target.
  std::string tokenLabel(int id) const;
  // A typed target: "" the top prediction (-1), digits an id, else a text the tokenizer makes one token of;
  // nullopt with `error` set otherwise (an id outside the vocabulary, a text of several tokens).
  std::optional<int> targetId(const std::string& typed, std::string& error) const;
  const std::string& ranText() const { return ran_text_; }
  unsigned revision() const { return revision_; }  // bumped when a forward lands
  // Why the last start failed (or that it was cancelled); empty when it ran. `cancelled`: the note is no error.
  std::string error;
  bool cancelled = false;

  // What the centre pane shows of it (model_view.cpp).
  bool shown = false;  // the centre shows the model (else the scene's heads)
  // The one "layer" and "head" of the window (from 0): every control that shows or sets them (the grid's and the
  // Checkpoint tab's steppers, a tile's click, the full-size map, Export, Similarity, the status bar) reads and
  // writes these. focus_head >= 0: map (layer, focus_head) full-size; -1: the grid.
  int layer = 0;
  int focus_head = -1;
  bool focused() const { return focus_head >= 0; }
  // The grid figure the Checkpoint tab exports (as `view`/`model --grid-out`): where, which layers, what came of it.
  std::string figure_path = "attention_grid.png";
  bool figure_all_layers = true;
  std::string figure_note, figure_error;
  std::unique_ptr<RunMaps> renderer;  // created on first draw (needs the GL context)

 private:
  struct Progress {
    std::atomic<int> layers_done{0}, layers_total{0};
    std::atomic<std::size_t> upload_done{0}, upload_total{0};  // bytes of weights to the GPU (on_gpu), as held there
    std::atomic<bool> cancel{false};
  };
  struct Request {
    std::string dir, text;
    int repeated = 0, seed = 0;                      // > 0: repeated random tokens instead of the text
    std::shared_ptr<const model::Model> checkpoint;  // the folder's, when already loaded
    bool gpu = false;                                // on_gpu
  };
  struct Reply {
    std::shared_ptr<const model::Model> checkpoint;
    model::ForwardResult forward;
    std::vector<std::string> labels;
    std::vector<int> ids;
    std::string text, error, stated_dtype, computed_on;
    bool cancelled = false;
  };
  static Reply work(const Request& request, Progress& progress);

  std::shared_ptr<Progress> progress_;  // shared with the worker's thread; outlives worker_
  std::unique_ptr<LatestWorker<Request, Reply>> worker_;
  bool running_ = false;
  std::shared_ptr<const model::Model> checkpoint_;
  std::shared_ptr<const model::ForwardResult> forward_ = std::make_shared<const model::ForwardResult>();
  std::vector<std::string> labels_;
  std::vector<model::TokenWord> words_;  // tokenWords(labels_)
  std::string ran_text_;
  std::string stated_dtype_, computed_on_;
  unsigned revision_ = 0;
  std::vector<int> ids_;
  // What a value derived off the UI thread reads: the checkpoint (null for a tensor), the forward and its ids.
  struct Inputs {
    std::shared_ptr<const model::Model> checkpoint;
    std::shared_ptr<const model::ForwardResult> forward;
    std::vector<int> ids;
  };
  // A value derived from the Inputs off the UI thread, once per key (a forward's revision; the checkpoint's for
  // composition; the revision, position and target for logit attribution): get() returns it once it has landed
  // for `key`, else asks for it (once) and returns null.
  template <typename T, typename Key = unsigned>
  class PerForward {
   public:
    using Compute = std::function<T(const Inputs&, const Key&)>;
    explicit PerForward(Compute compute) : compute_(std::move(compute)) {}
    const T* get(const Inputs& inputs, const Key& key) {
      if (!worker_)
        worker_ = std::make_unique<LatestWorker<Request, Reply>>([compute = compute_](const Request& r) {
          return Reply{compute(r.inputs, r.key), r.key};
        });
      if (auto reply = worker_->take(); reply && reply->second.key == key) {
        value_ = std::move(reply->second.value);
        landed_ = key;
      }
      if (landed_ == key) return &value_;
      if (asked_ != key) {
        worker_->request(Request{inputs, key});
        asked_ = key;
      }
      return nullptr;
    }
    bool pending() const { return asked_.has_value() && asked_ != landed_; }

   private:
    struct Request {
      Inputs inputs;
      Key key;
    };
    struct Reply {
      T value;
      Key key;
    };
    Compute compute_;
    std::unique_ptr<LatestWorker<Request, Reply>> worker_;
    std::optional<Key> asked_, landed_;  // the key asked for / landed (none yet)
    T value_;
  };
  Inputs inputs() const { return Inputs{checkpoint_, forward_, ids_}; }
  PerForward<HeadScores> scores_;
  PerForward<Matrix> rollout_;
  // How far the composition in flight is, 0 to 1 (compositionScores' estimate); shared with its worker's thread.
  std::shared_ptr<std::atomic<float>> composition_done_ = std::make_shared<std::atomic<float>>(0.0f);
  PerForward<CompositionResult> composition_;
  PerForward<Attribution, std::tuple<unsigned, int, int>> attribution_;
  // revision, layer, head, token, to_it, the weighting (its checkpoint, null for a capture's own norms)
  using TokenAttentionKey = std::tuple<unsigned, int, int, int, int, bool, std::shared_ptr<const model::Model>>;
  PerForward<TokenViewValues, TokenAttentionKey> token_attention_;
  struct PatchProgress {
    std::atomic<int> done{0}, total{0};
    std::atomic<bool> cancel{false};
  };
  std::shared_ptr<PatchProgress> patch_progress_ = std::make_shared<PatchProgress>();
  PerForward<Patching, std::pair<unsigned, PatchRequest>> patching_;
  unsigned checkpoint_revision_ = 0;  // bumped when another checkpoint is loaded
  std::string tensor_file_;           // "" unless a tensor is shown
  std::string tensor_name_;           // the tensor chosen in it ("" for a .npy file)
  bool tensor_value_norms_ = false;   // the tensor carries value norms (arrays::AttentionTensor::value_norms)
  int analysis_layer_ = -1;           // the layer analysis_ describes
  arrays::TensorLayerAnalysis analysis_;
};

}  // namespace attnscope::app
