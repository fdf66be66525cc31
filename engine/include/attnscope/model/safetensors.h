// A safetensors file (Hugging Face's format: 8-byte little-endian header length, a JSON header, then the
// data), memory-mapped and validated before any tensor is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/types.h"

namespace attnscope::model {

enum class DType { F32, F16, BF16, F64, F8_E4M3, F8_E5M2, I8, I16, I32, I64, U8, U16, U32, U64, Bool };

const char* dtypeName(DType dtype);
std::size_t dtypeSize(DType dtype);

struct TensorInfo {
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets into the data section, [begin, end)
};

// The header alone, checked: the length fits the file, the JSON is an object, every entry (but
// "__metadata__") has a known dtype, a shape of non-negative sizes, and data_offsets [begin, end] inside the
// data section of exactly product(shape) * dtype size bytes, no two overlapping. `file_size` is the whole
// file's size, `bytes` at least its first 8 + header-length bytes. Errors are InputError("NAME: field", ...),
// NAME being `name` (the file's path). Used by SafetensorsFile and the fuzzer.
std::map<std::string, TensorInfo> parseSafetensorsHeader(const std::string& name, const unsigned char* bytes,
                                                         std::size_t available, std::size_t file_size,
                                                         std::size_t* data_start);

// A mapped, validated file. Tensors are read (and converted to float32) on request.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // throws InputError naming the path and the field
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor as float32, rows = product of all but the last dimension (a 1-D tensor is one row).
  // Throws unless its dtype is F32, F16 or BF16 and its shape is `shape` (checked, named in the message).
  Matrix readMatrix(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // The same into `dst`, the product of `shape` floats (a row-major block of full rows, e.g. a fused weight
  // matrix's topRows): the loader fills its fused matrices without a temporary and a second copy.
  void readInto(const std::string& name, const std::vector<std::int64_t>& shape, float* dst) const;
  // Rows [row0, row0 + rows) of it (rows as readMatrix counts them) into `dst`, rows x the last dimension floats:
  // one head's block of a (heads, n, d) tensor, read without the others.
  void readRowsInto(const std::string& name, const std::vector<std::int64_t>& shape, std::size_t row0,
                    std::size_t rows, float* dst) const;
  // The tensor `name`, present, of a float dtype and of `shape`; else InputError naming the file, tensor and field
  // ("PATH: tensor 'q' shape"). What every read checks first; a reader checks a file's tensors with it up front.
  const TensorInfo& checkedTensor(const std::string& name, const std::vector<std::int64_t>& shape) const;

 private:

  std::string path_;
  const unsigned char* map_ = nullptr;
  std::size_t size_ = 0;
  std::size_t data_start_ = 0;
  std::map<std::string, TensorInfo> tensors_;
};

// IEEE half and bfloat16 to float (exact: every value of both is a float).
float halfToFloat(std::uint16_t bits);
float bfloat16ToFloat(std::uint16_t bits);

std::string shapeText(const std::vector<std::int64_t>& shape);  // "[768, 2304]"

}  // namespace attnscope::model
