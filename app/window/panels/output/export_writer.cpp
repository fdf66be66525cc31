// The Export tab's background writer.
#include "window/panels/output/export_writer.h"

#include <exception>
#include <thread>

#include "attnscope/settings.h"

namespace attnscope::app {

namespace {

ExportWriter::Outcome write(const ExportWriter::Job& job) {
  // ATTNSCOPE_EXPORT_DELAY (a test aid, seconds): the writer waits before it starts, so that a test can see the
  // window drawing and a second Export refused while one is written.
  if (const std::optional<double> delay = numberSetting("ATTNSCOPE_EXPORT_DELAY"))
    std::this_thread::sleep_for(std::chrono::duration<double>(*delay));
  try {
    job.write();
    return {job.wrote, false};
  } catch (const std::exception& e) {
    return {std::string("Not written: ") + e.what(), true};
  }
}

}  // namespace

ExportWriter::ExportWriter() : worker_(write) {}

void ExportWriter::start(Job job) {
  path_ = job.path, what_ = job.what;
  started_ = std::chrono::steady_clock::now();
  worker_.request(std::move(job));
}

std::optional<ExportWriter::Outcome> ExportWriter::poll() {
  std::optional<std::pair<std::uint64_t, Outcome>> done = worker_.take();
  if (!done) return std::nullopt;
  return std::move(done->second);
}

double ExportWriter::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

}  // namespace attnscope::app
