// The window frame's GL (gl/frame.h).
#include "window/gl/frame.h"

#include <epoxy/gl.h>

#include <algorithm>
#include <cstddef>

namespace attnscope::app::gl {

std::string rendererName() {
  const char* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  return renderer ? renderer : "";
}

void clearFrame(int width, int height, float r, float g, float b) {
  glViewport(0, 0, width, height);
  glClearColor(r, g, b, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
}

std::vector<unsigned char> readFrameRgb(int width, int height) {
  std::vector<unsigned char> pixels(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
  // GL's rows start at the bottom: turn them here, in our own buffer. (stb's flip flag would do it too, but it
  // is one flag for the whole process and every later PNG export would come out upside down.)
  const std::size_t row = static_cast<std::size_t>(width) * 3;
  for (int y = 0; y < height / 2; ++y)
    std::swap_ranges(pixels.begin() + static_cast<std::ptrdiff_t>(row * static_cast<std::size_t>(y)),
                     pixels.begin() + static_cast<std::ptrdiff_t>(row * static_cast<std::size_t>(y + 1)),
                     pixels.begin() + static_cast<std::ptrdiff_t>(row * static_cast<std::size_t>(height - 1 - y)));
  return pixels;
}

}  // namespace attnscope::app::gl
