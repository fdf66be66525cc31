// The window: GLFW + OpenGL 4.3 core + Dear ImGui. A flat init, loop, shutdown; the panels do the rest.
// Options: [PATH] (startup_open.h: a scene, a checkpoint folder with --text, an arrays file with --tokens, a capture), --scene
// FILE, --screenshot PATH --frames N, --frame-stats, --script FILE, --backend cpu|gpu|auto.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "window/app_state.h"
#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/gpu_backend.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/settings.h"
#include "attnscope/text_bounds.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "window/gl/frame.h"
#include "window/maps/heatmap_view.h"
#include "window/subject/subject.h"
#include "window/panels/panels.h"
#include "window/files/file_chooser.h"
#include "window/script_input.h"
#include "window/startup_open.h"
#include "window/ui_probe.h"
#include "window/window_layout.h"

namespace attnscope {

namespace {

struct WindowOptions {
  app::StartupArguments open;  // the file or folder to open, and the options that go with it
  std::optional<std::string> screenshot_path, script_path;
  std::string backend = "auto";  // cpu, gpu, or auto (a hardware GPU when it starts, quietly the CPU otherwise)
  long frames = 0;               // 0 = until closed
  bool frame_stats = false;
};

WindowOptions parseOptions(const std::vector<std::string>& args) {
  cli::Args parsed("window", args);
  WindowOptions o;
  const std::optional<std::string> scene = parsed.take("--scene");
  o.open.text = parsed.take("--text");
  o.open.text_file = parsed.take("--text-file");
  o.open.tokens = parsed.take("--tokens");
  o.open.tensor = parsed.take("--tensor");
  o.screenshot_path = parsed.take("--screenshot");
  o.script_path = parsed.take("--script");
  o.frames = parsed.takeInt("--frames", o.screenshot_path ? 3 : 0, 1, 1000000);
  o.frame_stats = parsed.takeFlag("--frame-stats");
  o.backend = parsed.takeChoice("--backend", {"cpu", "gpu", "auto"}, "auto");
  const std::vector<std::string> paths = parsed.positionals(1);
  if (!paths.empty() && scene) throw InputError("--scene", "one file to open", "both --scene and " + quoteFragment(paths[0]));
  o.open.path = paths.empty() ? scene : std::optional<std::string>(paths[0]);
  return o;
}

// Mesa's software rasterisers run compute shaders on the CPU, tens of times slower than the Eigen backend on
// the same cores: there `--backend auto` keeps the CPU (the Model panel still offers the GPU).
bool windowRendererIsSoftware() { return attnscope::isSoftwareRenderer(app::gl::rendererName()); }

// Reads the back buffer (the frame just rendered) and writes it as PNG, top row first.
void writeScreenshot(GLFWwindow* window, const std::string& path) {
  int w = 0, h = 0;
  glfwGetFramebufferSize(window, &w, &h);
  const std::vector<unsigned char> pixels = app::gl::readFrameRgb(w, h);  // top row first
  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &png, w, h, 3, pixels.data(), w * 3))
    throw InputError("--screenshot", "a PNG encoding of the window", "an stb_image_write failure");
  writeFileAtomically(path, png);
}

// `landing`: the times of the frames a worker result landed in (AppState::landedThisTick).
void printFrameStats(std::vector<double> ms, const std::vector<double>& landing) {
  if (ms.empty()) return;
  if (!landing.empty()) {
    std::printf("frames a result landed in (ms):");
    for (double t : landing) std::printf(" %.1f", t);
    std::printf("\n");
  }
  // Frames past 50 ms by number, in order: a spike (a result landing, a scene made) that a median hides.
  std::string slow;
  for (std::size_t i = 0; i < ms.size(); ++i)
    if (ms[i] > 50) slow += " #" + std::to_string(i) + " " + std::to_string(static_cast<int>(std::lround(ms[i])));
  if (!slow.empty()) std::printf("frames over 50 ms (number, ms):%s\n", slow.c_str());
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(ms.size())))];
  };
  std::printf("frames %zu  median %.2f ms  p95 %.2f ms  (renderer: %s)\n", ms.size(), at(0.5), at(0.95),
              app::gl::rendererName().c_str());
}

