// The heatmap shader's GL: building it, its colour-map texture, and one draw into a render target.
#include "window/gl/heatmap_program.h"

#include <epoxy/gl.h>

#include <vector>

#include "attnscope/export/colormap.h"
#include "attnscope/gl_program.h"
#include "heatmap_shaders.h"

namespace attnscope::app::gl {

HeatmapProgram::HeatmapProgram() {
  program_ = gpu::buildProgram(
      {{GL_VERTEX_SHADER, "heatmap.vert", kHeatmap_vert}, {GL_FRAGMENT_SHADER, "heatmap.frag", kHeatmap_frag}},
      "embedded");
  // Uniform locations once (a lookup by name per draw was nine string searches a map a frame); the samplers'
  // units never change, so they are set here once too.
  u_rect_ = glGetUniformLocation(program_, "u_rect");
  u_display_ = glGetUniformLocation(program_, "u_display");
  u_view_ = glGetUniformLocation(program_, "u_view");
  u_range_ = glGetUniformLocation(program_, "u_range");
  u_masked_color_ = glGetUniformLocation(program_, "u_masked_color");
  u_row_norm_ = glGetUniformLocation(program_, "u_row_norm");
  u_log_ = glGetUniformLocation(program_, "u_log");
  u_row_span_ = glGetUniformLocation(program_, "u_row_span");
  glUseProgram(program_);
  glUniform1i(glGetUniformLocation(program_, "u_weights"), 0);
  glUniform1i(glGetUniformLocation(program_, "u_mask"), 1);
  glUniform1i(glGetUniformLocation(program_, "u_colormap"), 2);
  glUseProgram(0);
  glGenVertexArrays(1, &vao_);  // empty: the quad comes from gl_VertexID, but core GL needs a VAO bound

  // colour map: 256 x 1 RGBA8, entry i = colorMapTable(Viridis)[i]
  std::vector<unsigned char> rgba;
  for (const Rgb8& c : colorMapTable(ColorMap::Viridis)) rgba.insert(rgba.end(), {c.r, c.g, c.b, 255});
  colormap_ = makeNearestTexture();
  glBindTexture(GL_TEXTURE_2D, colormap_);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, kColorMapSize, 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  glBindTexture(GL_TEXTURE_2D, 0);
}

HeatmapProgram::~HeatmapProgram() {
  glDeleteTextures(1, &colormap_);
  glDeleteVertexArrays(1, &vao_);
  glDeleteProgram(program_);
}

void HeatmapProgram::draw(const RenderTarget& target, int x, int y, int width, int height,
                          const HeatmapCells& cells) const {
  GLint previous_framebuffer = 0, previous_viewport[4] = {};
  glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &previous_framebuffer);
  glGetIntegerv(GL_VIEWPORT, previous_viewport);
  glBindFramebuffer(GL_FRAMEBUFFER, target.framebuffer);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, target.texture, 0);
  glViewport(x, y, width, height);
  glDisable(GL_SCISSOR_TEST);
  glDisable(GL_BLEND);

  glUseProgram(program_);
  glBindVertexArray(vao_);
  const float w = static_cast<float>(width), h = static_cast<float>(height);
  const CellView& view = cells.view;
  glUniform4f(u_rect_, 0, 0, w, h);
  glUniform2f(u_display_, w, h);
  glUniform4f(u_view_, view.col0, view.row0, view.col1, view.row1);
  glUniform2f(u_range_, cells.lo, cells.hi);
  glUniform3f(u_masked_color_, kMaskedColor.r / 255.0f, kMaskedColor.g / 255.0f, kMaskedColor.b / 255.0f);
  // The contrast (shaders/heatmap.frag): row normalisation over the texel columns [row_x0, row_x1), the log scale.
  glUniform1i(u_row_norm_, cells.contrast.scale == ColorScale::RowMax ? 1 : 0);
  glUniform1i(u_log_, cells.contrast.log ? 1 : 0);
  glUniform2i(u_row_span_, cells.row_x0, cells.row_x1);

  const GLuint units[] = {cells.weights, cells.mask, colormap_};  // units 0, 1, 2: u_weights, u_mask, u_colormap
  for (int unit = 0; unit < 3; ++unit) {
    glActiveTexture(GL_TEXTURE0 + static_cast<GLenum>(unit));
    glBindTexture(GL_TEXTURE_2D, units[unit]);
  }
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, 0);
  glBindVertexArray(0);
  glUseProgram(0);
  glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(previous_framebuffer));
  glViewport(previous_viewport[0], previous_viewport[1], previous_viewport[2], previous_viewport[3]);
}

}  // namespace attnscope::app::gl
