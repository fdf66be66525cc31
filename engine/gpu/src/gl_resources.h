// Small owners of GL state for the GPU backend: a storage buffer, the error check that turns GL errors into
// the engine's exceptions, and a guard that leaves the caller's bindings as it found them.
#pragma once

#include <epoxy/gl.h>

#include <array>
#include <cstddef>

namespace attnscope::gpu {

// A shader storage buffer. Storage is (re)allocated only when the size changes, so a live edit allocates nothing.
class GlBuffer {
 public:
  GlBuffer() = default;
  ~GlBuffer();
  GlBuffer(GlBuffer&& other) noexcept;
  GlBuffer& operator=(GlBuffer&& other) noexcept;
  GlBuffer(const GlBuffer&) = delete;
  GlBuffer& operator=(const GlBuffer&) = delete;

  void ensure(std::size_t bytes);  // at least 16 bytes: a zero-sized range cannot be bound
  void upload(const void* data, std::size_t bytes);
  void download(void* data, std::size_t bytes, std::size_t offset = 0) const;
  void bind(GLuint index) const { glBindBufferBase(GL_SHADER_STORAGE_BUFFER, index, id_); }
  GLuint id() const { return id_; }
  std::size_t bytes() const { return bytes_; }

 private:
  GLuint id_ = 0;
  std::size_t bytes_ = 0;
};

// Throws on a pending GL error: GL_CONTEXT_LOST -> GpuUnavailable, GL_OUT_OF_MEMORY -> InputError on
// "gpu memory", anything else -> std::runtime_error naming `where`.
void checkGl(const char* where);

// Saves the bindings the backend touches and restores them on scope exit (used on the window's context).
class GlStateGuard {
 public:
  GlStateGuard();
  ~GlStateGuard();
  GlStateGuard(const GlStateGuard&) = delete;
  GlStateGuard& operator=(const GlStateGuard&) = delete;

 private:
  static constexpr int kStorageBindings = 8;  // the backend's shaders use bindings 0..7
  GLint program_ = 0, storage_ = 0, copy_read_ = 0, copy_write_ = 0, unpack_ = 0, texture_ = 0;
  GLint unpack_alignment_ = 4, unpack_row_length_ = 0;
  std::array<GLint, kStorageBindings> storage_indexed_{};
};

}  // namespace attnscope::gpu
