// The side panes' widths and collapsed state, remembered between runs in the user's config directory
// ($XDG_CONFIG_HOME/attnscope/panes.json, else ~/.config/attnscope/panes.json). A file that cannot be read,
// parsed or written is reported (one line) and otherwise ignored: the defaults are used, nothing crashes.
#pragma once

#include <string>

namespace attnscope::app {

struct PaneSettings {
  // Widths in font heights (so that a width chosen at one UI scale is the same layout at another); 0: the
  // window's default.
  float left_em = 0, right_em = 0;
  bool left_collapsed = false, right_collapsed = false;
};

// Where they are kept; "" when neither XDG_CONFIG_HOME nor HOME is set (nothing is then read or written).
std::string paneSettingsPath();
// The settings in `path`; the defaults when it is not there (no problem then), or when it is unreadable or not
// the settings (`problem` says which field, expected and found).
PaneSettings loadPaneSettings(const std::string& path, std::string& problem);
// Writes them (creating the folder, atomically); false with `problem` when that fails.
bool savePaneSettings(const std::string& path, const PaneSettings& settings, std::string& problem);

}  // namespace attnscope::app
