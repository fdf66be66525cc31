// The window's export writer (the Export tab's and the Checkpoint tab's grid figure): the file made and written on a
// background thread (every layer of a 28 x 16-head run as a PNG took a 2.3 s frame on the UI thread), one export
// at a time, its outcome handed back to the tab that started it. The job holds what it writes by value or by
// shared pointer (a snapshot of what was on show), so an edit or a new forward meanwhile changes nothing of it;
// the file is written atomically (nothing half-written), and a window closed meanwhile waits for it to finish.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "window/latest_worker.h"

namespace attnscope::app {

class ExportWriter {
 public:
  struct Job {
    std::function<void()> write;  // run on the worker: makes the file and writes it atomically (throws to refuse)
    std::string path;             // where it goes
    std::string wrote;                   // the message once written ("Wrote ...")
    std::string what;                    // what is being written, for the progress line ("every layer, PNG")
    std::string owner;                   // who started it ("export", "checkpoint"): its outcome goes back there
  };
  struct Outcome {
    std::string message;
    bool failed = false;
    std::string owner;
  };
  ExportWriter();
  // True while a job waits or runs (or has just finished and no owner has polled yet): a second export is refused.
  bool busy() const { return worker_.busy(); }
  // Starts `job`; call only when !busy().
  void start(Job job);
  // Once a frame, by each owner: the finished job's outcome, once, to the owner that started it.
  std::optional<Outcome> poll(const std::string& owner);
  // The running job's path, what it writes and its seconds so far (for the progress line).
  const std::string& path() const { return path_; }
  const std::string& what() const { return what_; }
  double seconds() const;

 private:
  std::string path_, what_;
  std::map<std::string, Outcome> landed_;  // by owner: taken from the worker, not yet by that owner
  std::chrono::steady_clock::time_point started_;
  LatestWorker<Job, Outcome> worker_;  // last: its thread stops (finishing the job) before the members above go
};

// "Wrote PATH", and for a relative path the folder it went to ("Wrote attnscope_export.png in /home/me"): the
// window's working folder is not on show anywhere else.
std::string wroteLine(const std::string& path);

}  // namespace attnscope::app
