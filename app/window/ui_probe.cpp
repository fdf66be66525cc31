// Widget rectangles by name, for the scripted-input mode.
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {
std::map<std::string, ProbeRect> g_current, g_last;
}

void probeItem(const std::string& id) { g_current[id] = ProbeRect{ImGui::GetItemRectMin(), ImGui::GetItemRectMax()}; }
void probeRect(const std::string& id, ImVec2 min, ImVec2 max) { g_current[id] = ProbeRect{min, max}; }
const std::map<std::string, ProbeRect>& lastFrameProbes() { return g_last; }
void rotateProbes() {
  g_last.swap(g_current);
  g_current.clear();
}

}  // namespace attnscope::app
