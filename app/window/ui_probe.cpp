// Widget rectangles by name, for the scripted-input mode, and what did not fit (the `layout` command's "clipped").
#include "window/ui_probe.h"

#include <imgui_internal.h>  // the current window's clip rectangle and content extent

namespace attnscope::app {

namespace {
std::map<std::string, ProbeRect> g_current, g_last;
std::set<std::string> g_clipped_current, g_clipped_last;
constexpr float kSlack = 0.5f;  // pixels: rounding, not clipping
}  // namespace

void probeItem(const std::string& id) {
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  g_current[id] = ProbeRect{min, max};
  const ImGuiWindow* window = ImGui::GetCurrentWindow();
  // A window that scrolls sideways (a wide table) shows the rest on demand: nothing is lost there.
  if (!window->ScrollbarX && max.x > window->ClipRect.Max.x + kSlack) g_clipped_current.insert(id);
}

void probeRect(const std::string& id, ImVec2 min, ImVec2 max) { g_current[id] = ProbeRect{min, max}; }

void probeFit(const std::string& id, bool fits) {
  if (!fits) g_clipped_current.insert(id);
}

void probePaneFits(const std::string& pane) {
  const ImGuiWindow* window = ImGui::GetCurrentWindow();
  if (!window->ScrollbarX && window->DC.CursorMaxPos.x > window->WorkRect.Max.x + kSlack)
    g_clipped_current.insert(pane);
}

const std::map<std::string, ProbeRect>& lastFrameProbes() { return g_last; }
const std::set<std::string>& lastFrameClipped() { return g_clipped_last; }

void rotateProbes() {
  g_last.swap(g_current);
  g_current.clear();
  g_clipped_last.swap(g_clipped_current);
  g_clipped_current.clear();
}

}  // namespace attnscope::app
