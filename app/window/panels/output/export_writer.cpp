// The Export tab's background writer.
#include "window/panels/output/export_writer.h"

#include <exception>
#include <filesystem>
#include <thread>

#include "attnscope/settings.h"
#include "window/panels/output/panel_export.h"

namespace attnscope::app {

namespace {

ExportWriter::Outcome write(const ExportWriter::Job& job) {
  // ATTNSCOPE_EXPORT_DELAY (a test aid, seconds): the writer waits before it starts, so that a test can see the
  // window drawing and a second Export refused while one is written.
  if (const std::optional<double> delay = numberSetting("ATTNSCOPE_EXPORT_DELAY"))
    std::this_thread::sleep_for(std::chrono::duration<double>(*delay));
  try {
    job.write();
    return {job.wrote, false, job.owner};
  } catch (const std::exception& e) {
    return {std::string("Not written: ") + e.what(), true, job.owner};
  }
}

}  // namespace

ExportWriter::ExportWriter() : worker_(write) {}

void ExportWriter::start(Job job) {
  path_ = job.path, what_ = job.what;
  started_ = std::chrono::steady_clock::now();
  worker_.request(std::move(job));
}

std::optional<ExportWriter::Outcome> ExportWriter::poll(const std::string& owner) {
  if (std::optional<std::pair<std::uint64_t, Outcome>> done = worker_.take())
    landed_[done->second.owner] = std::move(done->second);
  const auto it = landed_.find(owner);
  if (it == landed_.end()) return std::nullopt;
  Outcome out = std::move(it->second);
  landed_.erase(it);
  return out;
}

double ExportWriter::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

ExportWriter& exportWriter(ExportState& state) {
  if (!state.writer) state.writer = std::make_shared<ExportWriter>();
  return *state.writer;
}

std::string wroteLine(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.is_absolute()) return "Wrote " + path;
  const std::filesystem::path folder = std::filesystem::absolute(p, ec).parent_path();
  return "Wrote " + path + (ec ? std::string() : " in " + folder.lexically_normal().string());
}

}  // namespace attnscope::app
