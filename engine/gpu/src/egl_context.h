// A headless OpenGL 4.3 core context of the backend's own, through EGL: no window and no X server.
#pragma once

#include <epoxy/egl.h>

#include <string>

namespace attnscope::gpu {

class EglContext {
 public:
  // The NVIDIA device (EGL_EXT_platform_device) when there is one, else Mesa's surfaceless platform, else the
  // first EGL device. Throws GpuUnavailable saying why when none gives a GL 4.3 core context.
  EglContext();
  ~EglContext();
  EglContext(const EglContext&) = delete;
  EglContext& operator=(const EglContext&) = delete;

  void makeCurrent() const;
  const std::string& platform() const { return platform_; }  // how the display was found, for device()

 private:
  EGLDisplay display_ = EGL_NO_DISPLAY;
  EGLContext context_ = EGL_NO_CONTEXT;
  std::string platform_;
};

}  // namespace attnscope::gpu
