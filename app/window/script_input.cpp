// Scripted input through ImGui's input state, one step per frame.
#include "window/script_input.h"

#include <algorithm>
#include <GLFW/glfw3.h>

#include <cstdio>
#include <sstream>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

std::vector<std::string> splitLine(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

int glfwKey(const std::string& name) {
  if (name == "Left") return GLFW_KEY_LEFT;
  if (name == "Right") return GLFW_KEY_RIGHT;
  if (name == "Up") return GLFW_KEY_UP;
  if (name == "Down") return GLFW_KEY_DOWN;
  if (name == "Enter") return GLFW_KEY_ENTER;
  if (name == "Escape") return GLFW_KEY_ESCAPE;
  if (name == "Tab") return GLFW_KEY_TAB;
  if (name == "Backspace") return GLFW_KEY_BACKSPACE;
  if (name.size() == 1 && name[0] >= 'A' && name[0] <= 'Z') return GLFW_KEY_A + (name[0] - 'A');
  throw InputError("script key", "Left, Right, Up, Down, Enter, Escape, Tab, Backspace or A..Z", name);
}

std::string layoutJson() {
  std::string json = "{\n";
  bool first = true;
  for (const auto& [id, r] : lastFrameProbes()) {
    char line[256];
    std::snprintf(line, sizeof line, "%s  \"%s\": [%.2f, %.2f, %.2f, %.2f]", first ? "" : ",\n", id.c_str(), r.min.x,
                  r.min.y, r.max.x, r.max.y);
    json += line;
    first = false;
  }
  // What did not fit (ui_probe.h): names only, under a key no widget has.
  json += std::string(first ? "" : ",\n") + "  \"clipped\": [";
  bool first_clipped = true;
  for (const std::string& id : lastFrameClipped()) {
    json += (first_clipped ? "\"" : ", \"") + id + "\"";
    first_clipped = false;
  }
  // Texts by name (ui_probe.h's probeNote), JSON-escaped.
  json += "],\n  \"notes\": {";
  bool first_note = true;
  for (const auto& [id, text] : lastFrameNotes()) {
    std::string escaped;
    for (const char ch : text) {
      if (ch == '"' || ch == '\\') {
        escaped += '\\', escaped += ch;
      } else if (static_cast<unsigned char>(ch) < 0x20) {
        char code[8];
        std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(ch));
        escaped += code;
      } else {
        escaped += ch;
      }
    }
    json += (first_note ? "\"" : ", \"") + id + "\": \"" + escaped + "\"";
    first_note = false;
  }
  return json + "}\n}\n";
}

}  // namespace

ScriptInput::ScriptInput(const std::string& path) {
  std::istringstream in(readWholeFile(path, "--script"));
  int number = 0;
  const std::vector<std::string> known = {"wait", "move", "click", "wheel",  "drag", "key",
                                          "text", "until", "screenshot", "layout", "quit", "measure"};
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::vector<std::string> words = splitLine(line.substr(0, line.find('#')));
    if (words.empty()) continue;
    if (std::find(known.begin(), known.end(), words[0]) == known.end())
      throw InputError(path + ":" + std::to_string(number),
                       "a command (wait move click wheel drag key text until screenshot layout quit measure)", words[0]);
    lines_.push_back(line.substr(0, line.find('#')));
  }
}

bool ScriptInput::resolveTarget(const std::vector<std::string>& words, std::size_t first, const AppState& state,
                                ImVec2& at) const {
  if (words.size() <= first) return false;
  if (words[first] == "cell" && words.size() >= first + 4) {
    // The centre of cell (row, col) of a head's map, with the map showing every cell.
    const auto& probes = lastFrameProbes();
    const auto it = probes.find("head" + words[first + 1] + ".map");
    if (it == probes.end()) return false;
    const float row = std::stof(words[first + 2]) + 0.5f, col = std::stof(words[first + 3]) + 0.5f;
    const ProbeRect& r = it->second;
    at = ImVec2(r.min.x + (r.max.x - r.min.x) * col / static_cast<float>(state.scene().nK()),
                r.min.y + (r.max.y - r.min.y) * row / static_cast<float>(state.scene().nQ()));
    return true;
  }
  if (words.size() >= first + 2 && std::isdigit(static_cast<unsigned char>(words[first][0]))) {
    at = ImVec2(std::stof(words[first]), std::stof(words[first + 1]));
    return true;
  }
  const auto& probes = lastFrameProbes();
  const auto it = probes.find(words[first]);
  if (it == probes.end()) return false;
  at = ImVec2((it->second.min.x + it->second.max.x) * 0.5f, (it->second.min.y + it->second.max.y) * 0.5f);
  return true;
}

