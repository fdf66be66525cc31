// Widget rectangles by name, for the scripted-input mode, and what did not fit (the `layout` command's "clipped").
#include "window/ui_probe.h"

#include <imgui_internal.h>  // the current window's clip rectangle and content extent

#include <algorithm>
#include <utility>

namespace attnscope::app {

namespace {
std::map<std::string, ProbeRect> g_current, g_last;
std::set<std::string> g_clipped_current, g_clipped_last;
std::vector<std::pair<std::string, ProbeRect>> g_texts;  // this frame's probeText labels
std::map<std::string, std::string> g_notes_current, g_notes_last;
constexpr float kSlack = 0.5f;  // pixels: rounding, not clipping

// Labels that overlap by more than the slack in both directions (glyph boxes that merely touch do not).
void recordOverlaps() {
  std::sort(g_texts.begin(), g_texts.end(), [](const auto& a, const auto& b) { return a.second.min.x < b.second.min.x; });
  int reported = 0;
  for (std::size_t i = 0; i < g_texts.size() && reported < 2; ++i)
    for (std::size_t j = i + 1; j < g_texts.size() && reported < 2; ++j) {
      const ProbeRect &a = g_texts[i].second, &b = g_texts[j].second;
      if (b.min.x >= a.max.x - kSlack) break;  // sorted by left edge: no later label reaches back into a
      if (std::min(a.max.y, b.max.y) - std::max(a.min.y, b.min.y) > kSlack) {
        g_clipped_current.insert("overlap:" + g_texts[i].first + "|" + g_texts[j].first);
        ++reported;
      }
    }
  g_texts.clear();
}
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
  if (!window->ScrollbarX && window->DC.CursorMaxPos.x > window->WorkRect.Max.x + kSlack) {
    g_clipped_current.insert(pane);
    g_notes_current[pane + ".overflow"] =
        std::to_string(window->DC.CursorMaxPos.x) + " > " + std::to_string(window->WorkRect.Max.x);
  }
}

void probeText(const std::string& id, ImVec2 min, ImVec2 max) {
  g_current[id] = ProbeRect{min, max};
  g_texts.emplace_back(id, ProbeRect{min, max});
}

void probeTextRoom(const std::string& id, ImVec2 min, ImVec2 max, float room_min_x, float room_max_x) {
  if (min.x < room_min_x - kSlack || max.x > room_max_x + kSlack) g_clipped_current.insert("cut:" + id);
}

void drawProbedText(ImDrawList* list, const std::string& id, ImVec2 pos, ImU32 color, const char* text) {
  list->AddText(pos, color, text);
  const ImVec2 size = ImGui::CalcTextSize(text);
  const ImVec2 max(pos.x + size.x, pos.y + size.y);
  probeText(id, pos, max);
  const ImGuiWindow* window = ImGui::GetCurrentWindow();
  if (window && !window->ScrollbarX) probeTextRoom(id, pos, max, list->GetClipRectMin().x, list->GetClipRectMax().x);
}

void probeNote(const std::string& id, const std::string& text) { g_notes_current[id] = text; }
const std::map<std::string, std::string>& lastFrameNotes() { return g_notes_last; }

const std::map<std::string, ProbeRect>& lastFrameProbes() { return g_last; }
const std::set<std::string>& lastFrameClipped() { return g_clipped_last; }

void rotateProbes() {
  recordOverlaps();
  g_notes_last.swap(g_notes_current);
  g_notes_current.clear();
  g_last.swap(g_current);
  g_current.clear();
  g_clipped_last.swap(g_clipped_current);
  g_clipped_current.clear();
}

}  // namespace attnscope::app
