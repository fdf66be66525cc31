// Scripted input through ImGui's input state, one step per frame.
#include "window/script_input.h"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/text_bounds.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {

// A line's words; a double-quoted run is one word without its quotes (a target name with spaces).
std::vector<std::string> splitLine(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, any = false;
  for (const char c : line) {
    if (c == '"') {
      quoted = !quoted, any = true;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\r')) {
      if (any) words.push_back(word);
      word.clear(), any = false;
    } else {
      word += c, any = true;
    }
  }
  if (any) words.push_back(word);
  return words;
}

constexpr const char* kKeyNames =
    "Left, Right, Up, Down, Enter, Escape, Tab, Backspace, Delete, Home, End, PageUp, PageDown, Space, A..Z or 0..9";

int glfwKey(const std::string& name) {
  static const std::vector<std::pair<const char*, int>> named = {
      {"Left", GLFW_KEY_LEFT},     {"Right", GLFW_KEY_RIGHT},      {"Up", GLFW_KEY_UP},
      {"Down", GLFW_KEY_DOWN},     {"Enter", GLFW_KEY_ENTER},      {"Escape", GLFW_KEY_ESCAPE},
      {"Tab", GLFW_KEY_TAB},       {"Backspace", GLFW_KEY_BACKSPACE}, {"Delete", GLFW_KEY_DELETE},
      {"Home", GLFW_KEY_HOME},     {"End", GLFW_KEY_END},          {"PageUp", GLFW_KEY_PAGE_UP},
      {"PageDown", GLFW_KEY_PAGE_DOWN}, {"Space", GLFW_KEY_SPACE}};
  for (const auto& [key_name, key] : named)
    if (name == key_name) return key;
  if (name.size() == 1 && name[0] >= 'A' && name[0] <= 'Z') return GLFW_KEY_A + (name[0] - 'A');
  if (name.size() == 1 && name[0] >= '0' && name[0] <= '9') return GLFW_KEY_0 + (name[0] - '0');
  throw InputError("script key", kKeyNames, name);
}

// The character a key types (a letter, a digit, Space), as GLFW's character callback sends it beside the key
// when neither Ctrl nor Alt is held; 0 for a key that types none.
unsigned typedCharacter(const std::string& name, bool shift) {
  if (name == "Space") return ' ';
  if (name.size() != 1) return 0;
  if (name[0] >= '0' && name[0] <= '9') return static_cast<unsigned>(name[0]);
  if (name[0] >= 'A' && name[0] <= 'Z') return static_cast<unsigned>(shift ? name[0] : name[0] - 'A' + 'a');
  return 0;
}

bool has(const std::vector<std::string>& words, std::size_t from, const char* word) {
  return std::find(words.begin() + static_cast<std::ptrdiff_t>(std::min(from, words.size())), words.end(), word) !=
         words.end();
}

// Argument `what` of a script line as a finite number (within [lo, hi] and whole, when `whole`); throws naming
// the line.
double scriptNumber(const std::string& where, const std::string& what, const std::string& word, bool whole = false,
                    double lo = -1e30, double hi = 1e30) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(word, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const bool ok = used == word.size() && std::isfinite(value) && value >= lo && value <= hi &&
                  (!whole || word.find_first_not_of("-0123456789") == std::string::npos);  // as std::stoi reads it
  if (!ok)
    throw InputError(where, what + (whole ? ": a whole number in " + std::to_string(static_cast<long>(lo)) + ".." +
                                                std::to_string(static_cast<long>(hi))
                                          : std::string(": a finite number")),
                     quoteFragment(word));
  return value;
}

