// Scripted input (`--script FILE`): mouse moves, clicks, keys and text fed through ImGui's own input state
// (io.MousePos, io.MouseDown, io.KeysDown, io.AddInputCharacter), one step per frame, so the GUI tests use the
// window as a person would. Targets are widget names recorded by ui_probe ("model.heads.plus"), a cell
// ("cell HEAD ROW COL") or pixels ("x y"); a matrix table's cell is "<probe>.<row>.<col>" ("walk.X.2.2"); a name
// with spaces in double quotes ("tab.\"Find heads\""). A target not on screen yet (a tab just switched, a pane
// still computing) is waited for, up to kTargetWaitFrames frames, then the script fails naming it.
//
// Commands, one a line (# starts a comment); docs/window.md lists them with the target names:
//   wait N                 render N frames
//   move TARGET            put the mouse over the target
//   click TARGET [ctrl] [shift] [right] [double]
//                          move, press, release a button (the left; `right`: the right one) with the modifiers
//                          held (Ctrl+click: type into a drag field); `double`: two clicks, a double click
//   wheel TARGET STEPS     mouse wheel over the target
//   drag TARGET DX DY N    press on the target, move by (DX, DY) pixels over N frames, release
//   key NAME [ctrl] [shift] press and release a key: Left Right Up Down Enter Escape Tab Backspace Delete Home End
//                          PageUp PageDown Space, A..Z, 0..9; without ctrl a letter, a digit or Space also types its
//                          character, as a keyboard does (GLFW sends both)
//   text STRING            type the characters
//   until [no] NAME [N]    render frames until the probe NAME is (or with `no`, is not) on screen, at most N
//                          (default 6000; past them the script fails): work that ends when it ends (a forward,
//                          a recompute off the UI thread) without a guessed number of frames
//   resize W H             the window's size in screen pixels (then two frames for the layout to follow)
//   screenshot PATH        write the window to PNG
//   layout PATH            write the widget rectangles as JSON (for the pixel checks), and under "clipped" the
//                          names of what did not fit (ui_probe.h)
//   names [PATH]           the names of the targets on screen, one a line, sorted (to PATH, else standard output)
//   measure                --frame-stats counts the frames from here on
//   quit                   exit (status 0)
#pragma once

#include <imgui.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "window/app_state.h"

namespace attnscope::app {

// How long a click, move, wheel or drag waits for a target that is not on screen yet (unpaced frames).
constexpr int kTargetWaitFrames = 300;

class ScriptInput {
 public:
  // Reads the script; throws InputError naming the line on an unknown command or a bad argument.
  explicit ScriptInput(const std::string& path);
  // Before ImGui::NewFrame (after the platform backend's NewFrame): overrides this frame's input.
  void apply(ImGuiIO& io, const AppState& state);
  // What afterRender asks of the window.
  struct WindowHooks {
    std::function<void(const std::string&)> screenshot;  // write the window to this PNG
    std::function<void(int, int)> resize;                // the window's new size, screen pixels
  };
  // After rendering, before the buffers swap: runs screenshot, layout, names and resize. Returns false on `quit`.
  bool afterRender(const WindowHooks& hooks);
  bool done() const { return line_ >= lines_.size(); }
  // The current step is an `until`: the script waits for work to end, as a person would (the window paces its
  // frames then, window_main.cpp).
  bool waitingForWork() const;
  // True once after a `measure` line: --frame-stats then counts only the frames from there on (a pan, say,
  // without the minutes of computing before it).
  bool takeMeasureStart() {
    const bool start = measure_start_;
    measure_start_ = false;
    return start;
  }

 private:
  bool resolveTarget(const std::vector<std::string>& words, std::size_t first, const AppState& state, ImVec2& at) const;
  bool pendingOutput() const;
  std::vector<std::vector<std::string>> lines_;  // each line's words (a quoted name one word, without quotes)
  std::vector<std::string> texts_;               // each line as written (for `text` and the errors)
  std::size_t line_ = 0;
  int phase_ = 0;           // progress through the current command (frames)
  int target_waited_ = 0;   // frames the current command has waited for its target to appear
  ImVec2 mouse_{-1, -1};
  ImVec2 drag_from_;
  bool quit_ = false;
  bool measure_start_ = false;
  std::string pending_screenshot_, pending_layout_;
  std::optional<std::string> pending_names_;      // "" : standard output
  std::optional<std::pair<int, int>> pending_resize_;
};

}  // namespace attnscope::app
