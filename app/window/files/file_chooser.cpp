// The file chooser (file_chooser.h): zenity off the UI thread, or the in-window browser as a modal popup. One
// chooser at a time; the path it chose goes to the Browse button that opened it (by its probe name).
#include "window/files/file_chooser.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <vector>

#include "window/ui_probe.h"

namespace attnscope::app {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxEntries = 2000;  // a folder listed past this many says so

struct Entry {
  std::string name;
  bool folder = false;
};

struct Chooser {
  bool allow_desktop = true;
  std::string owner;  // the probe of the Browse button whose chooser is open ("" when none)
  ChooseWhat what = ChooseWhat::OpenFile;
  bool in_window = false, open_popup = false;
  std::string folder, typed_folder, name, error;
  std::vector<Entry> entries;
  bool truncated = false;
  std::future<std::string> desktop;  // zenity's answer ("" when cancelled)
  std::string chosen_for, chosen;    // a path chosen, until its Browse button takes it
};

Chooser& chooser() {
  static Chooser c;
  return c;
}

bool onPath(const char* program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string dirs = path;
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    std::error_code ec;
    if (end > start && fs::exists(fs::path(dirs.substr(start, end - start)) / program, ec)) return true;
    start = end + 1;
  }
  return false;
}

std::string shellQuoted(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// zenity's file selection, blocking (run off the UI thread): the chosen path, or "" when cancelled.
std::string runZenity(ChooseWhat what, const std::string& start) {
  std::string command = "zenity --file-selection";
  if (what == ChooseWhat::Folder) command += " --directory";
  if (what == ChooseWhat::SaveFile) command += " --save --confirm-overwrite";
  if (!start.empty()) command += " --filename=" + shellQuoted(start);
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (!pipe) return "";
  std::string out;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe)) out += buffer.data();
  pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// The folder to start in: the field's folder (or the field itself when it is one), else the working folder.
std::string startFolder(const std::string& path) {
  std::error_code ec;
  if (!path.empty() && fs::is_directory(path, ec)) return fs::absolute(path, ec).string();
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && fs::is_directory(parent, ec)) return fs::absolute(parent, ec).string();
  return fs::current_path(ec).string();
}

void list(Chooser& c, const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    c.error = "no such folder: " + folder;
    return;
  }
  std::vector<Entry> entries;
  bool truncated = false;
  for (fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (entries.size() == kMaxEntries) {
      truncated = true;
      break;
    }
    std::error_code kind_ec;
    entries.push_back(Entry{it->path().filename().string(), it->is_directory(kind_ec)});
  }
  if (ec) {
    c.error = "cannot list " + folder + ": " + ec.message();
    return;
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.folder != b.folder ? a.folder : a.name < b.name;  // folders first, then by name
  });
  c.folder = c.typed_folder = fs::path(folder).lexically_normal().string();
  if (c.folder.size() > 1 && c.folder.back() == '/') c.folder.pop_back(), c.typed_folder = c.folder;
  c.entries = std::move(entries);
  c.truncated = truncated;
  c.error.clear();
}

void choose(Chooser& c, const std::string& path) {
  c.chosen_for = c.owner;
  c.chosen = path;
  c.owner.clear();
}

}  // namespace

void allowDesktopChooser(bool allowed) { chooser().allow_desktop = allowed; }

bool browseButton(const std::string& probe, std::string& path, ChooseWhat what, const char* label) {
  Chooser& c = chooser();
  if (ImGui::Button((std::string(label) + "##" + probe).c_str()) && c.owner.empty()) {
    c.owner = probe;
    c.what = what;
    c.name = what == ChooseWhat::SaveFile ? fs::path(path).filename().string() : std::string();
    if (c.allow_desktop && onPath("zenity")) {
      c.in_window = false;
      c.desktop = std::async(std::launch::async, runZenity, what, path);
    } else {
      c.in_window = c.open_popup = true;
      list(c, startFolder(path));
    }
  }
  probeItem(probe);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Choose with a file browser");
  if (c.owner == probe && !c.in_window && c.desktop.valid() &&
      c.desktop.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    const std::string got = c.desktop.get();
    c.owner.clear();
    if (!got.empty()) c.chosen_for = probe, c.chosen = got;
  }
  if (c.chosen_for != probe) return false;
  path = c.chosen;
  c.chosen_for.clear();
  return true;
}

void drawFileChooser() {
  Chooser& c = chooser();
  if (c.owner.empty() || !c.in_window) return;
  if (c.open_popup) ImGui::OpenPopup("Choose###chooser"), c.open_popup = false;
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowSize(ImVec2(std::min(display.x * 0.8f, ImGui::GetFontSize() * 40),
                                  std::min(display.y * 0.8f, ImGui::GetFontSize() * 30)));
  ImGui::SetNextWindowPos(ImVec2(display.x * 0.5f, display.y * 0.5f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  const char* title = c.what == ChooseWhat::Folder     ? "Choose a folder###chooser"
                      : c.what == ChooseWhat::SaveFile ? "Save as###chooser"
                                                       : "Open a file###chooser";
  if (!ImGui::BeginPopupModal(title, nullptr, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove)) return;
  probeNote("chooser.folder", c.folder);
  if (ImGui::Button("Up")) list(c, fs::path(c.folder).parent_path().string());
  probeItem("chooser.up");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  if (ImGui::InputText("##folder", &c.typed_folder, ImGuiInputTextFlags_EnterReturnsTrue)) list(c, c.typed_folder);
  probeItem("chooser.path");
  if (!c.error.empty()) {
    ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", c.error.c_str());
    probeItem("chooser.error");
    probeNote("chooser.error", c.error);
  }
  const float footer = ImGui::GetFrameHeightWithSpacing() * (c.what == ChooseWhat::SaveFile ? 2.2f : 1.2f);
  ImGui::BeginChild("##entries", ImVec2(0, -footer), true);
  std::string enter;
  for (const Entry& e : c.entries) {
    const std::string shown = e.folder ? e.name + "/" : e.name;
    const bool selected = !e.folder && e.name == c.name;
    if (ImGui::Selectable(shown.c_str(), selected, ImGuiSelectableFlags_AllowDoubleClick)) {
      if (e.folder)
        enter = e.name;
      else if (c.what != ChooseWhat::Folder) {
        c.name = e.name;
        if (ImGui::IsMouseDoubleClicked(0)) choose(c, (fs::path(c.folder) / e.name).string());
      }
    }
    probeItem("chooser.entry." + e.name);
  }
  if (c.truncated) ImGui::TextDisabled("(the first %zu entries)", kMaxEntries);
  ImGui::EndChild();
  if (!enter.empty()) list(c, (fs::path(c.folder) / enter).string());
  if (c.what == ChooseWhat::SaveFile) {
    ImGui::SetNextItemWidth(-1);
    ImGui::InputTextWithHint("##name", "file name", &c.name);
    probeItem("chooser.name");
  }
  const bool need_name = c.what != ChooseWhat::Folder;
  ImGui::BeginDisabled(need_name && c.name.empty());
  if (ImGui::Button(c.what == ChooseWhat::Folder     ? "Choose this folder"
                    : c.what == ChooseWhat::SaveFile ? "Save here"
                                                     : "Open"))
    choose(c, need_name ? (fs::path(c.folder) / c.name).string() : c.folder);
  ImGui::EndDisabled();
  probeItem("chooser.choose");
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) c.owner.clear();
  probeItem("chooser.cancel");
  if (c.owner.empty()) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

}  // namespace attnscope::app
