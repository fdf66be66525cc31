// The window's state: the scene being edited, its result, undo, the unsaved mark, and the one place every
// edit goes through (validate on a copy, apply, push undo, recompute).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/analysis/walkthrough.h"
#include "attnscope/compute/backend.h"
#include "attnscope/compute/result.h"
#include "attnscope/compute/sampled_check.h"
#include "attnscope/scene/scene.h"
#include "window/maps/map_sources.h"
#include "window/maps/tile_worker.h"
#include "window/latest_worker.h"

namespace attnscope::app {

class AppState {
 public:
  explicit AppState(Scene scene);
  ~AppState();
  AppState(const AppState&) = delete;  // the compute worker holds `this`
  AppState& operator=(const AppState&) = delete;

  // The scene the shown result describes: the edited scene, except while a big scene of new shapes is computed
  // off the UI thread (resultPending()), when the previous scene and its result stay on show together.
  const Scene& scene() const { return shown_ ? *shown_ : scene_; }
  const Result& result() const { return result_; }
  // Bumped whenever the scene or result changes; views re-upload what they draw when it moves.
  unsigned revision() const { return revision_; }
  // Bumped on a full recompute (shapes, mask, inputs may have changed); a single-head edit leaves it and
  // bumps only that head's revision, so views re-upload only that head.
  unsigned fullRevision() const { return full_revision_; }
  unsigned headRevision(int head) const { return head_revision_[static_cast<std::size_t>(head)]; }

  // The one place edits go through. `change` edits a copy of the scene; the copy is validated (validateScene)
  // and only then becomes the scene: undo is pushed, the scene is marked unsaved and recomputed. `only_head` >= 0
  // says only that head's projections changed, so only that head is recomputed. An invalid edit is not applied:
  // returns false and editError() says why (panels show it inline). `continuing`: the same gesture as the last
  // edit (a drag in progress), so no new undo entry is pushed.
  bool edit(const std::string& what, const std::function<void(Scene&)>& change, int only_head = -1,
            bool continuing = false);
  // Replaces the whole scene (a preset, an opened file); undoable like any edit.
  bool replaceScene(const std::string& what, Scene scene);
  // Undo and redo: each applied edit clears what could be redone. The unsaved mark follows the scene: undoing
  // (or redoing) back to the scene last saved or opened clears it.
  bool undo();
  bool redo();
  bool canUndo() const { return !undo_.empty(); }
  bool canRedo() const { return !redo_.empty(); }
  // Bumped by every applied edit, replacement and undo of the scene (not by a result landing): the window makes
  // the scene its subject again when it moves (subject.h).
  unsigned sceneEdits() const { return scene_edits_; }
  const std::string& editError() const { return edit_error_; }
  // Which panel made the edit that failed (edit_origin when it was made), so that only that panel shows it.
  const std::string& editSource() const { return edit_error_source_; }
  std::string edit_origin;  // set by the layout before it draws each panel
  void clearEditError() { edit_error_.clear(); }

  // Scene files. A failed open or save keeps the scene as it was; message() says what happened either way.
  bool open(const std::string& path);
  bool save(const std::string& path);
  const std::string& message() const { return message_; }
  bool messageIsError() const { return message_is_error_; }
  // A message from the file bar itself (an empty path, say), shown as an error.
  void refuse(const std::string& why) { message_ = why, message_is_error_ = true; }
  // A plain message in the file bar (what an Open of another kind of file did).
  void inform(const std::string& what) { message_ = what, message_is_error_ = false; }
  bool dirty() const { return scene_id_ != saved_id_; }
  std::string path;  // the path field (Ctrl+O / Ctrl+S)

  // Backend: "cpu" or "gpu". A GPU backend that fails to start or to compute falls back to the CPU and leaves
  // a banner saying why. So does one whose result fails its check against the CPU on sampled query rows
  // (compute/sampled_check.h), run after every GPU compute on a worker thread (tick() takes its verdict; the
  // background compute of a software renderer checks on its own worker): the banner names the head, the row and
  // the error, and the CPU recomputes the scene.
  void useBackend(const std::string& name);
  const Backend& backend() const { return *backend_; }
  Backend& backend() { return *backend_; }
  const std::string& banner() const { return banner_; }
  // The mismatch that switched the window from the GPU to the CPU (its banner says it); empty when none did.
  const std::optional<CheckMismatch>& failedCheck() const { return failed_check_; }
  void clearBanner() { banner_.clear(); }
  double computeMs() const { return compute_ms_; }
  std::string window_renderer;  // the window's GL_RENDERER: what the GPU backend would run on

