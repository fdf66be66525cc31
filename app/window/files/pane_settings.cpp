// The panes' settings file (pane_settings.h): {"left_width_em": 22, "right_width_em": 30, "left_collapsed":
// false, "right_collapsed": true}.
#include "window/files/pane_settings.h"

#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include "attnscope/atomic_file.h"
#include "attnscope/json_file.h"

namespace attnscope::app {

namespace {

// A width the window can use: a finite number of font heights, 0 (the default) or within [4, 400].
float widthField(const nlohmann::json& j, const char* field, const std::string& path) {
  if (!j.contains(field)) return 0;
  const nlohmann::json& v = j[field];
  if (!v.is_number() || !std::isfinite(v.get<double>()) ||
      (v.get<double>() != 0 && (v.get<double>() < 4 || v.get<double>() > 400)))
    throw std::runtime_error(path + ": " + field + ": expected 0 or a width of 4 to 400 font heights, found " +
                             describeJson(v));
  return v.get<float>();
}

bool flagField(const nlohmann::json& j, const char* field, const std::string& path) {
  if (!j.contains(field)) return false;
  if (!j[field].is_boolean())
    throw std::runtime_error(path + ": " + field + ": expected true or false, found " + describeJson(j[field]));
  return j[field].get<bool>();
}

}  // namespace

std::string paneSettingsPath() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/attnscope/panes.json";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.config/attnscope/panes.json";
  return "";
}

PaneSettings loadPaneSettings(const std::string& path, std::string& problem) {
  PaneSettings s;
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return s;
  try {
    const nlohmann::json j = readJsonFile(path, 64 * 1024);
    if (!j.is_object())
      throw std::runtime_error(path + ": expected an object of the panes' widths, found " + describeJson(j));
    s.left_em = widthField(j, "left_width_em", path);
    s.right_em = widthField(j, "right_width_em", path);
    s.left_collapsed = flagField(j, "left_collapsed", path);
    s.right_collapsed = flagField(j, "right_collapsed", path);
  } catch (const std::exception& e) {
    problem = std::string("pane settings ignored (the defaults used): ") + e.what();
    return PaneSettings{};
  }
  return s;
}

bool savePaneSettings(const std::string& path, const PaneSettings& s, std::string& problem) {
  if (path.empty()) return true;
  try {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    const nlohmann::json j = {{"left_width_em", s.left_em},
                              {"right_width_em", s.right_em},
                              {"left_collapsed", s.left_collapsed},
                              {"right_collapsed", s.right_collapsed}};
    writeFileAtomically(path, j.dump(2) + "\n");
  } catch (const std::exception& e) {
    problem = std::string("pane settings not saved: ") + e.what();
    return false;
  }
  return true;
}

}  // namespace attnscope::app
