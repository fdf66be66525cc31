// Heatmap textures, and the heatmap shader rendering each head's map into a texture of its on-screen size.
#include "window/heatmap_view.h"

#include "window/heatmap_draw.h"

#include <epoxy/gl.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "attnscope/export/colormap.h"
#include "attnscope/gl_program.h"
#include "heatmap_shaders.h"
#ifdef ATTNSCOPE_HAS_GPU
#include "attnscope/gpu_backend.h"
#endif

namespace attnscope::app {

namespace {

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
  program_ = gpu::buildProgram({{GL_VERTEX_SHADER, "heatmap.vert", kHeatmap_vert},
                                 {GL_FRAGMENT_SHADER, "heatmap.frag", kHeatmap_frag}},
                                "embedded");
  glGenVertexArrays(1, &vao_);  // empty: the quad comes from gl_VertexID, but core GL needs a VAO bound

  // colour map: 256 x 1 RGBA8, entry i = colorMapTable(Viridis)[i]
  std::vector<unsigned char> rgba;
  for (const Rgb8& c : colorMapTable(ColorMap::Viridis)) rgba.insert(rgba.end(), {c.r, c.g, c.b, 255});
  colormap_ = makeTexture();
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, kColorMapSize, 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  mask_ = makeTexture();
}

HeatmapRenderer::~HeatmapRenderer() {
  for (Rendered& r : rendered_) {
    glDeleteFramebuffers(1, &r.framebuffer);
    glDeleteTextures(1, &r.texture);
  }
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

void HeatmapRenderer::sync(const AppState& state) {
  const Scene& scene = state.scene();
  const int heads = scene.numHeads();
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  if (state.fullRevision() != mask_revision_) {
    mask_revision_ = state.fullRevision();
    // mask: (n_q, n_k) bytes, 255 = may attend
    MaskMatrix allowed = allowedMask(scene);
    for (Eigen::Index i = 0; i < allowed.size(); ++i) allowed.data()[i] = allowed.data()[i] ? 255 : 0;
    glBindTexture(GL_TEXTURE_2D, mask_);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R8, scene.nK(), scene.nQ(), 0, GL_RED, GL_UNSIGNED_BYTE, allowed.data());
  }
  while (static_cast<int>(head_textures_.size()) < heads) {
    head_textures_.push_back(makeTexture());
    head_revisions_.push_back(~0u);
    rendered_.emplace_back();
  }
  const bool cpu = state.backend().name() == "cpu";
  sources_.resize(static_cast<std::size_t>(heads));
  source_revisions_.resize(static_cast<std::size_t>(heads));
  for (int h = 0; h < heads; ++h) {
    const std::size_t at = static_cast<std::size_t>(h);
    if (cpu && head_revisions_[at] != state.headRevision(h)) {
      // weights: (n_q, n_k) row-major -> texture n_k wide, n_q tall, row i = query i
      const Matrix& w = state.result().heads[at].weights;
      glBindTexture(GL_TEXTURE_2D, head_textures_[at]);
      glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, static_cast<GLsizei>(w.cols()), static_cast<GLsizei>(w.rows()), 0, GL_RED,
                   GL_FLOAT, w.data());
      head_revisions_[at] = state.headRevision(h);
    }
    sources_[at] = weightsTexture(state, h);
    source_revisions_[at] = state.headRevision(h);
  }
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glBindTexture(GL_TEXTURE_2D, 0);
}

void HeatmapRenderer::draw(ImDrawList* list, int head, ImVec2 p0, ImVec2 p1, const CellView& view, float lo, float hi) {
  Rendered& r = rendered_[static_cast<std::size_t>(head)];
  const int width = std::max(1, static_cast<int>(p1.x - p0.x)), height = std::max(1, static_cast<int>(p1.y - p0.y));
  const std::size_t at = static_cast<std::size_t>(head);
  const bool same_view =
      r.view.col0 == view.col0 && r.view.row0 == view.row0 && r.view.col1 == view.col1 && r.view.row1 == view.row1;
  if (r.width != width || r.height != height || !same_view || r.lo != lo || r.hi != hi || r.source != sources_[at] ||
      r.source_revision != source_revisions_[at] || r.mask_revision != mask_revision_) {
    r.width = width, r.height = height, r.view = view, r.lo = lo, r.hi = hi;
    r.source = sources_[at], r.source_revision = source_revisions_[at], r.mask_revision = mask_revision_;
    render(r, head, view, lo, hi);
  }
  // The texture's first row is the bottom of the map (GL), so v runs from 1 at the top to 0.
  list->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(r.texture)), p0,
                 ImVec2(p0.x + static_cast<float>(width), p0.y + static_cast<float>(height)), ImVec2(0, 1),
                 ImVec2(1, 0));
}

void HeatmapRenderer::render(Rendered& target, int head, const CellView& view, float lo, float hi) {
  if (!target.texture) {
    target.texture = makeTexture();
    glGenFramebuffers(1, &target.framebuffer);
  }
  glBindTexture(GL_TEXTURE_2D, target.texture);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, target.width, target.height, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  GLint previous_framebuffer = 0, previous_viewport[4] = {};
  glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &previous_framebuffer);
  glGetIntegerv(GL_VIEWPORT, previous_viewport);
  glBindFramebuffer(GL_FRAMEBUFFER, target.framebuffer);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, target.texture, 0);
  glViewport(0, 0, target.width, target.height);
  glDisable(GL_SCISSOR_TEST);
  glDisable(GL_BLEND);

  glUseProgram(program_);
  glBindVertexArray(vao_);
  const float w = static_cast<float>(target.width), h = static_cast<float>(target.height);
  glUniform4f(glGetUniformLocation(program_, "u_rect"), 0, 0, w, h);
  glUniform2f(glGetUniformLocation(program_, "u_display"), w, h);
  glUniform4f(glGetUniformLocation(program_, "u_view"), view.col0, view.row0, view.col1, view.row1);
  glUniform2f(glGetUniformLocation(program_, "u_range"), lo, hi);
  glUniform3f(glGetUniformLocation(program_, "u_masked_color"), kMaskedColor.r / 255.0f, kMaskedColor.g / 255.0f,
              kMaskedColor.b / 255.0f);
  drawHeatmapQuad(program_, sources_[static_cast<std::size_t>(head)], mask_, colormap_, previous_framebuffer,
                  previous_viewport);
}

}  // namespace attnscope::app
