// The window's state and its one edit path: validate a copy, apply, push undo, recompute.
#include "window/app_state.h"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/settings.h"
#include "attnscope/compute/similarity.h"
#include "attnscope/compute/sampled_check.h"
#include "attnscope/compute/tiles.h"
#ifdef ATTNSCOPE_HAS_GPU
#include "attnscope/gpu_backend.h"
#endif

namespace attnscope::app {

namespace {
constexpr std::size_t kUndoDepth = 100;
// Above this many h^2 n_q n_k, similarity waits until edits pause (about 10 ms of analysis on this machine).
constexpr double kLiveAnalysisCells = 1.5e6;
constexpr double kAnalysisDelayMs = 200;

bool liveAnalysis(const Scene& scene) {
  const double h = scene.numHeads();
  return h * h * scene.nQ() * scene.nK() <= kLiveAnalysisCells;
}

// Above this many h n_q n_k weights a CPU recompute leaves the UI thread (n = 1024, h = 8 took ~60 ms a frame).
constexpr double kWorkerCells = 2e6;

bool computeOffTheUiThread(const Scene& scene) {
  return static_cast<double>(scene.numHeads()) * scene.nQ() * scene.nK() > kWorkerCells;
}

// The worker thread's GPU backend: a headless context of its own (GL contexts are current on one thread; the
// window's stays on the UI thread), made on first use and destroyed when the worker thread ends, on that thread.
// Throws GpuUnavailable where none can be had: the CPU then computes the reply and the banner says so.
Backend& workerGpu() {
#ifdef ATTNSCOPE_HAS_GPU
  thread_local std::unique_ptr<GpuBackend> gpu;
  if (!gpu) gpu = std::make_unique<GpuBackend>();
  return *gpu;
#else
  throw std::runtime_error("this build has no GPU backend");
#endif
}

// The window keeps full maps while they fit (mapsLimitBytes, 256 MiB by default: every scene drawn exactly as
// before); past that a result holds Q, K, V and the row statistics, and the views read weights through tiles.
// Such a long scene's analysis (similarity, statistics) is not run in the window: it would take minutes at 32k
// tokens; the panels say so and point to `attnscope analyze`.
ComputeOptions windowOptions(const Scene& scene, bool analysis) {
  ComputeOptions options{true, analysis, MapPolicy::Auto};
  if (!keepsMaps(scene, options)) options.analysis = false;
  return options;
}

// The memory check of an edit: a scene past the maps limit costs its O(n d) result, not its maps.
Limits windowLimits(const Scene& scene) {
  Limits limits;
  limits.with_maps = keepsMaps(scene, ComputeOptions{true, true, MapPolicy::Auto});
  return limits;
}

bool resultKeepsMaps(const Result& r) { return r.heads.empty() || r.heads[0].hasMap(); }

// Every shape a view reads from a Result (heads; per head q, k, v, weights or row statistics) agrees with the
// scene, so the old result can stand in for the new scene's until its own lands.
bool sameShapes(const Result& r, const Scene& s) {
  if (static_cast<int>(r.heads.size()) != s.numHeads()) return false;
  for (int h = 0; h < s.numHeads(); ++h) {
    const HeadResult& hr = r.heads[static_cast<std::size_t>(h)];
    const HeadParams& p = s.heads[static_cast<std::size_t>(h)];
    const bool rows_ok = hr.hasMap() ? hr.weights.rows() == s.nQ() && hr.weights.cols() == s.nK()
                                     : hr.row_sum.size() == s.nQ() && hr.k().rows() == s.nK();
    if (!rows_ok || hr.q.cols() != p.dK() || hr.v().cols() != s.dV(h)) return false;
  }
  return r.output.cols() == s.d_model || (!s.w_o && r.output.cols() == s.concatWidth());
}
}  // namespace

Scene initialScene() { return workedExampleScene(); }

AppState::AppState(Scene scene) : scene_(std::move(scene)), backend_(std::make_unique<CpuBackend>()) {
  validateScene(scene_);
  recompute(-1);
}

AppState::~AppState() {
  if (overviews_) overviews_->stop();  // a compute waiting for the overviews gives up, so worker_ can join
  if (long_compute_cancel_) *long_compute_cancel_ = true;  // and one under way stops: closing takes no minute
}

bool AppState::edit(const std::string& what, const std::function<void(Scene&)>& change, int only_head,
                    bool continuing) {
  Scene next = scene_;
  try {
    change(next);
    validateScene(next, windowLimits(next));
  } catch (const std::exception& e) {
    // An InputError already names its field ("scale: expected ..."): the edit's name is added only when it
    // says something more.
    const std::string why = e.what();
    edit_error_ = why.rfind(what + ":", 0) == 0 ? why : what + ": " + why;
    edit_error_source_ = edit_origin;
    return false;
  }
  edit_error_.clear();
  std::swap(scene_, next);  // `next` is now the scene before the edit
  const std::uint64_t before = scene_id_;
  scene_id_ = next_id_++;
  redo_.clear();
  ++scene_edits_;
  recompute(only_head, &next);
  if (!continuing || undo_.empty()) {
    undo_.push_back(Snapshot{std::move(next), before});
    if (undo_.size() > kUndoDepth) undo_.pop_front();
  }
  return true;
}

bool AppState::replaceScene(const std::string& what, Scene scene) {
  return edit(what, [&](Scene& s) { s = std::move(scene); });
}

bool AppState::undo() {
  if (undo_.empty()) return false;
  Snapshot previous{std::move(scene_), scene_id_};
  scene_ = std::move(undo_.back().scene);
  scene_id_ = undo_.back().id;
  undo_.pop_back();
  ++scene_edits_;
  edit_error_.clear();
  recompute(-1, &previous.scene);
  redo_.push_back(std::move(previous));
  return true;
}

bool AppState::redo() {
  if (redo_.empty()) return false;
  Snapshot previous{std::move(scene_), scene_id_};
  scene_ = std::move(redo_.back().scene);
  scene_id_ = redo_.back().id;
  redo_.pop_back();
  ++scene_edits_;
  edit_error_.clear();
  recompute(-1, &previous.scene);
  undo_.push_back(std::move(previous));
  return true;
}

bool AppState::open(const std::string& file) {
  message_is_error_ = true;
  try {
    Scene loaded = loadSceneFile(file);
    const bool had_unsaved_edits = dirty();
    if (!replaceScene("open", std::move(loaded))) {
      message_ = "Could not open " + file + ": " + edit_error_;
      edit_error_.clear();  // said here, next to the path, not again in a panel
      return false;
    }
    saved_id_ = scene_id_;
    message_is_error_ = false;
    message_ = "Opened " + file;
    // Opening is an edit like any other: the scene it replaced is on the undo stack.
    if (had_unsaved_edits) message_ += ". Your unsaved edits are not lost: Undo (Ctrl+Z) brings them back";
    return true;
  } catch (const std::exception& e) {
    message_ = std::string("Could not open: ") + e.what();
    return false;
  }
}

bool AppState::save(const std::string& file) {
  try {
    saveSceneFile(scene_, file);
    saved_id_ = scene_id_;
    message_is_error_ = false;
    message_ = "Saved " + file;
    return true;
  } catch (const std::exception& e) {
    message_is_error_ = true;
    message_ = std::string("Not saved (the scene is kept): ") + e.what();
    return false;
  }
}

void AppState::useBackend(const std::string& name) {
  if (name == backend_->name()) return;
  failed_check_.reset();
  if (name == "gpu") {
#ifdef ATTNSCOPE_HAS_GPU
    try {
      GpuOptions options;
      options.context = GlContextMode::UseCurrent;
      backend_ = std::make_unique<GpuBackend>(options);
      // ATTNSCOPE_GPU_AS_HARDWARE=1 is a test aid: a software renderer (llvmpipe) is then treated as a hardware
      // GPU (computes on the UI thread, draws from the backend's textures), so that path runs without one.
      software_gpu_ = isSoftwareRenderer(backend_->device()) && !flagSetting("ATTNSCOPE_GPU_AS_HARDWARE");
      banner_.clear();
    } catch (const std::exception& e) {
      banner_ = std::string("GPU backend unavailable, using the CPU: ") + e.what();
      backend_ = std::make_unique<CpuBackend>();
    }
#else
    banner_ = "This build has no GPU backend; using the CPU.";
#endif
  } else {
    backend_ = std::make_unique<CpuBackend>();
    banner_.clear();
  }
  recompute(-1);
}

bool AppState::backendWorksOffTheUiThread() const { return backend_->name() == "cpu" || software_gpu_; }

bool AppState::computesOffTheUiThread() const {
  return backendWorksOffTheUiThread() && computeOffTheUiThread(scene_);
}

void AppState::recompute(int only_head, const Scene* previous) {
  const bool same_shapes = sameShapes(result_, scene_);
  if (long_compute_cancel_) *long_compute_cancel_ = true;  // whatever comes next, that compute describes the past
  long_compute_cancel_.reset();
  // A long scene's overviews need only Q, K and the mask: they start from the scene now, not after the result.
  heads_from_overviews_ = backendWorksOffTheUiThread() && !keepsMaps(scene_, windowOptions(scene_, true));
  // What the background work reads: one copy of the edited scene, shared by the overviews and the compute.
  std::shared_ptr<const Scene> snapshot;
  const auto shared_scene = [&] {
    if (!snapshot) snapshot = std::make_shared<const Scene>(scene_);
    return snapshot;
  };
  if (heads_from_overviews_) {
    if (!overviews_) overviews_ = std::make_unique<TileWorker>();
    overview_source_ = std::make_shared<SceneTiles>(shared_scene());
    overviews_->start(overview_source_, ++overview_revision_);
  } else if (overviews_) {
    overviews_->clear();  // a compute still waiting for a long scene's overviews is stale: it gives up
    overview_source_.reset();
  }
  if (computesOffTheUiThread() && (same_shapes || previous || shown_)) {
    // A new shape: what is on show stays (the scene the result describes) until the new result lands.
    if (same_shapes)
      shown_.reset();
    else if (!shown_)
      shown_ = *previous;
    if (!worker_)
      worker_ = std::make_unique<LatestWorker<ComputeRequest, ComputeReply>>([this](const ComputeRequest& request) {
        ComputeReply reply;
        // The overviews first: the result (P V for every head) waits for them, and is not computed at all when a
        // newer edit came meanwhile (its own request follows).
        if (request.overview_revision && !overviews_->waitOverviews(request.overview_revision)) {
          reply.superseded = true;
          return reply;
        }
        const Scene& scene = *request.scene;
        ComputeOptions options = windowOptions(scene, true);
        options.cancel = request.cancel.get();
        const auto start = std::chrono::steady_clock::now();
        try {
          bool computed = false;
          if (request.gpu) {
            try {
              workerGpu().computeInto(scene, reply.result, options);
              computed = true;
            } catch (const std::exception& e) {  // as on the UI thread: say so, and the CPU computes it
              reply.banner = std::string("The GPU backend failed in the background, the CPU computed: ") + e.what();
              reply.result = Result{};
            }
            // Checked here, on the worker, before anything shows it: a wrong GPU result is never drawn.
            if (computed)
              if (const auto mismatch = checkSampledRows(scene, reply.result, request.check_seed)) {
                reply.gpu_check_failed = mismatch;
                reply.result = Result{};
                computed = false;
              }
          }
          if (!computed) CpuBackend().computeInto(scene, reply.result, options);
          if (resultKeepsMaps(reply.result)) {  // a long scene's whole-map analyses are not run in the window
            reply.head_types = allHeadTypeScores(scene, reply.result);
            reply.importance = headImportance(scene, reply.result, AblationMode::Zero);
            reply.walk = std::make_shared<const Walkthrough>(buildWalkthrough(scene, reply.result));
          }
        } catch (const ComputeCancelled&) {
          reply.superseded = true;  // a newer edit's request follows
          return reply;
        } catch (const std::exception& e) {
          reply.error = e.what();
        }
        reply.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        return reply;
      });
    if (heads_from_overviews_) long_compute_cancel_ = std::make_shared<std::atomic<bool>>(false);
    worker_->request(ComputeRequest{shared_scene(), heads_from_overviews_ ? overview_revision_ : 0, backend_->name() == "gpu",
                                    long_compute_cancel_, ++check_seed_});
    result_pending_ = true;
    last_change_ = std::chrono::steady_clock::now();
    return;
  }
  if (worker_) stale_through_ = worker_->cancel();  // what the worker still runs describes an older scene
  result_pending_ = false;
  shown_.reset();
  const auto start = std::chrono::steady_clock::now();
  const bool same_shape = only_head >= 0 && result_.heads.size() == scene_.heads.size();
  // The GPU computes the similarity itself (cheap); the CPU defers it for big scenes.
  const bool live = backend_->name() == "gpu" || liveAnalysis(scene_);
  // Kept to show while a deferred analysis is pending (same head count only).
  Similarity old_similarity = std::move(result_.similarity);
  std::vector<HeadStats> old_stats = std::move(result_.stats);
  try {
    if (same_shape && live)
      backend_->recomputeHead(scene_, only_head, result_);  // also redoes the analysis; the GPU reads back one head
    else
      backend_->computeInto(scene_, result_, windowOptions(scene_, live));
  } catch (const std::exception& e) {
    if (backend_->name() == "cpu") throw;  // the reference backend failing on a validated scene is a bug
    banner_ = std::string("The GPU backend failed, switched to the CPU: ") + e.what();
    backend_ = std::make_unique<CpuBackend>();
    result_ = Result{};
    backend_->computeInto(scene_, result_, windowOptions(scene_, liveAnalysis(scene_)));
  }
  result_resident_ = backend_->name() == "gpu";
  if (result_resident_) startGpuCheck();
  analysePerResult(same_shape ? only_head : -1);
  walk_.reset();
  analysis_pending_ = !live;
  if (!live) {
    if (old_stats.size() == scene_.heads.size()) {
      result_.stats = std::move(old_stats);
      result_.similarity = std::move(old_similarity);
    } else {
      runAnalysis();  // the head count changed: nothing earlier to show
    }
  }
  last_change_ = std::chrono::steady_clock::now();
  compute_ms_ = std::chrono::duration<double, std::milli>(last_change_ - start).count();
  ++revision_;
  if (same_shape) {
    head_revision_[static_cast<std::size_t>(only_head)] = revision_;
  } else {
    ++full_revision_;
    head_revision_.assign(scene_.heads.size(), revision_);
  }
}

void AppState::startGpuCheck() {
  if (!check_worker_)
    check_worker_ = std::make_unique<LatestWorker<CheckRequest, std::optional<CheckMismatch>>>(
        [](const CheckRequest& request) -> std::optional<CheckMismatch> {
          try {
            return compareSampledRows(request.sampled, referenceRows(*request.scene, request.rows, request.with_maps,
                                                                     request.keep_scores));
          } catch (const std::exception& e) {  // the scene was validated: a throw here is the check's own failure
            return CheckMismatch{-1, -1, std::string("the check itself failed: ") + e.what()};
          }
        });
  CheckRequest request;
  request.scene = std::make_shared<const Scene>(scene_);
  request.rows = sampledQueryRows(scene_.nQ(), ++check_seed_);
  request.sampled = sampledRowsOf(result_, request.rows);
  request.with_maps = resultKeepsMaps(result_);
  request.keep_scores = !result_.heads.empty() && result_.heads[0].scores.size() > 0;
  check_worker_->request(std::move(request));
}

void AppState::takeGpuCheck() {
  if (!check_worker_) return;
  auto reply = check_worker_->take();
  // A check of an older result still speaks for the GPU: a card that got one result wrong is not trusted.
  if (reply && reply->second && backend_->name() == "gpu") switchToCpuAfterFailedCheck(*reply->second, true);
}

void AppState::switchToCpuAfterFailedCheck(const CheckMismatch& mismatch, bool recompute_now) {
  backend_ = std::make_unique<CpuBackend>();
  software_gpu_ = false;
  banner_ = "Now on the CPU: the GPU's result failed its check (" + mismatch.text() + ")";
  failed_check_ = mismatch;
  if (recompute_now) recompute(-1);
}

void AppState::takeWorkerResult() {
  if (!worker_) return;
  auto reply = worker_->take();
  if (!reply) return;
  // The worker's CPU already recomputed that result (taken below, when still current); later edits compute on
  // the CPU.
  if (reply->second.gpu_check_failed && backend_->name() == "gpu")
    switchToCpuAfterFailedCheck(*reply->second.gpu_check_failed, false);
  // A reply for a request made before a synchronous compute describes a scene that is gone.
  if (!reply->second.superseded && reply->first > stale_through_ && reply->second.error.empty() &&
      sameShapes(reply->second.result, scene_)) {
    shown_.reset();  // the edited scene's own result: it goes on show with it
    result_ = std::move(reply->second.result);
    result_resident_ = false;
    if (!reply->second.banner.empty()) banner_ = reply->second.banner;
    head_types_ = std::move(reply->second.head_types);
    importance_ = std::move(reply->second.importance);
    walk_ = std::move(reply->second.walk);
    landed_this_tick_ = true;
    compute_ms_ = reply->second.ms;
    analysis_pending_ = false;  // the worker ran the analysis too
    ++revision_;
    ++full_revision_;
    head_revision_.assign(scene_.heads.size(), revision_);
  } else if (!reply->second.error.empty()) {
    banner_ = "The background recompute failed: " + reply->second.error;
  }
  result_pending_ = worker_->busy();
}

void AppState::tick() {
  landed_this_tick_ = false;
  takeGpuCheck();
  takeWorkerResult();
  if (!analysis_pending_) return;
  const double idle_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - last_change_).count();
  if (idle_ms >= kAnalysisDelayMs) runAnalysis();
}

