// GL_TIME_ELAPSED queries around the backend's stages.
#include "stage_timer.h"

#include <algorithm>

namespace attnscope::gpu {

StageTimer::~StageTimer() {
  for (const auto& [stage, query] : pending_) free_.push_back(query);
  if (!free_.empty()) glDeleteQueries(static_cast<GLsizei>(free_.size()), free_.data());
}

StageTimer::Scope::Scope(StageTimer& timer, const char* stage) : timer_(timer.on_ ? &timer : nullptr) {
  if (!timer_) return;
  GLuint query = 0;
  if (timer.free_.empty()) {
    glGenQueries(1, &query);
  } else {
    query = timer.free_.back();
    timer.free_.pop_back();
  }
  timer.pending_.emplace_back(stage, query);
  glBeginQuery(GL_TIME_ELAPSED, query);
}

StageTimer::Scope::~Scope() {
  if (timer_) glEndQuery(GL_TIME_ELAPSED);
}

std::vector<std::pair<std::string, double>> StageTimer::take() {
  std::vector<std::pair<std::string, double>> totals;
  for (const auto& [stage, query] : pending_) {
    GLuint64 ns = 0;
    glGetQueryObjectui64v(query, GL_QUERY_RESULT, &ns);  // waits for the stage to finish
    auto at = std::find_if(totals.begin(), totals.end(), [&](const auto& t) { return t.first == stage; });
    if (at == totals.end()) at = totals.insert(totals.end(), {stage, 0.0});
    at->second += static_cast<double>(ns) * 1e-6;
    free_.push_back(query);
  }
  pending_.clear();
  return totals;
}

}  // namespace attnscope::gpu
