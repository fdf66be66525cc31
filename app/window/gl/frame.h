// The window's own frame, for window_main.cpp: which GL it runs on, the clear before ImGui draws, and the drawn
// frame read back for --screenshot and a script's screenshots.
#pragma once

#include <string>
#include <vector>

namespace attnscope::app::gl {

// GL_RENDERER of the current context ("llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H200/PCIe/SSE2"); "" when
// the driver gives none.
std::string rendererName();
// The viewport set to the whole (width, height) framebuffer, and all of it cleared to (r, g, b, 1).
void clearFrame(int width, int height, float r, float g, float b);
// The back buffer (the frame just rendered, width x height pixels) as RGB bytes, 3 a pixel, top row first.
std::vector<unsigned char> readFrameRgb(int width, int height);

}  // namespace attnscope::app::gl
