// Scripted input (`--script FILE`): mouse moves, clicks, keys and text fed through ImGui's own input state
// (io.MousePos, io.MouseDown, io.KeysDown, io.AddInputCharacter), one step per frame, so the GUI tests use the
// window as a person would. Targets are widget names recorded by ui_probe ("model.heads.plus"), a cell
// ("cell HEAD ROW COL") or pixels ("x y"); a matrix table's cell is "<probe>.<row>.<col>" ("walk.X.2.2").
//
// Commands, one a line (# starts a comment):
//   wait N                 render N frames
//   move TARGET            put the mouse over the target
//   click TARGET [ctrl]    move, press, release the left button (with Ctrl held: type into a drag field)
//   wheel TARGET STEPS     mouse wheel over the target
//   drag TARGET DX DY N    press on the target, move by (DX, DY) pixels over N frames, release
//   key NAME [ctrl] [shift] press and release a key: Left Right Up Down Enter Escape Tab Backspace A..Z
//   text STRING            type the characters
//   until [no] NAME [N]    render frames until the probe NAME is (or with `no`, is not) on screen, at most N
//                          (default 6000; past them the script fails): work that ends when it ends (a forward,
//                          a recompute off the UI thread) without a guessed number of frames
//   screenshot PATH        write the window to PNG
//   layout PATH            write the widget rectangles as JSON (for the pixel checks), and under "clipped" the
//                          names of what did not fit (ui_probe.h)
//   quit                   exit (status 0)
#pragma once

#include <imgui.h>

#include <functional>
#include <string>
#include <vector>

#include "window/app_state.h"

namespace attnscope::app {

class ScriptInput {
 public:
  // Reads the script; throws InputError naming the line on an unknown command.
  explicit ScriptInput(const std::string& path);
  // Before ImGui::NewFrame (after the platform backend's NewFrame): overrides this frame's input.
  void apply(ImGuiIO& io, const AppState& state);
  // After rendering, before the buffers swap: runs screenshot/layout commands. Returns false on `quit`.
  bool afterRender(const std::function<void(const std::string&)>& screenshot);
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
  std::vector<std::string> lines_;
  std::size_t line_ = 0;
  int phase_ = 0;  // progress through the current command (frames)
  ImVec2 mouse_{-1, -1};
  ImVec2 drag_from_;
  bool quit_ = false;
  bool measure_start_ = false;
  std::string pending_screenshot_, pending_layout_;
};

}  // namespace attnscope::app
