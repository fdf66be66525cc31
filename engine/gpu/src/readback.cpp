// Chunked, double-buffered read-back through a persistent mapping.
#include "readback.h"

#include <algorithm>
#include <cstring>

namespace attnscope::gpu {

namespace {

constexpr std::size_t kSmallRead = std::size_t{1} << 20;  // below this the synchronous read is as fast

// Waits for `fence` (flushing first, so that it is sure to signal) and deletes it.
void waitAndDelete(GLsync fence) {
  while (glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, 1000000000) == GL_TIMEOUT_EXPIRED) {
  }
  glDeleteSync(fence);
}

// dst <- src, split over the OpenMP threads: one thread copies at ~10 GB/s, less than a GPU's DMA.
void parallelCopy(char* dst, const char* src, std::size_t bytes) {
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  const long pieces = static_cast<long>((bytes + kPiece - 1) / kPiece);
#pragma omp parallel for schedule(static) if (pieces > 4)
  for (long p = 0; p < pieces; ++p) {
    const std::size_t begin = static_cast<std::size_t>(p) * kPiece;
    std::memcpy(dst + begin, src + begin, std::min(kPiece, bytes - begin));
  }
}

}  // namespace

Readback::Readback(bool staged) {
  if (!staged || !(epoxy_gl_version() >= 44 || epoxy_has_gl_extension("GL_ARB_buffer_storage"))) return;
  const GLbitfield flags = GL_MAP_READ_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT;
  glGenBuffers(1, &staging_);
  glBindBuffer(GL_COPY_WRITE_BUFFER, staging_);
  glBufferStorage(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(2 * kHalf), nullptr, flags | GL_CLIENT_STORAGE_BIT);
  mapped_ = static_cast<char*>(glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, static_cast<GLsizeiptr>(2 * kHalf), flags));
  if (!mapped_ || glGetError() != GL_NO_ERROR) {  // no staging: every read takes the synchronous path
    mapped_ = nullptr;
    glDeleteBuffers(1, &staging_);
    staging_ = 0;
  }
}

Readback::~Readback() {
  if (!staging_) return;
  glBindBuffer(GL_COPY_WRITE_BUFFER, staging_);
  glUnmapBuffer(GL_COPY_WRITE_BUFFER);
  glDeleteBuffers(1, &staging_);
}

void Readback::read(const GlBuffer& source, std::size_t offset, void* data, std::size_t bytes) {
  if (!mapped_ || bytes < kSmallRead) {
    source.download(data, bytes, offset);
    return;
  }
  glBindBuffer(GL_COPY_READ_BUFFER, source.id());
  glBindBuffer(GL_COPY_WRITE_BUFFER, staging_);
  char* out = static_cast<char*>(data);
  // Chunk c goes to half c % 2: the GPU copies chunk c + 1 while the CPU copies chunk c out.
  auto issue = [&](std::size_t chunk) {
    const std::size_t begin = chunk * kHalf, size = std::min(kHalf, bytes - begin);
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(offset + begin),
                        static_cast<GLintptr>((chunk % 2) * kHalf), static_cast<GLsizeiptr>(size));
    glMemoryBarrier(GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT);
    return glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  };
  const std::size_t chunks = (bytes + kHalf - 1) / kHalf;
  staged_chunks_ += chunks;
  GLsync fence = issue(0);
  for (std::size_t c = 0; c < chunks; ++c) {
    waitAndDelete(fence);
    if (c + 1 < chunks) fence = issue(c + 1);
    const std::size_t begin = c * kHalf;
    parallelCopy(out + begin, mapped_ + (c % 2) * kHalf, std::min(kHalf, bytes - begin));
  }
}

}  // namespace attnscope::gpu
