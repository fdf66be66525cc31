// Named screen rectangles of widgets, recorded as the frame is built, so that the scripted-input mode (and the
// GUI tests through it) can click "model.heads.plus" rather than a pixel position that moves with the layout.
// The probe also records what did not fit: a probed item cut off at its pane's right edge, a tab whose label
// was shortened to "Walkt...", a pane whose content runs past its right edge, a text drawn past its room.
#pragma once

#include <imgui.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace attnscope::app {

struct ProbeRect {
  ImVec2 min, max;
};

// Records the last ImGui item's rectangle under `id`; when the item runs past the right edge of what its window
// shows (and the window cannot scroll sideways), `id` is also recorded as clipped.
void probeItem(const std::string& id);
void probeRect(const std::string& id, ImVec2 min, ImVec2 max);
// Records `id` as clipped unless `fits` (a label the caller measured against its room).
void probeFit(const std::string& id, bool fits);
// Call before ImGui::End (or EndChild) of a pane without a horizontal scrollbar: when any item of the pane ran
// past its right edge, `pane` is recorded as clipped.
void probePaneFits(const std::string& pane);
// A label drawn straight into a draw list (a grid's "H9", an axis' token) over [min, max): two such labels of
// one frame that overlap are recorded as clipped, "overlap:<id>|<id>" (the first two only, by left edge).
void probeText(const std::string& id, ImVec2 min, ImVec2 max);
// A label's room: when [min, max) runs past [room_min_x, room_max_x) sideways (the column it was laid out in,
// the pane it is drawn in), `id` is recorded as clipped, "cut:<id>": the reader sees part of it ("ttention").
void probeTextRoom(const std::string& id, ImVec2 min, ImVec2 max, float room_min_x, float room_max_x);
// Draws `text` at `pos` in `color` and records it with probeText under `id`, and with probeTextRoom against the
// draw list's clip rectangle (what the pane shows of it) unless the window scrolls sideways.
void drawProbedText(ImDrawList* list, const std::string& id, ImVec2 pos, ImU32 color, const char* text);
// A text the window shows, by name (the status bar's subject, the title bar), for the layout's "notes".
void probeNote(const std::string& id, const std::string& text);
const std::map<std::string, std::string>& lastFrameNotes();
// Last frame's rectangles and clipped names (the current frame's are still being recorded).
const std::map<std::string, ProbeRect>& lastFrameProbes();
const std::set<std::string>& lastFrameClipped();
// Called at the start of each frame: the rectangles recorded so far become lastFrameProbes().
void rotateProbes();

}  // namespace attnscope::app