bool ScriptInput::waitingForWork() const {
  return !done() && pending_screenshot_.empty() && pending_layout_.empty() && splitLine(lines_[line_])[0] == "until";
}

void ScriptInput::apply(ImGuiIO& io, const AppState& state) {
  // The script owns the input: nothing from the real (or virtual) display leaks in.
  io.MousePos = mouse_;
  for (bool& down : io.MouseDown) down = false;
  for (bool& down : io.KeysDown) down = false;
  io.KeyCtrl = io.KeyShift = io.KeyAlt = io.KeySuper = false;
  io.MouseWheel = 0;
  if (done() || !pending_screenshot_.empty() || !pending_layout_.empty()) return;

  const std::vector<std::string> words = splitLine(lines_[line_]);
  const std::string& command = words[0];
  auto next = [&] {
    ++line_;
    phase_ = 0;
  };
  auto target = [&](std::size_t first) {
    ImVec2 at;
    if (!resolveTarget(words, first, state, at))
      throw InputError("script line '" + lines_[line_] + "'", "a target that is on screen", "none found");
    return at;
  };
  if (command == "wait") {
    if (++phase_ >= std::stoi(words.at(1))) next();
  } else if (command == "until") {
    const bool absent = words.size() > 2 && words[1] == "no";
    const std::string& name = words.at(absent ? 2 : 1);
    const std::size_t limit_at = absent ? 3 : 2;
    const int limit = words.size() > limit_at ? std::stoi(words[limit_at]) : 6000;
    if (lastFrameProbes().count(name) != (absent ? 0u : 1u)) {
      if (++phase_ > limit)
        throw InputError("script line '" + lines_[line_] + "'", "the awaited state within " + std::to_string(limit) +
                                                                    " frames", "it did not come");
    } else {
      next();
    }
  } else if (command == "move") {
    mouse_ = io.MousePos = target(1);
    next();
  } else if (command == "click") {
    // frame 0: move there; 1: press; 2: release (a click is press then release over the same widget)
    if (phase_ == 0) mouse_ = io.MousePos = target(1);
    io.MouseDown[0] = phase_ == 1;
    io.KeyCtrl = words.back() == "ctrl";  // Ctrl+click: a drag field turns into a text field
    if (++phase_ > 2) next();
  } else if (command == "wheel") {
    mouse_ = io.MousePos = target(1);
    if (phase_ == 1) io.MouseWheel = std::stof(words.back());
    if (++phase_ > 1) next();
  } else if (command == "drag") {
    // frame 0: move there; 1: press; 2..N+1: move a step each frame, held; N+2: release
    const int steps = std::max(1, std::stoi(words.at(words.size() - 1)));
    if (phase_ == 0) drag_from_ = mouse_ = target(1);
    if (phase_ >= 2 && phase_ <= steps + 1) {
      const float f = static_cast<float>(phase_ - 1) / static_cast<float>(steps);
      mouse_ = ImVec2(drag_from_.x + f * std::stof(words.at(words.size() - 3)),
                      drag_from_.y + f * std::stof(words.at(words.size() - 2)));
    }
    io.MousePos = mouse_;
    io.MouseDown[0] = phase_ >= 1 && phase_ <= steps + 1;
    if (++phase_ > steps + 2) next();
  } else if (command == "key") {
    io.KeyCtrl = std::find(words.begin() + 2, words.end(), "ctrl") != words.end();
    io.KeyShift = std::find(words.begin() + 2, words.end(), "shift") != words.end();
    io.KeysDown[glfwKey(words.at(1))] = phase_ == 0;
    if (++phase_ > 1) next();
  } else if (command == "text") {
    const std::string& line = lines_[line_];
    for (char c : line.substr(line.find("text") + 5)) io.AddInputCharacter(static_cast<unsigned>(c));
    next();
  } else if (command == "screenshot") {
    pending_screenshot_ = words.at(1);
    next();
  } else if (command == "layout") {
    pending_layout_ = words.at(1);
    next();
  } else if (command == "measure") {
    measure_start_ = true;
    next();
  } else if (command == "quit") {
    quit_ = true;
    next();
  }
}

bool ScriptInput::afterRender(const std::function<void(const std::string&)>& screenshot) {
  if (!pending_screenshot_.empty()) screenshot(pending_screenshot_);
  if (!pending_layout_.empty()) writeFileAtomically(pending_layout_, layoutJson());
  pending_screenshot_.clear();
  pending_layout_.clear();
  return !quit_;
}

}  // namespace attnscope::app
