// One background thread that runs the newest request and hands back its reply: a request made while another
// waits replaces it (only the latest matters: a drag must not queue a compute per frame), so at most one runs
// and one waits. The UI thread calls request() and, once a frame, take(); it never waits for the work.
// Reused by whatever must not stall a frame (the window's recompute of big scenes, long sequences).
#pragma once

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace attnscope::app {

// Background work yields to the UI thread: the calling thread's nice value goes up by 10 (Linux: per thread;
// the OpenMP teams it starts, OpenBLAS's included, inherit it). On two cores a recompute's threads at the UI
// thread's priority left it a third of a core: 35 ms frames while dragging at n = 1024, h = 8.
inline void yieldToTheUiThread() {
#ifdef __linux__
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  setpriority(PRIO_PROCESS, tid, getpriority(PRIO_PROCESS, tid) + 10);
#endif
}

template <typename Request, typename Reply>
class LatestWorker {
 public:
  explicit LatestWorker(std::function<Reply(const Request&)> work)
      : work_(std::move(work)), thread_([this] { run(); }) {}
  ~LatestWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();  // the request running finishes first; its reply is dropped
  }
  LatestWorker(const LatestWorker&) = delete;
  LatestWorker& operator=(const LatestWorker&) = delete;

  // Queues `request`, replacing one that has not started. Returns its number (1, 2, ...).
  std::uint64_t request(Request request) {
    std::uint64_t number = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      waiting_ = std::move(request);
      number = ++requested_;
    }
    wake_.notify_one();
    return number;
  }
  // Drops a request that has not started; returns the number of the last request made (0: none), whose
  // reply, and every earlier one, the caller may then ignore.
  std::uint64_t cancel() {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_.reset();
    return requested_;
  }
  // The newest reply not taken yet, with its request's number; nothing when none has landed since.
  std::optional<std::pair<std::uint64_t, Reply>> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::optional<std::pair<std::uint64_t, Reply>> out = std::move(done_);
    done_.reset();
    return out;
  }
  // True while a request waits or runs, or its reply has not been taken: what is shown is then stale.
  bool busy() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_.has_value() || running_ || done_.has_value();
  }

 private:
  void run() {
    yieldToTheUiThread();
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || waiting_.has_value(); });
      if (stopping_) return;
      Request request = std::move(*waiting_);
      waiting_.reset();
      const std::uint64_t number = requested_;
      running_ = true;
      lock.unlock();
      Reply reply = work_(request);  // outside the lock: request() and take() never wait for it
      lock.lock();
      running_ = false;
      done_.emplace(number, std::move(reply));
    }
  }

  std::function<Reply(const Request&)> work_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Request> waiting_;
  std::optional<std::pair<std::uint64_t, Reply>> done_;
  std::uint64_t requested_ = 0;
  bool running_ = false, stopping_ = false;
  std::thread thread_;  // last: started once every member above exists
};

}  // namespace attnscope::app