  // Whole-map analysis the panels show per result, one entry per head of result(): head-type scores and
  // zero-ablation importance. Computed with the result (on the worker for big CPU scenes), so the frame a result
  // lands in does no whole-map work (at n = 1024, h = 8 the head-type scores alone took ~0.3 s on the UI thread).
  const std::vector<HeadTypeScores>& headTypes() const { return head_types_; }
  const std::vector<double>& importance() const { return importance_; }
  // The worked-example walkthrough of the shown result (copies of every step's matrices: at n = 1024, h = 8,
  // ~0.7 s of copying). Built on the worker with the result for big CPU scenes, else on first use after a change.
  // Shared: an edit made while the walkthrough is drawn (its own tables edit the scene) drops the app's copy, and
  // the panel goes on drawing the one it began the frame with.
  std::shared_ptr<const Walkthrough> walkthrough();
  // The frame's tick() took a result from the worker (for --frame-stats' landing frames).
  bool landedThisTick() const { return landed_this_tick_; }

  // Head similarity is O(h^2 n_q n_k): for big scenes it is not recomputed on every edit (a drag would stall)
  // but once the scene has been still for a moment; until then the previous similarity and statistics show.
  // Call once a frame.
  void tick();
  bool analysisPending() const { return analysis_pending_; }
  // Big scenes on the CPU are recomputed off the UI thread (LatestWorker): an edit shows the previous result
  // until the new one lands (tick() takes it); meanwhile this is true and the maps are marked stale. An edit that
  // changes a shape (a new random scene, more heads) keeps the previous scene on show with its result until then
  // (scene()); further edits and Save apply to the new scene. So do big scenes on a GPU backend that is a
  // software renderer (llvmpipe: a 1024 x 8 compute took 0.3 to 2 s a frame on the UI thread): the worker runs
  // the GPU backend in a headless context of its own and reads the result back. A hardware GPU and small scenes
  // compute at once.
  bool resultPending() const { return result_pending_; }
  // The result's maps are the GPU backend's resident textures (it computed them on the UI thread's context); else
  // they are in result() only and views upload them.
  bool resultResident() const { return result_resident_; }
  // The edited scene's token and head counts while a shape change is pending (for the status bar).
  const Scene& editedScene() const { return scene_; }

  // Long scenes (the CPU result keeps no maps): each head's overview is computed from the edited scene itself
  // (overviews(), started by every edit) before the full result, whose compute waits for them (2 cores: both at
  // once would halve each). headsScene() is the scene the heads panel draws: the edited scene as soon as it is
  // long, else scene(). weightsPending(): the result for headsScene() has not landed, so no exact weight (hover,
  // cell text, row profile) may be shown from result().
  TileWorker* overviews() const { return overviews_.get(); }
  // What overviews() draws: the long scene's source (its scene, for the value norms), null when none.
  const std::shared_ptr<SceneTiles>& overviewSource() const { return overview_source_; }
  bool headsFromOverviews() const { return heads_from_overviews_; }
  const Scene& headsScene() const { return heads_from_overviews_ ? scene_ : scene(); }
  bool weightsPending() const { return heads_from_overviews_ && result_pending_; }

 private:
  // `previous`: the scene before this edit (null: nothing to keep on show, compute at once).
  void recompute(int only_head, const Scene* previous = nullptr);
  void runAnalysis();
  void takeWorkerResult();
  // The GPU's check after a compute on the UI thread: result_'s sampled rows (copied now) against the CPU's on
  // check_worker_; takeGpuCheck() switches to the CPU when they differ.
  void startGpuCheck();
  void takeGpuCheck();
  // The banner, the CPU backend from now on, and (recompute_now) the scene recomputed by it.
  void switchToCpuAfterFailedCheck(const CheckMismatch& mismatch, bool recompute_now);
  struct CheckRequest {
    std::shared_ptr<const Scene> scene;
    std::vector<int> rows;
    Result sampled;  // sampledRowsOf(result_, rows)
    bool with_maps = true, keep_scores = true;
  };
  std::unique_ptr<LatestWorker<CheckRequest, std::optional<CheckMismatch>>> check_worker_;
  std::optional<CheckMismatch> failed_check_;
  std::uint64_t check_seed_ = 0;  // the sampled rows' seed: each check draws other rows

