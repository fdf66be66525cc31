// Heatmap textures and the draw callback that runs our heatmap shader in the middle of ImGui's draw list.
#include "heatmap_view.h"

#include <epoxy/gl.h>

#include <stdexcept>
#include <string>

#include "attnscope/colormap.h"
#include "heatmap_shaders.h"
#ifdef ATTNSCOPE_HAS_GPU
#include "attnscope/gpu_backend.h"
#endif

namespace attnscope::app {

namespace {

GLuint compileShader(GLenum kind, const char* source, const char* name) {
  GLuint shader = glCreateShader(kind);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = 0;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[4096] = {};
    glGetShaderInfoLog(shader, sizeof log, nullptr, log);
    glDeleteShader(shader);
    throw std::runtime_error(std::string("heatmap shader ") + name + " (GLSL 4.30) failed to compile: " + log);
  }
  return shader;
}

GLuint makeTexture() {
  GLuint texture = 0;
  glGenTextures(1, &texture);
  glBindTexture(GL_TEXTURE_2D, texture);
  // Nearest: each texel is one cell, and the colour map is looked up by index (texelFetch).
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  return texture;
}

}  // namespace

HeatmapRenderer::HeatmapRenderer() {
  GLuint vert = compileShader(GL_VERTEX_SHADER, kHeatmap_vert, "heatmap.vert");
  GLuint frag = compileShader(GL_FRAGMENT_SHADER, kHeatmap_frag, "heatmap.frag");
  program_ = glCreateProgram();
  glAttachShader(program_, vert);
  glAttachShader(program_, frag);
  glLinkProgram(program_);
  glDeleteShader(vert);
  glDeleteShader(frag);
  GLint ok = 0;
  glGetProgramiv(program_, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[4096] = {};
    glGetProgramInfoLog(program_, sizeof log, nullptr, log);
    throw std::runtime_error(std::string("heatmap program failed to link: ") + log);
  }
  glGenVertexArrays(1, &vao_);  // empty: the quad comes from gl_VertexID, but core GL needs a VAO bound

  // colour map: 256 x 1 RGBA8, entry i = colorMapTable(Viridis)[i]
  std::vector<unsigned char> rgba;
  for (const Rgb8& c : colorMapTable(ColorMap::Viridis)) rgba.insert(rgba.end(), {c.r, c.g, c.b, 255});
  colormap_ = makeTexture();
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, kColorMapSize, 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  mask_ = makeTexture();
}

HeatmapRenderer::~HeatmapRenderer() {
  glDeleteTextures(static_cast<GLsizei>(head_textures_.size()), head_textures_.data());
  glDeleteTextures(1, &colormap_);
  glDeleteTextures(1, &mask_);
  glDeleteVertexArrays(1, &vao_);
  glDeleteProgram(program_);
}

unsigned HeatmapRenderer::weightsTexture(const AppState& state, int head) const {
#ifdef ATTNSCOPE_HAS_GPU
  if (const auto* gpu = dynamic_cast<const GpuBackend*>(&state.backend())) return gpu->weightsTexture(head);
#else
  (void)state;
#endif
  return head_textures_[static_cast<std::size_t>(head)];
}