// Checks a command's arguments when the script is read, so that a bad line fails before the window opens.
void checkArguments(const std::string& where, const std::vector<std::string>& w) {
  const std::string& c = w[0];
  const auto need = [&](std::size_t count, const char* form) {
    if (w.size() < count) throw InputError(where, std::string("'") + form + "'", "'" + c + "' with too few words");
  };
  if (c == "wait") {
    need(2, "wait N");
    scriptNumber(where, "N", w[1], true, 0, 1000000);
  } else if (c == "move" || c == "click") {
    need(2, "click TARGET");
    for (std::size_t i = 2; i < w.size(); ++i)  // pixels "X Y" and "cell H R C" take numbers after the target
      if (c == "click" && std::isalpha(static_cast<unsigned char>(w[i][0])) &&
          !(w[i] == "ctrl" || w[i] == "shift" || w[i] == "right" || w[i] == "double"))
        throw InputError(where, "click's modifiers: ctrl, shift, right, double", quoteFragment(w[i]));
  } else if (c == "wheel") {
    need(3, "wheel TARGET STEPS");
    scriptNumber(where, "STEPS", w.back());
  } else if (c == "drag") {
    need(5, "drag TARGET DX DY N");
    scriptNumber(where, "DX", w[w.size() - 3]);
    scriptNumber(where, "DY", w[w.size() - 2]);
    scriptNumber(where, "N", w.back(), true, 1, 100000);
  } else if (c == "key") {
    need(2, "key NAME [ctrl] [shift]");
    glfwKey(w[1]);
    for (std::size_t i = 2; i < w.size(); ++i)
      if (w[i] != "ctrl" && w[i] != "shift") throw InputError(where, "key's modifiers: ctrl, shift", quoteFragment(w[i]));
  } else if (c == "until") {
    const bool absent = w.size() > 1 && w[1] == "no";
    need(absent ? 3 : 2, "until [no] NAME [N]");
    const std::size_t limit_at = absent ? 3 : 2;
    if (w.size() > limit_at) scriptNumber(where, "N", w[limit_at], true, 1, 10000000);
  } else if (c == "resize") {
    need(3, "resize W H");
    scriptNumber(where, "W", w[1], true, 200, 16384);
    scriptNumber(where, "H", w[2], true, 200, 16384);
  } else if (c == "screenshot" || c == "layout") {
    need(2, "screenshot PATH");
  }
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
  const std::vector<std::string> known = {"wait", "move", "click", "wheel", "drag", "key", "text", "until",
                                          "resize", "screenshot", "layout", "names", "measure", "quit"};
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::string where = path + ":" + std::to_string(number);
    // `text` types the rest of its line as written, '#' included; any other line ends at a '#'.
    const std::vector<std::string> first = splitLine(line);
    if (!first.empty() && first[0] == "text") {
      lines_.push_back(first), texts_.push_back(line);
      continue;
    }
    line = line.substr(0, line.find('#'));
    const std::vector<std::string> words = splitLine(line);
    if (words.empty()) continue;
    if (std::find(known.begin(), known.end(), words[0]) == known.end())
      throw InputError(where,
                       "a command (wait move click wheel drag key text until resize screenshot layout names measure quit)",
                       quoteFragment(words[0]));
    checkArguments(where, words);
    lines_.push_back(words), texts_.push_back(line);
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

bool ScriptInput::pendingOutput() const {
  return !pending_screenshot_.empty() || !pending_layout_.empty() || pending_names_ || pending_resize_;
}

bool ScriptInput::waitingForWork() const {
  return !done() && !pendingOutput() && lines_[line_][0] == "until";
}

void ScriptInput::apply(ImGuiIO& io, const AppState& state) {
  // The script owns the input: nothing from the real (or virtual) display leaks in.
  io.MousePos = mouse_;
  for (bool& down : io.MouseDown) down = false;
  for (bool& down : io.KeysDown) down = false;
  io.KeyCtrl = io.KeyShift = io.KeyAlt = io.KeySuper = false;
  io.MouseWheel = 0;
  if (done() || pendingOutput()) return;

  const std::vector<std::string>& words = lines_[line_];
  const std::string& command = words[0];
  auto next = [&] {
    ++line_;
    phase_ = 0;
    target_waited_ = 0;
  };
  // The target's centre, or nothing yet: a target not on screen is waited for (a tab switched a frame ago draws
  // its widgets on the next), kTargetWaitFrames frames at most.
  auto target = [&](std::size_t first) -> std::optional<ImVec2> {
    ImVec2 at;
    if (resolveTarget(words, first, state, at)) return at;
    if (++target_waited_ > kTargetWaitFrames)
      throw InputError("script line '" + texts_[line_] + "'",
                       "a target that is on screen within " + std::to_string(kTargetWaitFrames) + " frames",
                       "none found (the `names` command lists those on screen)");
    return std::nullopt;
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
        throw InputError("script line '" + texts_[line_] + "'",
                         "the awaited state within " + std::to_string(limit) + " frames", "it did not come");
    } else {
      next();
    }
  } else if (command == "move") {
    const auto at = target(1);
    if (!at) return;
    mouse_ = io.MousePos = *at;
    next();
  } else if (command == "click") {
    // frame 0: move there; 1: press; 2: release (a click is press then release over the same widget); a double
    // click presses again on 3 and releases on 4, well inside ImGui's 0.3 s.
    if (phase_ == 0) {
      const auto at = target(1);
      if (!at) return;
      mouse_ = io.MousePos = *at;
    }
    const bool twice = has(words, 2, "double");
    io.MouseDown[has(words, 2, "right") ? 1 : 0] = phase_ == 1 || (twice && phase_ == 3);
    io.KeyCtrl = has(words, 2, "ctrl");  // Ctrl+click: a drag field turns into a text field
    io.KeyShift = has(words, 2, "shift");
    if (++phase_ > (twice ? 4 : 2)) next();
  } else if (command == "wheel") {
    if (phase_ == 0) {
      const auto at = target(1);
      if (!at) return;
      mouse_ = *at;
    }
    io.MousePos = mouse_;
    if (phase_ == 1) io.MouseWheel = std::stof(words.back());
    if (++phase_ > 1) next();
  } else if (command == "drag") {
    // frame 0: move there; 1: press; 2..N+1: move a step each frame, held; N+2: release
    const int steps = std::max(1, std::stoi(words.at(words.size() - 1)));
    if (phase_ == 0) {
      const auto at = target(1);
      if (!at) return;
      drag_from_ = mouse_ = *at;
    }
    if (phase_ >= 2 && phase_ <= steps + 1) {
      const float f = static_cast<float>(phase_ - 1) / static_cast<float>(steps);
      mouse_ = ImVec2(drag_from_.x + f * std::stof(words.at(words.size() - 3)),
                      drag_from_.y + f * std::stof(words.at(words.size() - 2)));
    }
    io.MousePos = mouse_;
    io.MouseDown[0] = phase_ >= 1 && phase_ <= steps + 1;
    if (++phase_ > steps + 2) next();
  } else if (command == "key") {
    io.KeyCtrl = has(words, 2, "ctrl");
    io.KeyShift = has(words, 2, "shift");
    io.KeysDown[glfwKey(words.at(1))] = phase_ == 0;
    if (phase_ == 0 && !io.KeyCtrl)
      if (const unsigned c = typedCharacter(words[1], io.KeyShift)) io.AddInputCharacter(c);
    if (++phase_ > 1) next();
  } else if (command == "text") {
    const std::string& line = texts_[line_];
    for (char c : line.substr(line.find("text") + 5)) io.AddInputCharacter(static_cast<unsigned>(c));
    next();
  } else if (command == "resize") {
    // Asked after this frame; then two frames for the window system and the layout to follow.
    if (phase_ == 0) pending_resize_ = std::make_pair(std::stoi(words[1]), std::stoi(words[2]));
    if (++phase_ > 2) next();
  } else if (command == "screenshot") {
    pending_screenshot_ = words.at(1);
    next();
  } else if (command == "layout") {
    pending_layout_ = words.at(1);
    next();
  } else if (command == "names") {
    pending_names_ = words.size() > 1 ? words[1] : "";
    next();
  } else if (command == "measure") {
    measure_start_ = true;
    next();
  } else if (command == "quit") {
    quit_ = true;
    next();
  }
}

bool ScriptInput::afterRender(const WindowHooks& hooks) {
  if (!pending_screenshot_.empty()) hooks.screenshot(pending_screenshot_);
  if (!pending_layout_.empty()) writeFileAtomically(pending_layout_, layoutJson());
  if (pending_names_) {
    std::string names;
    for (const auto& [id, r] : lastFrameProbes()) names += id + "\n";
    if (pending_names_->empty())
      std::fwrite(names.data(), 1, names.size(), stdout);
    else
      writeFileAtomically(*pending_names_, names);
  }
  if (pending_resize_) hooks.resize(pending_resize_->first, pending_resize_->second);
  pending_screenshot_.clear();
  pending_layout_.clear();
  pending_names_.reset();
  pending_resize_.reset();
  return !quit_;
}

}  // namespace attnscope::app