void AppState::analysePerResult(int only_head) {
  const std::size_t heads = result_.heads.size();
  if (!resultKeepsMaps(result_)) {  // a long scene: whole-map analyses belong to `attnscope analyze`
    head_types_.clear();
    importance_.clear();
    return;
  }
  if (only_head < 0 || head_types_.size() != heads || importance_.size() != heads) {
    head_types_ = allHeadTypeScores(scene_, result_);
    importance_ = headImportance(scene_, result_, AblationMode::Zero);
    return;
  }
  // Only this head's weights and output changed; ablating it changes only its own block of concat.
  head_types_[static_cast<std::size_t>(only_head)] = headTypeScores(scene_, result_.heads[static_cast<std::size_t>(only_head)].weights);
  importance_[static_cast<std::size_t>(only_head)] = oneHeadImportance(scene_, result_, only_head, AblationMode::Zero);
}

std::shared_ptr<const Walkthrough> AppState::walkthrough() {
  if (!walk_) walk_ = std::make_shared<const Walkthrough>(buildWalkthrough(scene(), result_));
  return walk_;
}

void AppState::runAnalysis() {
  if (resultKeepsMaps(result_)) analyseHeads(result_, singleKeyRows(scene()));  // the scene result_ describes
  analysis_pending_ = false;
}

}  // namespace attnscope::app
