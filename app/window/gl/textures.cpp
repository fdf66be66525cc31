// The window's textures and render targets: every glTex* and glFramebuffer* call of the app (the engine's GPU
// backend keeps its own in engine/gpu).
#include "window/gl/textures.h"

#include <epoxy/gl.h>

namespace attnscope::app::gl {

namespace {

// Fresh storage for `texture` (a single-channel `format` of `type` texels), or rows of it when `row0` >= 0. Rows
// are packed (alignment 1: an R8 row of odd width has no padding); the default alignment (4) is put back after.
void putSingleChannelTexels(unsigned texture, GLenum format, GLenum type, int row0, int cols, int rows,
                            const void* data) {
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glBindTexture(GL_TEXTURE_2D, texture);
  if (row0 < 0)
    glTexImage2D(GL_TEXTURE_2D, 0, static_cast<GLint>(format), cols, rows, 0, GL_RED, type, data);
  else
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, row0, cols, rows, GL_RED, type, data);
  glBindTexture(GL_TEXTURE_2D, 0);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
}

}  // namespace

unsigned makeNearestTexture() {
  GLuint texture = 0;
  glGenTextures(1, &texture);
  glBindTexture(GL_TEXTURE_2D, texture);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glBindTexture(GL_TEXTURE_2D, 0);
  return texture;
}

void deleteTextures(const unsigned* textures, std::size_t count) {
  glDeleteTextures(static_cast<GLsizei>(count), textures);
}

void setWeightTexels(unsigned texture, int cols, int rows, const float* values) {
  putSingleChannelTexels(texture, GL_R32F, GL_FLOAT, -1, cols, rows, values);
}

void setMaskTexels(unsigned texture, int cols, int rows, const std::uint8_t* allowed) {
  putSingleChannelTexels(texture, GL_R8, GL_UNSIGNED_BYTE, -1, cols, rows, allowed);
}

void updateWeightRows(unsigned texture, int row0, int cols, int rows, const float* values) {
  putSingleChannelTexels(texture, GL_R32F, GL_FLOAT, row0, cols, rows, values);
}

void updateMaskRows(unsigned texture, int row0, int cols, int rows, const std::uint8_t* allowed) {
  putSingleChannelTexels(texture, GL_R8, GL_UNSIGNED_BYTE, row0, cols, rows, allowed);
}

void allocateRenderTarget(RenderTarget& target, int width, int height) {
  if (!target.texture) {
    target.texture = makeNearestTexture();
    glGenFramebuffers(1, &target.framebuffer);
  }
  target.width = width, target.height = height;
  glBindTexture(GL_TEXTURE_2D, target.texture);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  glBindTexture(GL_TEXTURE_2D, 0);
}

void clearRenderTarget(const RenderTarget& target, float r, float g, float b, float a) {
  GLint previous_framebuffer = 0;
  GLfloat previous_clear[4] = {};
  glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &previous_framebuffer);
  glGetFloatv(GL_COLOR_CLEAR_VALUE, previous_clear);
  glBindFramebuffer(GL_FRAMEBUFFER, target.framebuffer);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, target.texture, 0);
  glDisable(GL_SCISSOR_TEST);
  glClearColor(r, g, b, a);
  glClear(GL_COLOR_BUFFER_BIT);
  glClearColor(previous_clear[0], previous_clear[1], previous_clear[2], previous_clear[3]);
  glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(previous_framebuffer));
}

void deleteRenderTarget(RenderTarget& target) {
  glDeleteFramebuffers(1, &target.framebuffer);
  glDeleteTextures(1, &target.texture);
  target = RenderTarget{};
}

}  // namespace attnscope::app::gl
