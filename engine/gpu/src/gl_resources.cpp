// Storage buffers, GL error checks and the state guard.
#include "gl_resources.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "attnscope/error.h"
#include "attnscope/gpu_backend.h"

namespace attnscope::gpu {

GlBuffer::~GlBuffer() {
  if (id_) glDeleteBuffers(1, &id_);
}

GlBuffer::GlBuffer(GlBuffer&& other) noexcept
    : id_(std::exchange(other.id_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

GlBuffer& GlBuffer::operator=(GlBuffer&& other) noexcept {
  if (this != &other) {
    if (id_) glDeleteBuffers(1, &id_);
    id_ = std::exchange(other.id_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void GlBuffer::ensure(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 16);
  if (id_ && bytes_ == bytes) return;
  if (!id_) glGenBuffers(1, &id_);
  glBindBuffer(GL_COPY_WRITE_BUFFER, id_);
  glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(bytes), nullptr, GL_DYNAMIC_DRAW);
  bytes_ = bytes;
  checkGl("allocating a storage buffer");
}

void GlBuffer::upload(const void* data, std::size_t bytes) {
  if (bytes_ < bytes || !id_) ensure(bytes);
  glBindBuffer(GL_COPY_WRITE_BUFFER, id_);
  glBufferSubData(GL_COPY_WRITE_BUFFER, 0, static_cast<GLsizeiptr>(bytes), data);
}

void GlBuffer::download(void* data, std::size_t bytes, std::size_t offset) const {
  glBindBuffer(GL_COPY_READ_BUFFER, id_);
  glGetBufferSubData(GL_COPY_READ_BUFFER, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(bytes), data);
}

void checkGl(const char* where) {
  const GLenum error = glGetError();
  if (error == GL_NO_ERROR) return;
  while (glGetError() != GL_NO_ERROR) {
  }
  if (error == GL_CONTEXT_LOST) throw GpuUnavailable(std::string("the OpenGL context was lost while ") + where);
  if (error == GL_OUT_OF_MEMORY)
    throw InputError("gpu memory", "allocations that fit the device", std::string("GL_OUT_OF_MEMORY while ") + where);
  char code[16];
  std::snprintf(code, sizeof code, "0x%04x", error);
  throw std::runtime_error(std::string("OpenGL error ") + code + " while " + where);
}

GlStateGuard::GlStateGuard() {
  glGetIntegerv(GL_CURRENT_PROGRAM, &program_);
  glGetIntegerv(GL_SHADER_STORAGE_BUFFER_BINDING, &storage_);
  glGetIntegerv(GL_COPY_READ_BUFFER_BINDING, &copy_read_);
  glGetIntegerv(GL_COPY_WRITE_BUFFER_BINDING, &copy_write_);
  glGetIntegerv(GL_PIXEL_UNPACK_BUFFER_BINDING, &unpack_);
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &texture_);
  glGetIntegerv(GL_UNPACK_ALIGNMENT, &unpack_alignment_);
  glGetIntegerv(GL_UNPACK_ROW_LENGTH, &unpack_row_length_);
  for (int i = 0; i < kStorageBindings; ++i)
    glGetIntegeri_v(GL_SHADER_STORAGE_BUFFER_BINDING, static_cast<GLuint>(i),
                    &storage_indexed_[static_cast<std::size_t>(i)]);
}

GlStateGuard::~GlStateGuard() {
  for (int i = 0; i < kStorageBindings; ++i)
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, static_cast<GLuint>(i),
                     static_cast<GLuint>(storage_indexed_[static_cast<std::size_t>(i)]));
  glUseProgram(static_cast<GLuint>(program_));
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, static_cast<GLuint>(storage_));
  glBindBuffer(GL_COPY_READ_BUFFER, static_cast<GLuint>(copy_read_));
  glBindBuffer(GL_COPY_WRITE_BUFFER, static_cast<GLuint>(copy_write_));
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, static_cast<GLuint>(unpack_));
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(texture_));
  glPixelStorei(GL_UNPACK_ALIGNMENT, unpack_alignment_);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, unpack_row_length_);
}

}  // namespace attnscope::gpu