  struct ComputeRequest {
    std::shared_ptr<const Scene> scene;  // shared with the overviews' snapshot
    unsigned overview_revision = 0;  // not 0: compute only once that revision's overviews are in (and current)
    bool gpu = false;  // the GPU backend (in the worker's own headless context), else the CPU
    // A long scene's: set by the next edit, which stops this compute at its next block of rows (its tens of
    // seconds of P V would halve the new overviews' share of two cores). Null for a big scene's: a drag there
    // shows each result that lands.
    std::shared_ptr<std::atomic<bool>> cancel;
    std::uint64_t check_seed = 0;  // a GPU result's check draws its sampled rows from it
  };
  struct ComputeReply {
    bool superseded = false;  // a newer edit came while it waited for the overviews, or cancelled it: no result
    Result result;
    double ms = 0;
    std::string error;  // not empty: the compute threw (a bug on a validated scene); the result is empty
    std::string banner;  // not empty: the GPU failed and the CPU computed the result (said in the banner)
    std::optional<CheckMismatch> gpu_check_failed;  // the GPU's result failed its check: the window switches to the CPU
    std::vector<HeadTypeScores> head_types;
    std::vector<double> importance;
    std::shared_ptr<const Walkthrough> walk;
  };
  // Fills head_types_ and importance_ for result_: only `only_head`'s entries when >= 0 (its head alone changed).
  void analysePerResult(int only_head);
  // The backend computes big scenes on the worker: the CPU, or a GPU that is a software renderer.
  bool backendWorksOffTheUiThread() const;
  bool computesOffTheUiThread() const;  // ... and the edited scene is big
  // Declared before worker_, so that it outlives the worker's wait on it (~AppState stops it first).
  std::unique_ptr<TileWorker> overviews_;
  std::shared_ptr<SceneTiles> overview_source_;  // created on the first long scene
  unsigned overview_revision_ = 0;               // of the last overviews_->start
  bool heads_from_overviews_ = false;            // the edited scene is long, computed off the UI thread
  std::unique_ptr<LatestWorker<ComputeRequest, ComputeReply>> worker_;  // created on the first big edit
  bool software_gpu_ = false;     // the GPU backend runs on a software renderer
  bool result_resident_ = false;  // see resultResident()
  bool result_pending_ = false;
  std::shared_ptr<std::atomic<bool>> long_compute_cancel_;  // of the last long scene's request (ComputeRequest)
  std::uint64_t stale_through_ = 0;  // worker replies up to this request number predate a synchronous compute

  Scene scene_;
  std::optional<Scene> shown_;  // while a shape change computes off the UI thread: the scene result_ describes
  Result result_;
  std::vector<HeadTypeScores> head_types_;  // (heads), for result_
  std::vector<double> importance_;          // (heads), for result_
  std::shared_ptr<const Walkthrough> walk_;  // for result_; null: not built since it changed
  bool landed_this_tick_ = false;
  std::unique_ptr<Backend> backend_;
  // A scene on the undo or redo stack with the id it had: every applied edit gives the scene a new id, so the
  // unsaved mark is "the id differs from the one saved" (a continued drag included).
  struct Snapshot {
    Scene scene;
    std::uint64_t id = 0;
  };
  std::deque<Snapshot> undo_;  // oldest first, at most kUndoDepth
  std::vector<Snapshot> redo_;  // the last undone on top
  std::uint64_t scene_id_ = 0, next_id_ = 1, saved_id_ = 0;
  std::string edit_error_, edit_error_source_, message_, banner_;
  bool message_is_error_ = false;
  double compute_ms_ = 0;
  bool analysis_pending_ = false;
  std::chrono::steady_clock::time_point last_change_;
  unsigned revision_ = 0, full_revision_ = 0, scene_edits_ = 0;
  std::vector<unsigned> head_revision_;  // one per head
};

// The scene the window opens on when no --scene is given.
Scene initialScene();

}  // namespace attnscope::app
