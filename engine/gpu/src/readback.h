// Reading buffers back to the CPU through a persistently mapped staging buffer: the GPU copies a chunk into
// host memory (glCopyBufferSubData, a DMA) while the CPU copies the previous chunk out, instead of
// glGetBufferSubData's synchronous path (2.7-3.7 GB/s on an H100). Needs GL 4.4 or ARB_buffer_storage; without
// it, and for small reads, glGetBufferSubData.
#pragma once

#include <epoxy/gl.h>

#include <cstddef>

#include "gl_resources.h"

namespace attnscope::gpu {

class Readback {
 public:
  explicit Readback(bool staged);  // needs the context current; staged = false: always glGetBufferSubData
  ~Readback();
  Readback(const Readback&) = delete;
  Readback& operator=(const Readback&) = delete;

  // data <- bytes of `source` from `offset`. The caller has made shader writes visible to buffer reads
  // (GL_BUFFER_UPDATE_BARRIER_BIT).
  void read(const GlBuffer& source, std::size_t offset, void* data, std::size_t bytes);
  bool staged() const { return mapped_ != nullptr; }
  std::size_t stagingBytes() const { return mapped_ ? 2 * kHalf : 0; }
  // Chunks copied through the staging buffer since construction (tests assert the staged path ran).
  std::size_t stagedChunks() const { return staged_chunks_; }

  static constexpr std::size_t kHalf = std::size_t{32} << 20;  // the staging buffer is two halves of this

 private:
  GLuint staging_ = 0;
  char* mapped_ = nullptr;  // 2 kHalf bytes, mapped for reading for the staging buffer's lifetime
  std::size_t staged_chunks_ = 0;
};

}  // namespace attnscope::gpu
