// The checkpoint and its forward, off the UI thread.
#include "window/subject/model_session.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <variant>

#include "attnscope/error.h"
#include "attnscope/gpu_forward.h"
#include "attnscope/json_file.h"
#include "attnscope/model/families.h"
#include "attnscope/model/head_finding.h"
#include "attnscope/scene/scene.h"
#include "attnscope/settings.h"
#include "window/maps/run_maps.h"

namespace attnscope::app {

namespace {

// config.json's torch_dtype (or dtype), for the model card; "" where it names none or cannot be read (loadModel
// has read the file already: its errors were said then).
std::string configDtype(const std::string& dir) {
  try {
    const nlohmann::json config = readJsonFile(dir + "/config.json", std::size_t{1} << 20);
    for (const char* field : {"torch_dtype", "dtype"})
      if (config.contains(field) && config[field].is_string()) return config[field].get<std::string>();
  } catch (const std::exception&) {
  }
  return "";
}

// The folder a typed checkpoint path names: the path itself, or the folder of a file in it (its config.json).
// Empty with `error` set when there is no such folder.
std::string checkpointFolder(const std::string& typed, std::string& error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path(typed);
  if (fs::is_regular_file(path, ec)) return path.has_parent_path() ? path.parent_path().string() : ".";
  if (fs::is_directory(path, ec)) return typed;
  error = "checkpoint folder: no such folder: " + typed;
  return "";
}

}  // namespace

ModelSession::ModelSession()
    : progress_(std::make_shared<Progress>()),
      scores_([](const Inputs& in, unsigned) { return model::modelHeadScores(*in.forward, in.ids); }),
      rollout_([](const Inputs& in, unsigned) { return model::attentionRollout(*in.forward, in.forward->layout); }),
      composition_([done = composition_done_](const Inputs& in, unsigned) {
        CompositionResult r;
        try {
          done->store(0.0f);
          r.scores = model::compositionScores(*in.checkpoint, 0, done.get());
          const model::Composition& c = r.scores;
          for (int mode = 0; mode < 3; ++mode) {
            const std::vector<double>& m = mode == 0 ? c.q : mode == 1 ? c.k : c.v;
            std::vector<HeadPair>& top = r.strongest[static_cast<std::size_t>(mode)];
            for (int la = 0; la < c.n_layer; ++la)
              for (int ha = 0; ha < c.n_head; ++ha)
                for (int lb = la + 1; lb < c.n_layer; ++lb)
                  for (int hb = 0; hb < c.n_head; ++hb) {
                    const double v = c.at(m, la, ha, lb, hb);
                    if (top.size() == 5 && v <= top.back().score) continue;
                    if (top.size() == 5) top.pop_back();
                    top.insert(std::upper_bound(top.begin(), top.end(), v,
                                                [](double x, const HeadPair& p) { return x > p.score; }),
                               HeadPair{la, ha, lb, hb, v});
                  }
          }
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        return r;
      }),
      attribution_([](const Inputs& in, const std::tuple<unsigned, int, int>& key) {
        const auto [revision, position, target] = key;
        Attribution r;
        try {
          const model::ForwardResult* traced = in.forward.get();
          model::ForwardResult retraced;
          if (position != in.forward->n - 1) {  // the window's forward traced its last position only
            model::ForwardOptions options;
            options.keep_ln1 = true;
            options.maps = MapPolicy::Drop;
            options.trace_position = position;
            retraced = model::modelForward(*in.checkpoint, in.ids, options);
            traced = &retraced;
          }
          r.dla = model::logitAttribution(*in.checkpoint, *traced, position, target);
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        return r;
      }),
      token_attention_([](const Inputs& in, const TokenAttentionKey& key) {
        const auto& [revision, of_layer, head, token, to_it, weighted, checkpoint] = key;
        (void)revision;
        try {
          return tokenViewValues(*in.forward, of_layer, TokenViewState{token, to_it, head},
                                 MapWeighting{weighted, checkpoint});
        } catch (const std::exception& e) {  // a capture's layer that cannot be read: said in the view
          TokenViewValues failed;
          failed.error = e.what();
          return failed;
        }
      }),
      patching_([progress = patch_progress_](const Inputs& in, const std::pair<unsigned, PatchRequest>& key) {
        const PatchRequest& r = key.second;
        Patching out;
        try {
          progress->done = 0, progress->total = 0, progress->cancel = false;
          model::PatchMetric metric = model::parsePatchMetric(*in.checkpoint, r.metric);
          metric.position = r.position;
          model::PatchOptions options;
          options.progress = [&progress](int done, int total) {
            progress->done = done, progress->total = total;
            return !progress->cancel.load();
          };
          if (r.kind < 2 || r.kind == 4) {
            if (r.kind == 4) {
              options.reference = in.checkpoint->tokenizer.encodeAtMost(
                  r.reference, static_cast<std::size_t>(in.checkpoint->maxTokens()));
              if (options.reference.empty()) throw InputError("reference", "a text of at least one token", "none");
            }
            out.maps = model::ablateHeads(*in.checkpoint, in.ids, metric,
                                          r.kind == 0 ? model::Ablation::Zero : model::Ablation::Mean, options);
          } else {
            const std::vector<int> corrupt = in.checkpoint->tokenizer.encodeAtMost(
                r.corrupt, static_cast<std::size_t>(in.checkpoint->maxTokens()));
            out.maps = model::patchActivations(*in.checkpoint, in.ids, corrupt, metric, r.kind == 2, options);
          }
        } catch (const model::PatchCancelled&) {
          out.error = "cancelled";
        } catch (const std::exception& e) {
          out.error = e.what();
        }
        return out;
      }) {}

ModelSession::~ModelSession() {
  progress_->cancel = true;
  patch_progress_->cancel = true;  // a patching run stops at its next batch
  worker_.reset();  // joins: the forward stops at its next layer
}

namespace {

// The worker thread's GPU forward: a headless context of its own (a GL context is current on one thread), the
// weights of the checkpoint it last ran uploaded there and kept; made again for another checkpoint. Destroyed with
// the worker thread, on it. Throws GpuUnavailable where no context starts.
GpuForward& workerGpuForward(const std::shared_ptr<const model::Model>& checkpoint,
                             const GpuForward::UploadProgress& progress) {
#ifdef ATTNSCOPE_HAS_GPU
  thread_local std::shared_ptr<const model::Model> uploaded;  // what `forward` reads the embedding from
  thread_local std::unique_ptr<GpuForward> forward;
  if (!forward || uploaded != checkpoint) {
    forward.reset();
    forward = std::make_unique<GpuForward>(checkpoint->weights, GpuOptions{}, progress);
    uploaded = checkpoint;
  }
  return *forward;
#else
  (void)checkpoint, (void)progress;
  throw GpuUnavailable("this build has no GPU backend");
#endif
}

// The forward on the GPU when asked (and one starts), else the CPU's; `computed_on` says which, and any failed
// run-time check (the forward then recomputed on the CPU). `upload`: the weights' bytes sent, on a first run.
model::ForwardResult forwardOn(bool gpu, const std::shared_ptr<const model::Model>& checkpoint,
                               const std::vector<int>& ids, const model::ForwardOptions& options,
                               const GpuForward::UploadProgress& upload, std::string& computed_on) {
  if (gpu) {
    try {
      GpuForward& on_gpu = workerGpuForward(checkpoint, upload);
      const std::size_t warned = on_gpu.warnings().size();
      model::ForwardResult result = on_gpu.forward(ids, options);
      computed_on = "the GPU (" + on_gpu.device() + ")";
      for (std::size_t i = warned; i < on_gpu.warnings().size(); ++i) computed_on += "; " + on_gpu.warnings()[i];
      return result;
    } catch (const GpuUnavailable& e) {
      computed_on = std::string("the CPU (no GPU: ") + e.what() + ")";
      return model::modelForward(*checkpoint, ids, options);
    }
  }
  computed_on = "the CPU";
  return model::modelForward(*checkpoint, ids, options);
}

}  // namespace

ModelSession::Reply ModelSession::work(const Request& request, Progress& progress) {
  Reply reply;
  reply.text = request.text;
  try {
    reply.checkpoint = request.checkpoint;
    if (!reply.checkpoint) reply.checkpoint = std::make_shared<const model::Model>(model::loadModel(request.dir));
    // BOS as the tokenizer adds it (Llama's does); refused beyond the positions the model has.
    const model::Model& ck = *reply.checkpoint;
    // As the CLI's --repeated-random: ids the tokenizer names (a config's vocab_size may pad past them; a
    // vocabulary may skip some).
    const std::vector<int> ids =
        request.repeated > 0
            ? model::repeatedRandomTokens(model::tokenizerIds(ck.tokenizer, ck.architecture().vocab_size),
                                          request.repeated, static_cast<std::uint64_t>(request.seed), ck.maxTokens())
            : ck.tokenizer.encodeAtMost(request.text, static_cast<std::size_t>(ck.maxTokens()));
    if (request.repeated > 0)
      reply.text = "(" + std::to_string(request.repeated) + " random tokens, seed " + std::to_string(request.seed) +
                   ", repeated)";
    if (ids.empty()) throw InputError("text", "at least one token", "an empty text");
    progress.layers_total = reply.checkpoint->layout().n_layer;
    model::ForwardOptions options;
    // "Open layer as scene" starts from each layer's input norm: n_layer x (n, hidden) floats, counted in the
    // forward's memory budget (a 32-layer, 4096-wide model: 512 KiB a token, beside its maps' 4 KiB x n).
    options.keep_ln1 = true;
    // The residual stream at the last token (2 n_layer + 1 rows of d): direct logit attribution's default.
    options.trace_position = static_cast<int>(ids.size()) - 1;
    // Every map kept while they fit the memory budget (as before maps on demand: the grid and a full-size map
    // are drawn straight from them, and drawing is cheap); past it, the forward keeps Q, K and the row
    // statistics, and the grid's pooled tiles are recomputed from them (seconds at 1024 tokens of a 28-layer
    // model: on the grid's tile worker, maps/run_maps.h, map by map while the grid fills in).
    options.maps = MapPolicy::Keep;
    const model::Model& m = *reply.checkpoint;
    const int n = static_cast<int>(ids.size());
    const std::size_t keep_bytes = model::modelForwardBytes(m, n, options);
    if (keep_bytes > defaultMemoryBudget()) options.maps = MapPolicy::Auto;
    // Test aid: ATTNSCOPE_MODEL_MAPS=drop keeps no maps whatever the budget, so that a small checkpoint's grid
    // and close view take the recompute path (tests/gui model_grid_ondemand) that only big inputs reach.
    if (textSetting("ATTNSCOPE_MODEL_MAPS") == "drop") options.maps = MapPolicy::Drop;
    options.progress = [&progress](int done) {
      progress.layers_done = done;
      return !progress.cancel.load();
    };
    const auto upload = [&progress](std::size_t done, std::size_t total) {
      progress.upload_total = total, progress.upload_done = done;
    };
    reply.forward = forwardOn(request.gpu, reply.checkpoint, ids, options, upload, reply.computed_on);
    for (int id : ids) reply.labels.push_back(reply.checkpoint->tokenizer.label(id));
    reply.ids = ids;
    reply.stated_dtype = configDtype(request.dir);
  } catch (const model::ForwardCancelled&) {
    reply.cancelled = true;
    reply.error = "Cancelled; the model shown before is kept.";
  } catch (const std::exception& e) {
    reply.error = e.what();
  }
  return reply;
}

void ModelSession::start(int repeated) {
  if (dir.empty()) {
    error =
        "checkpoint folder: type the folder's path first (config.json, model.safetensors, and vocab.json + "
        "merges.txt or tokenizer.json)";
    cancelled = false;
    return;
  }
  const std::string folder = checkpointFolder(dir, error);
  if (folder.empty()) {
    cancelled = false;
    return;
  }
  if (!worker_) {
    std::shared_ptr<Progress> progress = progress_;
    worker_ = std::make_unique<LatestWorker<Request, Reply>>(
        [progress](const Request& request) { return work(request, *progress); });
  }
  progress_->cancel = false;
  progress_->layers_done = 0;
  progress_->upload_done = 0, progress_->upload_total = 0;
  const bool loaded = checkpoint_ && checkpoint_->dir == folder;
  progress_->layers_total = loaded ? checkpoint_->layout().n_layer : 0;
  error.clear();
  cancelled = false;
  worker_->request(Request{folder, text, repeated, repeated_seed, loaded ? checkpoint_ : nullptr, on_gpu});
  running_ = true;
}

void ModelSession::showTensor(arrays::AttentionTensor tensor, const std::string& path) {
  if (running_) cancel();  // its reply, when it comes, is dropped below
  forward_ = std::make_shared<const model::ForwardResult>(std::move(tensor.forward));
  labels_ = std::move(tensor.tokens);
  words_ = model::tokenWords(labels_);
  // A tensor has labels, not ids: the same label is the same token (as `view` scores a tensor's heads).
  ids_.clear();
  std::map<std::string, int> distinct;
  for (const std::string& label : labels_)
    ids_.push_back(distinct.emplace(label, static_cast<int>(distinct.size())).first->second);
  tensor_name_ = tensor.tensor_name;
  tensor_value_norms_ = tensor.value_norms;
  tensor_file_ = path;
  ran_text_.clear();
  analysis_layer_ = -1;
  focus_head = -1;
  layer = 0;
  shown = true;
  error.clear();
  ++revision_;
}

const arrays::TensorLayerAnalysis& ModelSession::tensorAnalysis(int of_layer) {
  if (of_layer != analysis_layer_) {
    analysis_ = arrays::analyseTensorLayer(*forward_, labels_, of_layer);
    analysis_layer_ = of_layer;
  }
  return analysis_;
}

const ModelSession::HeadScores* ModelSession::headScores() {
  return forward_->n == 0 ? nullptr : scores_.get(inputs(), revision_);
}

const TokenViewValues* ModelSession::tokenAttention(int of_layer, const TokenViewState& state, bool weighted) {
  if (forward_->n == 0) return nullptr;
  return token_attention_.get(inputs(), TokenAttentionKey{revision_, of_layer, state.head, state.token, state.to_it,
                                                          weighted, weighted ? sharedCheckpoint() : nullptr});
}

const ModelSession::Patching* ModelSession::patching(const PatchRequest& request) {
  if (!checkpoint() || forward_->n == 0) return nullptr;
  return patching_.get(inputs(), {revision_, request});
}

const Matrix* ModelSession::rollout() { return forward_->n == 0 ? nullptr : rollout_.get(inputs(), revision_); }

const ModelSession::CompositionResult* ModelSession::composition() {
  return checkpoint() ? composition_.get(inputs(), checkpoint_revision_) : nullptr;
}

const ModelSession::Attribution* ModelSession::logitAttribution(int position, int target) {
  if (!checkpoint() || forward_->n == 0) return nullptr;
  return attribution_.get(inputs(), std::make_tuple(revision_, std::clamp(position, 0, forward_->n - 1), target));
}

std::string ModelSession::tokenLabel(int id) const { return checkpoint_ ? checkpoint_->tokenizer.label(id) : ""; }

std::optional<int> ModelSession::targetId(const std::string& typed, std::string& why) const {
  if (typed.empty()) return -1;
  const int vocab = checkpoint_->architecture().vocab_size;
  if (typed.find_first_not_of("0123456789") == std::string::npos) {
    if (typed.size() <= 9 && std::stoi(typed) < vocab) return std::stoi(typed);
    why = "target: an id from 0 to " + std::to_string(vocab - 1) + ", not " + typed;
    return std::nullopt;
  }
  const std::vector<int> ids = checkpoint_->tokenizer.encode(typed, /*add_special_tokens=*/false);
  if (ids.size() == 1 && ids[0] < vocab) return ids[0];
  why = "target: one token, not \"" + typed + "\" (" + std::to_string(ids.size()) + " tokens:";
  for (std::size_t k = 0; k < std::min<std::size_t>(ids.size(), 4); ++k)
    why += (k ? ", '" : " '") + checkpoint_->tokenizer.label(ids[k]) + "'";
  why += ids.size() > 4 ? ", ...)" : ")";
  return std::nullopt;
}

std::string ModelSession::title() const {
  if (!tensor_file_.empty()) {
    const std::size_t slash = tensor_file_.find_last_of('/');
    const std::string name = slash == std::string::npos ? tensor_file_ : tensor_file_.substr(slash + 1);
    return name + (tensor_name_.empty() ? "" : " [" + tensor_name_ + "]");
  }
  return checkpoint_ ? model::familyDisplayName(checkpoint_->model_type) : std::string();
}

int ModelSession::windowOf(int of_layer) const {
  if (!checkpoint()) return 0;
  return checkpoint_->layout().windowOf(of_layer);
}

std::string ModelSession::describe() const {
  const model::HeadLayout l = checkpoint_->layout();
  const int head_dim = checkpoint_->architecture().head_dim;
  return std::to_string(l.n_layer) + " layers x " + std::to_string(l.n_head) + " heads, " +
         std::to_string(l.n_kv_head) + " KV heads, head_dim " + std::to_string(head_dim);
}

void ModelSession::cancel() { progress_->cancel = true; }

bool ModelSession::poll() {
  if (!worker_) return false;
  auto reply = worker_->take();
  running_ = worker_->busy();
  if (!reply) return false;
  Reply& r = reply->second;
  if (!r.error.empty()) {
    // A newer request runs: its own answer will come. A forward cancelled by showTensor is no news.
    if (!running_ && !(r.cancelled && !tensor_file_.empty())) error = r.error, cancelled = r.cancelled;
    return false;
  }
  if (!tensor_file_.empty() && progress_->cancel.load()) return false;  // cancelled by showTensor: keep the tensor
  tensor_file_.clear();
  if (r.checkpoint != checkpoint_) ++checkpoint_revision_;
  checkpoint_ = std::move(r.checkpoint);
  forward_ = std::make_shared<const model::ForwardResult>(std::move(r.forward));
  labels_ = std::move(r.labels);
  words_ = model::tokenWords(labels_);
  ids_ = std::move(r.ids);
  ran_text_ = std::move(r.text);
  stated_dtype_ = std::move(r.stated_dtype);
  computed_on_ = std::move(r.computed_on);
  analysis_layer_ = -1;  // the cached analysis was of the previous forward
  focus_head = -1;
  layer = std::min(layer, checkpoint_->layout().n_layer - 1);
  shown = true;  // a new forward goes to the centre
  ++revision_;
  return true;
}

}  // namespace attnscope::app