// Frame pacing: after input (or a scripted step) the next frame is drawn at once, so the window follows the
// hand; once the hand has rested for kRestSeconds, frames come at most kRestFps a second, each woken early by any
// event (progress of background work, a blinking cursor, a result landing, still show). On two cores with llvmpipe
// a frame costs ~14 ms of a core: drawn back to back they took half the machine from the background work (a
// 32k-token head's overview took 4.2 s instead of 1.6 s alone).
class FramePacer {
 public:
  static constexpr double kRestSeconds = 0.5;
  static constexpr double kRestFps = 10;
  // Before the frame's ImGui::NewFrame (after the platform backend's and the script's input).
  void noteInput(const ImGuiIO& io) {
    bool input = io.MousePos.x != mouse_.x || io.MousePos.y != mouse_.y || io.MouseWheel != 0 ||
                 io.MouseWheelH != 0 || !io.InputQueueCharacters.empty();
    for (bool down : io.MouseDown) input = input || down;
    for (bool down : io.KeysDown) input = input || down;
    mouse_ = io.MousePos;
    if (input) last_input_ = std::chrono::steady_clock::now();
  }
  // Waits for the next frame's events: none past a poll while the hand moves, else up to 1 / kRestFps seconds.
  void awaitEvents(bool paced) const {
    const double rested = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_input_).count();
    if (paced && rested >= kRestSeconds)
      glfwWaitEventsTimeout(1.0 / kRestFps);
    else
      glfwPollEvents();
  }

 private:
  ImVec2 mouse_{-1, -1};
  std::chrono::steady_clock::time_point last_input_ = std::chrono::steady_clock::now();
};

void loadFonts(float scale) {
  ImGuiIO& io = ImGui::GetIO();
  const float size = std::round(15.0f * scale);
  // Latin, Greek and Cyrillic, the marks token labels use: '␣' (a space), '↵' (newline), '⇥' (tab), and the
  // '…' of an elided label.
  static ImVector<ImWchar> ranges;
  if (ranges.empty()) {
    ImFontGlyphRangesBuilder builder;
    builder.AddRanges(io.Fonts->GetGlyphRangesCyrillic());
    static const ImWchar greek[] = {0x0370, 0x03FF, 0};
    builder.AddRanges(greek);
    builder.AddText("\u2423\u21B5\u21E5\u2026");
    builder.BuildRanges(&ranges);
  }
  if (std::filesystem::exists(ATTNSCOPE_FONT_PATH) &&
      io.Fonts->AddFontFromFileTTF(ATTNSCOPE_FONT_PATH, size, nullptr, ranges.Data))
    return;
  ImFontConfig config;
  config.SizePixels = 13.0f * scale;
  io.Fonts->AddFontDefault(&config);  // ImGui's own font when DejaVu Sans is not installed
}

}  // namespace

