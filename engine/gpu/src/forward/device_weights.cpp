// Packing a checkpoint's tensors as stored (device_weights.h).
#include "forward/device_weights.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace attnscope::gpu {

namespace {

std::uint32_t bitsOf(float x) {
  std::uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// x as a float16 when it is one exactly (a normal half, a subnormal k 2^-24, or a zero); false otherwise.
bool exactHalf(float x, std::uint16_t& half) {
  const std::uint32_t b = bitsOf(x), sign = (b >> 16) & 0x8000u;
  if ((b & 0x7fffffffu) == 0) {
    half = static_cast<std::uint16_t>(sign);
    return true;
  }
  const int exponent = static_cast<int>((b >> 23) & 0xffu) - 127;
  if (exponent >= -14 && exponent <= 15) {  // a normal half: the low 13 bits of the mantissa must be 0
    if ((b & 0x1fffu) != 0) return false;
    half = static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(exponent + 15) << 10 | (b & 0x7fffffu) >> 13);
    return true;
  }
  const float k = std::ldexp(std::fabs(x), 24);  // a subnormal half is k 2^-24, k in 1..1023 (exact: a power of 2)
  if (k >= 1.0f && k <= 1023.0f && k == std::floor(k)) {
    half = static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(k));
    return true;
  }
  return false;
}

}  // namespace

const char* storageName(WeightStorage storage) {
  switch (storage) {
    case WeightStorage::BFloat16:
      return "bfloat16";
    case WeightStorage::Float16:
      return "float16";
    case WeightStorage::Float32:
      break;
  }
  return "float32";
}

WeightStorage storageOf(const Matrix& w) {
  const float* p = w.data();
  const long count = static_cast<long>(w.size());
  // Two passes over up to billions of values (a 2B model): every thread takes a share.
  bool bf16 = true, f16 = true;
#pragma omp parallel for reduction(&& : bf16) schedule(static)
  for (long i = 0; i < count; ++i) bf16 = bf16 && (bitsOf(p[i]) & 0xffffu) == 0;
  if (bf16) return WeightStorage::BFloat16;
#pragma omp parallel for reduction(&& : f16) schedule(static)
  for (long i = 0; i < count; ++i) {
    std::uint16_t half = 0;
    f16 = f16 && exactHalf(p[i], half);
  }
  return f16 ? WeightStorage::Float16 : WeightStorage::Float32;
}

std::size_t storedBytes(const Matrix& w, WeightStorage storage) {
  const std::size_t count = static_cast<std::size_t>(w.size());
  return storage == WeightStorage::Float32 ? count * sizeof(float) : (count + 1) / 2 * sizeof(std::uint32_t);
}

void uploadMatrix(const Matrix& w, WeightStorage storage, DeviceMatrix& out) {
  out.rows = static_cast<int>(w.rows());
  out.cols = static_cast<int>(w.cols());
  out.storage = storage;
  out.host = &w;
  if (w.size() == 0) return;
  const std::size_t bytes = storedBytes(w, storage);
  if (storage == WeightStorage::Float32) {
    out.buffer.upload(w.data(), bytes);
    return;
  }
  // Element e in the low half of word e / 2 when e is even, the high half when odd (linear.comp's weightAt); each
  // thread writes whole words.
  const long count = static_cast<long>(w.size()), words = (count + 1) / 2;
  std::vector<std::uint32_t> packed(static_cast<std::size_t>(words), 0u);
  const float* p = w.data();
  const bool bf16 = storage == WeightStorage::BFloat16;
#pragma omp parallel for schedule(static)
  for (long word = 0; word < words; ++word) {
    std::uint32_t bits = 0;
    for (long e = 2 * word; e < std::min(count, 2 * word + 2); ++e) {
      std::uint16_t half = 0;
      if (bf16) half = static_cast<std::uint16_t>(bitsOf(p[e]) >> 16);
      else exactHalf(p[e], half);
      bits |= static_cast<std::uint32_t>(half) << (16 * (e % 2));
    }
    packed[static_cast<std::size_t>(word)] = bits;
  }
  out.buffer.upload(packed.data(), bytes);
}

void uploadVector(const RowVector& v, DeviceVector& out) {
  out.size = static_cast<int>(v.size());
  out.host = &v;
  if (v.size() > 0) out.buffer.upload(v.data(), static_cast<std::size_t>(v.size()) * sizeof(float));
}

}  // namespace attnscope::gpu
