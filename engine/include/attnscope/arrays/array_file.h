// Float arrays saved by NumPy or PyTorch users: a .npy file, a .npz archive of .npy entries (np.savez), or a
// safetensors file, read whole into float32 in C order. What `attnscope view` and `import` read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnscope::arrays {

struct NamedArray {
  std::vector<std::int64_t> shape;  // as saved; () for a scalar
  std::vector<float> data;          // product(shape) values, C order (the last index fastest)
  std::size_t size() const { return data.size(); }
};

// Every array of `path`, by name: a .npy file holds one, named "" ; a .npz archive's entries are named without
// ".npy"; a safetensors file's tensors by their names. Kind from the extension (.npy, .npz, .safetensors).
// Accepted dtypes: little-endian float32, float64, float16 (npy/npz), F32/F16/BF16 (safetensors). Refused,
// each with one InputError naming the file and the entry: another dtype, Fortran order, a compressed .npz entry
// (np.savez_compressed; zlib is not a dependency), a truncated or non-zip file, a NaN or an infinity.
std::map<std::string, NamedArray> readArrays(const std::string& path);

// "(2, 3, 4)": shapes in messages, as NumPy prints them.
std::string shapeTuple(const std::vector<std::int64_t>& shape);

// The bytes of a .npy file (version 1.0, '<f4') holding `data` with `shape`: for tests and the exporters' kin.
std::string npyBytes(const std::vector<std::int64_t>& shape, const std::vector<float>& data);

}  // namespace attnscope::arrays
