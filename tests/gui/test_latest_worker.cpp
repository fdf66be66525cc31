// LatestWorker (app/window/latest_worker.h), the window's background recompute: only the newest request runs
// after the one in progress, replies come back in request order, nothing waits on the UI side. Deterministic:
// the work blocks on a gate the test opens, so no timing is involved.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "window/latest_worker.h"

namespace attnscope::app {
namespace {

// A gate the work waits at until the test opens it; counts the requests that ran.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;
  std::vector<int> ran;
  void pass(int request) {
    std::unique_lock<std::mutex> lock(mutex);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
    ran.push_back(request);
  }
  void waitEntered(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return entered >= n; });
  }
  void openGate() {
    std::lock_guard<std::mutex> lock(mutex);
    open = true;
    cv.notify_all();
  }
};

TEST(LatestWorker, OnlyTheNewestWaitingRequestRunsAfterTheOneInProgress) {
  Gate gate;
  LatestWorker<int, int> worker([&](const int& r) {
    gate.pass(r);
    return r * 10;
  });
  EXPECT_EQ(worker.request(1), 1u);
  gate.waitEntered(1);  // request 1 runs and waits at the gate
  for (int r = 2; r <= 5; ++r) worker.request(r);  // each replaces the one before: only 5 waits
  EXPECT_TRUE(worker.busy());
  EXPECT_FALSE(worker.take().has_value());  // nothing landed: the caller did not wait
  gate.openGate();
  // Replies land in order: 1's, then 5's. Poll as the window's frames do.
  std::vector<std::pair<std::uint64_t, int>> replies;
  while (replies.empty() || replies.back().first != 5)
    if (auto reply = worker.take()) replies.push_back(*reply);
  EXPECT_EQ(replies.back().second, 50);
  for (const auto& [number, value] : replies) EXPECT_EQ(value, static_cast<int>(number) * 10);
  while (worker.busy()) {
  }
  EXPECT_EQ(gate.ran, (std::vector<int>{1, 5}));  // 2, 3 and 4 never ran
}

TEST(LatestWorker, CancelDropsTheWaitingRequestAndNumbersWhatToIgnore) {
  Gate gate;
  LatestWorker<int, int> worker([&](const int& r) {
    gate.pass(r);
    return r;
  });
  worker.request(1);
  gate.waitEntered(1);
  worker.request(2);
  EXPECT_EQ(worker.cancel(), 2u);  // 2 never runs; replies numbered up to 2 describe the past
  gate.openGate();
  std::optional<std::pair<std::uint64_t, int>> reply;
  while (!(reply = worker.take())) {
  }
  EXPECT_EQ(reply->first, 1u);
  while (worker.busy()) {
  }
  EXPECT_EQ(gate.ran, (std::vector<int>{1}));
}

}  // namespace
}  // namespace attnscope::app
