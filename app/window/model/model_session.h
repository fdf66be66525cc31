// The checkpoint the window shows in its centre pane (any family model::loadModel reads: GPT-2, Llama, Mistral,
// Qwen2, Qwen3): the folder and text typed in the Checkpoint tab, and the forward over them, run off the UI thread
// (loading and the forward of GPT-2 small take seconds) with its progress per layer and a cancel. The UI thread calls poll() once a frame; it never waits for the forward.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/model/model.h"
#include "window/latest_worker.h"

namespace attnscope::app {

class ModelGridRenderer;  // model_grid_renderer.h

class ModelSession {
 public:
  ModelSession();
  ~ModelSession();  // stops a running forward at its next layer

  std::string dir;                                // the checkpoint folder, as typed
  std::string text = "The cat sat on the mat.";  // as typed

  // Starts loading `dir` (once per folder) and the forward over `text`, replacing one that has not started.
  void start();
  // Asks the running forward to stop after its current layer; what was shown before stays.
  void cancel();
  // Once a frame: takes a finished forward (or its error). True when a new forward landed this frame.
  bool poll();
  bool running() const { return running_; }
  int layersDone() const { return progress_->layers_done.load(); }
  int layersTotal() const { return progress_->layers_total.load(); }

  // The last forward that finished (n == 0: none yet), on `ran_text`, with its checkpoint and token labels.
  const model::ForwardResult& forward() const { return forward_; }
  const model::Model* checkpoint() const { return checkpoint_.get(); }
  // The checkpoint's layers x heads and each head's kv head (call only with a checkpoint).
  const model::HeadLayout& layout() const { return forward_.layout; }
  int numLayers() const { return checkpoint_->layout().n_layer; }
  // Per layer, the keys a query sees: 0 = every earlier key, W = the last W (a sliding window; GPT-2: 0).
  int windowOf(int layer) const;
  // The checkpoint's shapes in words: "2 layers x 4 heads, 2 KV heads, head_dim 8".
  std::string describe() const;
  const std::vector<std::string>& labels() const { return labels_; }
  const std::string& ranText() const { return ran_text_; }
  unsigned revision() const { return revision_; }  // bumped when a forward lands
  // Why the last start failed (or that it was cancelled); empty when it ran. `cancelled`: the note is no error.
  std::string error;
  bool cancelled = false;

  // What the centre pane shows of it (model_view.cpp).
  bool shown = false;                     // the centre shows the model (else the scene's heads)
  int focus_layer = -1, focus_head = -1;  // >= 0: that map full-size
  int scene_layer = 0;                    // the layer "Open as scene" opens, from 0
  std::unique_ptr<ModelGridRenderer> renderer;  // created on first draw (needs the GL context)

 private:
  struct Progress {
    std::atomic<int> layers_done{0}, layers_total{0};
    std::atomic<bool> cancel{false};
  };
  struct Request {
    std::string dir, text;
    std::shared_ptr<const model::Model> checkpoint;  // the folder's, when already loaded
  };
  struct Reply {
    std::shared_ptr<const model::Model> checkpoint;
    model::ForwardResult forward;
    std::vector<std::string> labels;
    std::string text, error;
    bool cancelled = false;
  };
  static Reply work(const Request& request, Progress& progress);

  std::shared_ptr<Progress> progress_;  // shared with the worker's thread; outlives worker_
  std::unique_ptr<LatestWorker<Request, Reply>> worker_;
  bool running_ = false;
  std::shared_ptr<const model::Model> checkpoint_;
  model::ForwardResult forward_;
  std::vector<std::string> labels_;
  std::string ran_text_;
  unsigned revision_ = 0;
};

}  // namespace attnscope::app
