// A file chooser for the window's path fields (Open, Save, Checkpoint, Export): the desktop's own through zenity
// where one is on PATH (and the window is not scripted), else an in-window browser (folders, files, Up, a path
// field), so it works under Xvfb and in the GUI tests. Its widgets are probed for the scripted mode:
// "chooser.path", "chooser.up", "chooser.entry.<name>", "chooser.name", "chooser.choose", "chooser.cancel".
#pragma once

#include <string>

namespace attnscope::app {

enum class ChooseWhat { OpenFile, SaveFile, Folder };

// A "Browse..." button (or `label`), probed as `probe`, that opens the chooser starting from the field's `path`
// (its folder). True on the frame a path was chosen: it is then in `path`.
bool browseButton(const std::string& probe, std::string& path, ChooseWhat what, const char* label = "Browse...");
// The in-window browser while one is open, over every pane (call once a frame, after the panes).
void drawFileChooser();
// The desktop's chooser would take the input from a scripted window: the scripted mode turns it off.
void allowDesktopChooser(bool allowed);

}  // namespace attnscope::app
