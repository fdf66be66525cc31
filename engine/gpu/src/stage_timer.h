// GPU time per compute stage, from GL_TIME_ELAPSED timer queries (bench --stages). Off by default: a query per
// stage costs little, but reading it back waits for the GPU.
#pragma once

#include <epoxy/gl.h>

#include <string>
#include <utility>
#include <vector>

namespace attnscope::gpu {

class StageTimer {
 public:
  StageTimer() = default;
  ~StageTimer();
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

  void enable(bool on) { on_ = on; }

  // Times the GL commands issued while it lives under `stage` (stages never nest: GL has one
  // GL_TIME_ELAPSED query open at a time).
  class Scope {
   public:
    Scope(StageTimer& timer, const char* stage);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StageTimer* timer_;
  };
  Scope scope(const char* stage) { return Scope(*this, stage); }

  // Waits for the queries issued since the last call; milliseconds per stage, summed over its calls, in the
  // order the stages first ran.
  std::vector<std::pair<std::string, double>> take();

 private:
  bool on_ = false;
  std::vector<std::pair<std::string, GLuint>> pending_;
  std::vector<GLuint> free_;  // query objects to reuse
};

}  // namespace attnscope::gpu
