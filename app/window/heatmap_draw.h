// The last steps of drawing weights through the heatmap shader, shared by the heads' maps (heatmap_view.cpp)
// and the model grid (model/model_grid_renderer.cpp): bind the weights, mask and colour-map textures, draw the
// quad, then leave GL as ImGui's backend expects it between frames.
#pragma once

#include <epoxy/gl.h>

#include "window/heatmap_view.h"

namespace attnscope::app {

// A 2D texture sampled nearest, clamped: one texel is one cell (or pooled block), and the colour map is looked
// up by index (texelFetch). Bound on return.
inline GLuint makeNearestTexture() {
  GLuint texture = 0;
  glGenTextures(1, &texture);
  glBindTexture(GL_TEXTURE_2D, texture);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  return texture;
}

// The heatmap shader's contrast uniforms (shaders/heatmap.frag): row normalisation over the texel columns
// [row_x0, row_x1) of the weights texture (one map's columns), and the log scale. `program` is in use.
inline void setContrastUniforms(GLuint program, const MapContrast& contrast, int row_x0, int row_x1) {
  glUniform1i(glGetUniformLocation(program, "u_row_norm"), contrast.scale == ColorScale::RowMax ? 1 : 0);
  glUniform1i(glGetUniformLocation(program, "u_log"), contrast.log ? 1 : 0);
  glUniform2i(glGetUniformLocation(program, "u_row_span"), row_x0, row_x1);
}

// `program` is in use with its other uniforms set; the caller's framebuffer and viewport are restored after.
inline void drawHeatmapQuad(GLuint program, GLuint weights, GLuint mask, GLuint colormap, GLint framebuffer,
                            const GLint viewport[4]) {
  const struct {
    const char* name;
    GLuint texture;
  } units[] = {{"u_weights", weights}, {"u_mask", mask}, {"u_colormap", colormap}};
  for (int unit = 0; unit < 3; ++unit) {
    glActiveTexture(GL_TEXTURE0 + static_cast<GLenum>(unit));
    glBindTexture(GL_TEXTURE_2D, units[unit].texture);
    glUniform1i(glGetUniformLocation(program, units[unit].name), unit);
  }
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, 0);
  glBindVertexArray(0);
  glUseProgram(0);
  glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(framebuffer));
  glViewport(viewport[0], viewport[1], viewport[2], viewport[3]);
}

}  // namespace attnscope::app
