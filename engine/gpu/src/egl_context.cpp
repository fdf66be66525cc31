// Headless EGL context: choose a display (NVIDIA device, Mesa surfaceless, any device), then GL 4.3 core.
#include "egl_context.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "attnscope/gpu_backend.h"

namespace attnscope::gpu {

namespace {

bool hasExtension(const char* list, const char* name) {
  if (!list) return false;
  const std::size_t length = std::strlen(name);
  for (const char* p = list; (p = std::strstr(p, name)) != nullptr; p += length)
    if ((p == list || p[-1] == ' ') && (p[length] == ' ' || p[length] == '\0')) return true;
  return false;
}

std::string eglErrorText() {
  char text[32];
  std::snprintf(text, sizeof text, "EGL error 0x%04x", static_cast<unsigned>(eglGetError()));
  return text;
}

std::vector<EGLDeviceEXT> eglDevices() {
  EGLint count = 0;
  if (!eglQueryDevicesEXT(0, nullptr, &count) || count <= 0) return {};
  std::vector<EGLDeviceEXT> devices(static_cast<std::size_t>(count));
  if (!eglQueryDevicesEXT(count, devices.data(), &count)) return {};
  devices.resize(static_cast<std::size_t>(count));
  return devices;
}

}  // namespace

EglContext::EglContext() {
  const char* client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (!hasExtension(client, "EGL_EXT_platform_base"))
    throw GpuUnavailable(client ? "no headless OpenGL: EGL lacks EGL_EXT_platform_base"
                                : "no headless OpenGL: EGL found no driver (libegl-mesa0 or the NVIDIA driver)");
  const bool device_platform =
      hasExtension(client, "EGL_EXT_device_enumeration") && hasExtension(client, "EGL_EXT_platform_device");
  const std::vector<EGLDeviceEXT> devices = device_platform ? eglDevices() : std::vector<EGLDeviceEXT>{};

  for (EGLDeviceEXT device : devices)  // NVIDIA's EGL devices are the ones with CUDA interop
    if (hasExtension(eglQueryDeviceStringEXT(device, EGL_EXTENSIONS), "EGL_NV_device_cuda")) {
      display_ = eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, device, nullptr);
      platform_ = "EGL device (NVIDIA)";
      break;
    }
  if (display_ == EGL_NO_DISPLAY && hasExtension(client, "EGL_MESA_platform_surfaceless")) {
    display_ = eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    platform_ = "EGL surfaceless";
  }
  if (display_ == EGL_NO_DISPLAY && !devices.empty()) {
    display_ = eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, devices.front(), nullptr);
    platform_ = "EGL device";
  }
  if (display_ == EGL_NO_DISPLAY)
    throw GpuUnavailable("no headless OpenGL: EGL offers neither a GPU device nor Mesa's surfaceless platform");

  EGLint major = 0, minor = 0;
  if (!eglInitialize(display_, &major, &minor))
    throw GpuUnavailable("no headless OpenGL: eglInitialize failed on the " + platform_ + " display (" +
                         eglErrorText() + ")");
  if (!eglBindAPI(EGL_OPENGL_API)) throw GpuUnavailable("no headless OpenGL: EGL cannot bind desktop OpenGL");

  const char* display_extensions = eglQueryString(display_, EGL_EXTENSIONS);
  EGLConfig config = EGL_NO_CONFIG_KHR;
  if (!hasExtension(display_extensions, "EGL_KHR_no_config_context")) {
    const EGLint wanted[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
    EGLint found = 0;
    if (!eglChooseConfig(display_, wanted, &config, 1, &found) || found < 1)
      throw GpuUnavailable("no headless OpenGL: no EGL config renders desktop OpenGL on the " + platform_ + " display");
  }
  const EGLint attributes[] = {
      EGL_CONTEXT_MAJOR_VERSION,           4,       EGL_CONTEXT_MINOR_VERSION, 3, EGL_CONTEXT_OPENGL_PROFILE_MASK,
      EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
  context_ = eglCreateContext(display_, config, EGL_NO_CONTEXT, attributes);
  if (context_ == EGL_NO_CONTEXT)
    throw GpuUnavailable("no OpenGL 4.3 core context on the " + platform_ + " display (" + eglErrorText() + ")");
  if (!eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, context_)) {
    const std::string error = eglErrorText();
    eglDestroyContext(display_, context_);
    throw GpuUnavailable("cannot make the OpenGL 4.3 context current without a surface (" + error + ")");
  }
}

EglContext::~EglContext() {
  // The display is not terminated: EGL displays are shared per process, other backends may still use it.
  if (eglGetCurrentContext() == context_) eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  eglDestroyContext(display_, context_);
}

void EglContext::makeCurrent() const {
  if (eglGetCurrentContext() == context_) return;
  if (!eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, context_))
    throw GpuUnavailable("the OpenGL context cannot be made current (" + eglErrorText() + "): was it lost?");
}

}  // namespace attnscope::gpu