void HeatmapRenderer::beginFrame(const AppState& state) {
  calls_.clear();
  const Scene& scene = state.scene();
  const int heads = scene.numHeads();
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  if (state.fullRevision() != full_revision_) {
    full_revision_ = state.fullRevision();
    // mask: (n_q, n_k) bytes, 255 = may attend
    MaskMatrix allowed = allowedMask(scene);
    for (Eigen::Index i = 0; i < allowed.size(); ++i) allowed.data()[i] = allowed.data()[i] ? 255 : 0;
    glBindTexture(GL_TEXTURE_2D, mask_);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R8, scene.nK(), scene.nQ(), 0, GL_RED, GL_UNSIGNED_BYTE, allowed.data());
  }
  while (static_cast<int>(head_textures_.size()) < heads) {
    head_textures_.push_back(makeTexture());
    head_revisions_.push_back(~0u);
  }
  const bool cpu = state.backend().name() == "cpu";
  draw_textures_.resize(static_cast<std::size_t>(heads));
  for (int h = 0; h < heads; ++h) {
    const std::size_t at = static_cast<std::size_t>(h);
    if (cpu && head_revisions_[at] != state.headRevision(h)) {
      // weights: (n_q, n_k) row-major -> texture n_k wide, n_q tall, row i = query i
      const Matrix& w = state.result().heads[at].weights;
      glBindTexture(GL_TEXTURE_2D, head_textures_[at]);
      glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, static_cast<GLsizei>(w.cols()), static_cast<GLsizei>(w.rows()), 0,
                   GL_RED, GL_FLOAT, w.data());
      head_revisions_[at] = state.headRevision(h);
    }
    draw_textures_[at] = weightsTexture(state, h);
  }
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glBindTexture(GL_TEXTURE_2D, 0);
}

void HeatmapRenderer::draw(ImDrawList* list, int head, ImVec2 p0, ImVec2 p1, const CellView& view, float lo,
                           float hi) {
  calls_.push_back(DrawCall{this, draw_textures_[static_cast<std::size_t>(head)], ImVec4(p0.x, p0.y, p1.x, p1.y),
                            view, lo, hi});
  list->AddCallback(&HeatmapRenderer::renderCallback, &calls_.back());
  list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);  // ImGui's backend restores its own GL state
}

void HeatmapRenderer::renderCallback(const ImDrawList*, const ImDrawCmd* cmd) {
  const DrawCall& call = *static_cast<const DrawCall*>(cmd->UserCallbackData);
  call.self->render(call, *cmd);
}

void HeatmapRenderer::render(const DrawCall& call, const ImDrawCmd& cmd) const {
  const ImGuiIO& io = ImGui::GetIO();
  const ImVec2 scale = io.DisplayFramebufferScale;
  const float fb_height = io.DisplaySize.y * scale.y;
  // Clip to the ImGui window the heatmap sits in (the backend does this only for its own commands).
  const ImVec4 clip = cmd.ClipRect;
  glScissor(static_cast<GLint>(clip.x * scale.x), static_cast<GLint>(fb_height - clip.w * scale.y),
            static_cast<GLsizei>((clip.z - clip.x) * scale.x), static_cast<GLsizei>((clip.w - clip.y) * scale.y));
  glUseProgram(program_);
  glBindVertexArray(vao_);
  glUniform4f(glGetUniformLocation(program_, "u_rect"), call.rect.x, call.rect.y, call.rect.z, call.rect.w);
  glUniform2f(glGetUniformLocation(program_, "u_display"), io.DisplaySize.x, io.DisplaySize.y);
  glUniform4f(glGetUniformLocation(program_, "u_view"), call.view.col0, call.view.row0, call.view.col1,
              call.view.row1);
  glUniform2f(glGetUniformLocation(program_, "u_range"), call.lo, call.hi);
  glUniform3f(glGetUniformLocation(program_, "u_masked_color"), kMaskedColor.r / 255.0f, kMaskedColor.g / 255.0f,
              kMaskedColor.b / 255.0f);
  const struct {
    const char* name;
    GLuint texture;
  } units[] = {{"u_weights", call.weights}, {"u_mask", mask_}, {"u_colormap", colormap_}};
  for (int unit = 0; unit < 3; ++unit) {
    glActiveTexture(GL_TEXTURE0 + static_cast<GLenum>(unit));
    glBindTexture(GL_TEXTURE_2D, units[unit].texture);
    glUniform1i(glGetUniformLocation(program_, units[unit].name), unit);
  }
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  glActiveTexture(GL_TEXTURE0);
}

}  // namespace attnscope::app
