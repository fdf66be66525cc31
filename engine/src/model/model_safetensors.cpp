// The safetensors reader: the header is parsed and every entry checked (dtype, shape, offsets inside the data,
// sizes, no overlaps) before a single tensor is touched; tensors are then read from the mapping as float32.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/text_bounds.h"
#include "attnscope/model/safetensors.h"

namespace attnscope::model {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian, read in place");

namespace {

struct DTypeEntry {
  const char* name;
  DType dtype;
  std::size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {"F32", DType::F32, 4},         {"F16", DType::F16, 2},         {"BF16", DType::BF16, 2}, {"F64", DType::F64, 8},
    {"F8_E4M3", DType::F8_E4M3, 1}, {"F8_E5M2", DType::F8_E5M2, 1}, {"I8", DType::I8, 1},     {"I16", DType::I16, 2},
    {"I32", DType::I32, 4},         {"I64", DType::I64, 8},         {"U8", DType::U8, 1},     {"U16", DType::U16, 2},
    {"U32", DType::U32, 4},         {"U64", DType::U64, 8},         {"BOOL", DType::Bool, 1},
};

// Header sizes past this are refused before parsing (the format's own reference reader uses 100 MB).
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;

std::string quoted(const std::string& s) { return quoteFragment(s, 60); }

std::uint64_t asOffset(const nlohmann::json& v, const std::string& name, const std::string& field,
                       const std::string& expected) {
  if (!v.is_number_unsigned()) throw InputError(name + ": " + field, expected, describeJson(v));
  return v.get<std::uint64_t>();
}

}  // namespace

const char* dtypeName(DType dtype) {
  for (const DTypeEntry& e : kDTypes)
    if (e.dtype == dtype) return e.name;
  return "?";
}

std::size_t dtypeSize(DType dtype) {
  for (const DTypeEntry& e : kDTypes)
    if (e.dtype == dtype) return e.size;
  return 0;
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

float halfToFloat(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  std::uint32_t out;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (mantissa << 13);  // inf, nan
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);  // 127 - 15 = 112
  } else if (mantissa == 0) {
    out = sign;
  } else {  // subnormal: mantissa * 2^-24, exact in float
    const float value = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -value : value;
  }
  return std::bit_cast<float>(out);
}

float bfloat16ToFloat(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::map<std::string, TensorInfo> parseSafetensorsHeader(const std::string& name, const unsigned char* bytes,
                                                         std::size_t available, std::size_t file_size,
                                                         std::size_t* data_start) {
  if (file_size < 8 || available < 8)
    throw InputError(name + ": header length", "8 bytes at the start of the file",
                     std::to_string(file_size) + " bytes in the file");
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);
  if (header_len > file_size - 8 || header_len > available - 8)
    throw InputError(name + ": header length", "at most " + std::to_string(file_size - 8) + " (the bytes after it)",
                     std::to_string(header_len));
  if (header_len < 2 || header_len > kMaxHeaderBytes)
    throw InputError(name + ": header length", "2 to " + std::to_string(kMaxHeaderBytes) + " bytes",
                     std::to_string(header_len));
  const std::size_t start = 8 + static_cast<std::size_t>(header_len);
  const std::uint64_t data_size = file_size - start;
  const nlohmann::json header = parseJsonText(
      std::string_view(reinterpret_cast<const char*>(bytes) + 8, static_cast<std::size_t>(header_len)), name + ": header");
  if (!header.is_object()) throw InputError(name + ": header", "a JSON object", describeJson(header));

  std::map<std::string, TensorInfo> tensors;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    if (key == "__metadata__") continue;
    const std::string t = "tensor " + quoted(key);
    const nlohmann::json& entry = it.value();
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
      throw InputError(name + ": " + t, "an object with dtype, shape and data_offsets", describeJson(entry));
    TensorInfo info;
    const nlohmann::json& dtype = entry["dtype"];
    const DTypeEntry* found = nullptr;
    if (dtype.is_string())
      for (const DTypeEntry& e : kDTypes)
        if (dtype.get<std::string>() == e.name) found = &e;
    if (!found) throw InputError(name + ": " + t + " dtype", "a safetensors dtype (F32, F16, BF16, ...)", describeJson(dtype));
    info.dtype = found->dtype;
    const nlohmann::json& shape = entry["shape"];
    if (!shape.is_array() || shape.size() > 8)
      throw InputError(name + ": " + t + " shape", "a list of at most 8 sizes", describeJson(shape));
    // Elements, with overflow refused: the size must fit the file anyway.
    std::uint64_t elements = 1;
    for (const nlohmann::json& s : shape) {
      const std::uint64_t d = asOffset(s, name, t + " shape", "non-negative integer sizes");
      if (d > file_size) throw InputError(name + ": " + t + " shape", "sizes that fit the file", std::to_string(d));
      info.shape.push_back(static_cast<std::int64_t>(d));
      elements = d == 0 ? 0 : (elements > file_size / d ? file_size + 1 : elements * d);
    }
    const nlohmann::json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2)
      throw InputError(name + ": " + t + " data_offsets", "[begin, end]", describeJson(offsets));
    info.begin = asOffset(offsets[0], name, t + " data_offsets", "non-negative integer offsets");
    info.end = asOffset(offsets[1], name, t + " data_offsets", "non-negative integer offsets");
    if (info.begin > info.end || info.end > data_size)
      throw InputError(name + ": " + t + " data_offsets",
                       "0 <= begin <= end <= " + std::to_string(data_size) + " (the data section's size)",
                       "[" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "]");
    const std::uint64_t bytes_needed = elements > file_size ? file_size + 1 : elements * found->size;
    if (info.end - info.begin != bytes_needed)
      throw InputError(
          name + ": " + t + " data_offsets",
          std::to_string(bytes_needed) + " bytes (shape " + shapeText(info.shape) + " of " + found->name + ")",
          std::to_string(info.end - info.begin) + " bytes");
    tensors.emplace(key, std::move(info));
  }
  // No two tensors may share a byte.
  std::vector<std::pair<const std::string*, const TensorInfo*>> order;
  for (const auto& [key, info] : tensors)
    if (info.end > info.begin) order.emplace_back(&key, &info);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second->begin < b.second->begin; });
  for (std::size_t i = 1; i < order.size(); ++i)
    if (order[i].second->begin < order[i - 1].second->end)
      throw InputError(
          name + ": tensor " + quoted(*order[i].first) + " data_offsets", "bytes not shared with another tensor",
          "an overlap with " + quoted(*order[i - 1].first) + " at byte " + std::to_string(order[i].second->begin));
  if (data_start) *data_start = start;
  return tensors;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, "a readable safetensors file", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path, "a regular file", "something else");
  }
  noteInputFile(fd, path);
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ < 8) {
    ::close(fd);
    throw InputError(path + ": header length", "8 bytes at the start of the file", std::to_string(size_) + " bytes");
  }
  void* map = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw InputError(path, "a file that can be mapped", std::strerror(errno));
  map_ = static_cast<const unsigned char*>(map);
  try {
    tensors_ = parseSafetensorsHeader(path, map_, size_, size_, &data_start_);
  } catch (...) {
    ::munmap(const_cast<unsigned char*>(map_), size_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<unsigned char*>(map_), size_);
}

