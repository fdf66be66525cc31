// Named screen rectangles of widgets, recorded as the frame is built, so that the scripted-input mode (and the
// GUI tests through it) can click "model.heads.plus" rather than a pixel position that moves with the layout.
#pragma once

#include <imgui.h>

#include <map>
#include <string>

namespace attnscope::app {

struct ProbeRect {
  ImVec2 min, max;
};

// Records the last ImGui item's rectangle under `id`.
void probeItem(const std::string& id);
void probeRect(const std::string& id, ImVec2 min, ImVec2 max);
// Last frame's rectangles (the current frame's are still being recorded).
const std::map<std::string, ProbeRect>& lastFrameProbes();
// Called at the start of each frame: the rectangles recorded so far become lastFrameProbes().
void rotateProbes();

}  // namespace attnscope::app
