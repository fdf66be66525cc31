// Wall-clock seconds per forward stage, summed over layers and printed to stderr when ATTNSCOPE_TIMINGS is set
// (profiling the Llama-family path: loading, projections, RoPE, attention, MLP); costs nothing when unset.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>
#include "attnscope/settings.h"

namespace attnscope::model {

class StageTimings {
 public:
  explicit StageTimings(const char* what) : what_(what), on_(flagSetting("ATTNSCOPE_TIMINGS")) {
    last_ = Clock::now();
  }
  StageTimings(const StageTimings&) = delete;
  StageTimings& operator=(const StageTimings&) = delete;
  ~StageTimings() {
    if (!on_) return;
    double total = 0;
    for (const auto& [name, s] : stages_) total += s;
    std::fprintf(stderr, "attnscope: timings: %s %.3f s\n", what_, total);
    for (const auto& [name, s] : stages_)
      std::fprintf(stderr, "attnscope: timings:   %-28s %8.3f s  %5.1f%%\n", name.c_str(), s, 100 * s / total);
  }
  // Charges the time since the previous mark (or construction) to `stage`.
  void mark(const char* stage) {
    if (!on_) return;
    const Clock::time_point now = Clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    for (auto& [name, sum] : stages_)
      if (name == stage) {
        sum += s;
        return;
      }
    stages_.emplace_back(stage, s);
  }

 private:
  using Clock = std::chrono::steady_clock;
  const char* what_;
  bool on_;
  Clock::time_point last_;
  std::vector<std::pair<std::string, double>> stages_;
};

}  // namespace attnscope::model