const TensorInfo& SafetensorsFile::checkedTensor(const std::string& name, const std::vector<std::int64_t>& shape) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw InputError(path_ + ": tensor '" + name + "'", "present", "missing");
  const TensorInfo& info = it->second;
  const std::string field = path_ + ": tensor '" + name + "'";
  if (info.dtype != DType::F32 && info.dtype != DType::F16 && info.dtype != DType::BF16)
    throw InputError(field + " dtype", "F32, F16 or BF16", dtypeName(info.dtype));
  if (info.shape != shape) throw InputError(field + " shape", shapeText(shape), shapeText(info.shape));
  return info;
}

Matrix SafetensorsFile::readMatrix(const std::string& name, const std::vector<std::int64_t>& shape) const {
  (void)checkedTensor(name, shape);  // before allocating
  const long cols = shape.empty() ? 1 : static_cast<long>(shape.back());
  long rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= static_cast<long>(shape[i]);
  Matrix m(rows, cols);  // (product of leading dims, last dim)
  readInto(name, shape, m.data());
  return m;
}

void SafetensorsFile::readInto(const std::string& name, const std::vector<std::int64_t>& shape, float* dst) const {
  std::size_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= static_cast<std::size_t>(shape[i]);
  readRowsInto(name, shape, 0, rows, dst);
}

void SafetensorsFile::readRowsInto(const std::string& name, const std::vector<std::int64_t>& shape, std::size_t row0,
                                   std::size_t rows, float* dst) const {
  const TensorInfo& info = checkedTensor(name, shape);
  const std::string field = path_ + ": tensor '" + name + "'";
  const long cols = shape.empty() ? 1 : static_cast<long>(shape.back());
  std::size_t all_rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) all_rows *= static_cast<std::size_t>(shape[i]);
  if (row0 > all_rows || rows > all_rows - row0)
    throw InputError(field, "rows within its " + std::to_string(all_rows), std::to_string(row0) + " + " + std::to_string(rows));
  const std::size_t count = rows * static_cast<std::size_t>(cols);
  const unsigned char* src = map_ + data_start_ + info.begin + row0 * static_cast<std::size_t>(cols) * dtypeSize(info.dtype);
  const Eigen::Map<const RowVector> m(dst, static_cast<Eigen::Index>(count));  // for the finiteness check
  if (info.dtype == DType::F32) {
    std::memcpy(dst, src, count * 4);  // unaligned in the file: copied, not cast
  } else if (info.dtype == DType::BF16) {  // its own loop: a shift the compiler vectorises
#ifdef _OPENMP  // the fuzz targets build without OpenMP
#pragma omp parallel for schedule(static)
#endif
    for (std::size_t i = 0; i < count; ++i) {
      std::uint16_t bits;
      std::memcpy(&bits, src + 2 * i, 2);
      dst[i] = bfloat16ToFloat(bits);
    }
  } else {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (std::size_t i = 0; i < count; ++i) {
      std::uint16_t bits;
      std::memcpy(&bits, src + 2 * i, 2);
      dst[i] = halfToFloat(bits);
    }
  }
  // NaN or inf in a weight (a corrupt file, F16 overflow when it was saved) would run to maps of NaN: refused
  // here, where the file and tensor are known. x * 0 is NaN only for a non-finite x; the loop only names it.
  if (std::isnan((m.array() * 0.0f).sum()))
    for (Eigen::Index i = 0; i < m.size(); ++i)
      if (!std::isfinite(m.data()[i])) {
        const Eigen::Index r = i / cols + static_cast<Eigen::Index>(row0), c = i % cols;  // row-major
        const std::string at = shape.size() < 2 ? "[" + std::to_string(c) + "]"
                                                : "[" + std::to_string(r) + "][" + std::to_string(c) + "]";
        throw InputError(field, std::string("finite ") + dtypeName(info.dtype) + " weights",
                         (std::isnan(m.data()[i]) ? "nan" : m.data()[i] > 0 ? "inf" : "-inf") + std::string(" at ") + at);
      }
}

}  // namespace attnscope::model