int runWindow(const std::vector<std::string>& args) {
  const WindowOptions options = parseOptions(args);
  // A bad environment setting is said in the window (and on stderr) and its default used: the window, unlike
  // the CLI, has a place to say it and a person to read it.
  const std::vector<std::string> bad_settings = badSettings();
  useDefaultsForBadSettings();
  for (const std::string& line : bad_settings) std::fprintf(stderr, "attnscope: using the default: %s\n", line.c_str());
  // Read the scene and the script first: a bad file is a one-line error before any window appears.
  app::StartupOpen opened = app::readStartupOpen(options.open);
  Scene scene = opened.scene ? std::move(*opened.scene) : app::initialScene();
  std::unique_ptr<app::ScriptInput> script;
  if (options.script_path) script = std::make_unique<app::ScriptInput>(*options.script_path);
  app::allowDesktopChooser(!script);  // a desktop dialog would take the input a script drives

  // Before a window exists GLFW's errors go into the one-line message below; after, to stderr as they come.
  glfwSetErrorCallback(nullptr);
  if (!glfwInit()) {
    const char* reason = nullptr;
    glfwGetError(&reason);
    throw InputError("window", "a display (set DISPLAY, or run under Xvfb)",
                     std::string("none could be opened (") + (reason ? reason : "GLFW failed to start") + ")");
  }
  glfwSetErrorCallback(
      [](int code, const char* text) { std::fprintf(stderr, "attnscope: GLFW %d: %s\n", code, text); });
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  // ATTNSCOPE_UI_SCALE overrides the monitor's content scale (to try a HiDPI look on any display); the window
  // then grows by the same factor, as GLFW_SCALE_TO_MONITOR does for a real HiDPI monitor.
  const float ui_scale_override = static_cast<float>(numberSetting("ATTNSCOPE_UI_SCALE").value_or(0.0));
  const int initial_scale = ui_scale_override > 0 ? static_cast<int>(ui_scale_override) : 1;
  // Never larger than the monitor's work area (the screen less its panels): a 2560 x 1600 window on a 1280 x 800
  // screen would put half of every panel out of reach.
  int window_w = 1280 * std::max(1, initial_scale), window_h = 800 * std::max(1, initial_scale);
  if (GLFWmonitor* monitor = glfwGetPrimaryMonitor()) {
    int area_x = 0, area_y = 0, area_w = 0, area_h = 0;
    glfwGetMonitorWorkarea(monitor, &area_x, &area_y, &area_w, &area_h);
    if (area_w > 0 && area_h > 0) window_w = std::min(window_w, area_w), window_h = std::min(window_h, area_h);
  }
  // GLFW_SCALE_TO_MONITOR would grow the window again by the monitor's own scale; the clamped size is final.
  if (ui_scale_override > 0) glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_FALSE);
  GLFWwindow* window = glfwCreateWindow(window_w, window_h, "attnscope", nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    throw InputError("window", "an OpenGL 4.3 core context", "none (see the GLFW message above)");
  }
  glfwMakeContextCurrent(window);
  const bool headless_run = options.screenshot_path || script || options.frame_stats;
  glfwSwapInterval(headless_run ? 0 : 1);  // measured runs time the frame itself, not the display's refresh

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is computed from the window size every frame
  float content_scale = 1.0f, unused = 1.0f;
  glfwGetWindowContentScale(window, &content_scale, &unused);
  if (ui_scale_override > 0) content_scale = ui_scale_override;
  ImGui::StyleColorsDark();
  // The panels tile the window, so their background is the clear colour: drawing it again per panel cost
  // ~3 ms per panel on llvmpipe (a blended full-panel fill). ImGui skips fully transparent rectangles.
  const ImVec4 background = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  ImGui::GetStyle().Colors[ImGuiCol_WindowBg].w = 0.0f;
  ImGui::GetStyle().ScaleAllSizes(content_scale);
  loadFonts(content_scale);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 430 core");

  {
    app::AppState state(std::move(scene));
    state.window_renderer = app::gl::rendererName();

    if (options.backend == "gpu" || (options.backend == "auto" && !windowRendererIsSoftware())) {
      state.useBackend("gpu");
      if (options.backend == "auto" && state.backend().name() == "cpu") state.clearBanner();  // no GPU: quietly CPU
    }
    if (!bad_settings.empty()) {
      std::string said;
      for (const std::string& line : bad_settings) said += (said.empty() ? "" : "; ") + line;
      state.refuse("Using the default for a bad setting: " + said);
    }
    app::ViewState view;
    app::applyStartupOpen(opened, state, view);
    app::HeatmapRenderer renderer;
    std::vector<double> frame_ms, landing_ms;
    long frame = 0;
    bool running = true;
    FramePacer pacer;
    std::string window_title = "attnscope";
    // Paced: a person's window, or a script waiting for work to end (`until`, as a person waits); the other
    // scripted steps, --frames and --screenshot count frames and run unpaced; so do frames that move work on
    // (a GPU tile filled a band per frame).
    const bool paced_run = !script && !options.screenshot_path && options.frames == 0;
    while (running && !glfwWindowShouldClose(window)) {
      pacer.awaitEvents((paced_run || (script && script->waitingForWork())) && !renderer.fillsPending());
      const auto start = std::chrono::steady_clock::now();
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      if (script) script->apply(io, state);
      pacer.noteInput(io);
      if (script && script->takeMeasureStart()) frame_ms.clear();
      ImGui::NewFrame();
      app::rotateProbes();
      state.tick();
      app::drawWindowLayout(state, view, renderer, frame_ms.empty() ? 0.0 : frame_ms.back());
      // The title bar names the subject on show (subject.h); set only when it changes.
      const std::string title = app::Subject(state, view).windowTitle();
      if (title != window_title) glfwSetWindowTitle(window, title.c_str()), window_title = title;
      app::probeNote("window.title", title);
      ImGui::Render();
      int fb_w = 0, fb_h = 0;
      glfwGetFramebufferSize(window, &fb_w, &fb_h);
      app::gl::clearFrame(fb_w, fb_h, background.x, background.y, background.z);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      ++frame;
      if (script)
        running = script->afterRender({[&](const std::string& path) { writeScreenshot(window, path); },
                                       [&](int w, int h) { glfwSetWindowSize(window, w, h); }}) &&
                  !(script->done() && !options.screenshot_path);
      if (options.screenshot_path && frame >= options.frames && (!script || script->done())) {
        writeScreenshot(window, *options.screenshot_path);
        running = false;
      }
      if (!options.screenshot_path && options.frames > 0 && frame >= options.frames) running = false;
      glfwSwapBuffers(window);
      frame_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      if (state.landedThisTick()) landing_ms.push_back(frame_ms.back());
    }
    if (options.frame_stats) printFrameStats(frame_ms, landing_ms);
  }

  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return 0;
}

}  // namespace attnscope
