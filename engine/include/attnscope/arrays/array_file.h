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
  std::string dtype;                // as saved, in NumPy's words: "float32", "float16", "bfloat16", "int64", ...
  std::vector<float> data;          // product(shape) values, C order (the last index fastest); empty if unreadable
  std::string unreadable;           // why the values were not read: "expected a float array ..., got int64"
  std::size_t size() const { return data.size(); }
};

// Every array of `path`, by name: a .npy file holds one, named "" ; a .npz archive's entries are named without
// ".npy"; a safetensors file's tensors by their names. Kind from the extension (.npy, .npz, .safetensors).
// Float arrays (little-endian float32, float64, float16; safetensors F32, F16, BF16) are read into `data`; any
// other dtype (int64 input_ids beside the weights, say) is listed with its shape and `unreadable` says why: only
// an array that is used is refused for it (usableValues), and for a NaN or an infinity.
// Refused for the whole file, each with one InputError naming the file (and the entry): a shape with a negative
// size or one past kMaxArraySide, more than kMaxArrayValues values, a shape whose bytes are not the data present
// (each product computed with overflow checks, before anything is allocated), Fortran order, a compressed .npz
// entry (np.savez_compressed; zlib is not a dependency), a truncated or non-zip file, and more than the memory
// budget (`budget` bytes, 0: defaultMemoryBudget()) for the file and its values.
std::map<std::string, NamedArray> readArrays(const std::string& path, std::size_t budget = 0);
// The same from the file's bytes (the fuzz target's way in); the kind from `path`'s extension, .npy otherwise.
std::map<std::string, NamedArray> arraysFromBytes(const std::string& path, const std::string& bytes, std::size_t budget = 0);

// Limits on a stored shape: no array this program shows or imports is larger, and within them every size and
// count fits an int (layers x heads, n, a scene's rows) and every byte count a size_t.
constexpr std::int64_t kMaxArraySide = 2147483647;      // each size: 2^31 - 1
constexpr std::uint64_t kMaxArrayValues = 2147483647;   // their product: 2^31 - 1
// product(shape), refused past kMaxArrayValues (with overflow checks): InputError(field, ..., "shape (..)").
std::size_t elementCount(const std::string& field, const std::vector<std::int64_t>& shape);

// The values of an array that is used, checked: InputError(field, ...) for an unreadable one (its dtype, and
// why) or one holding a NaN or an infinity (the flat index and the shape).
const std::vector<float>& usableValues(const std::string& field, const NamedArray& a);

// "attn float32 (2, 4, 4), input_ids int64 (1, 4)": a file's arrays in messages and the Open form.
std::string arrayListing(const std::map<std::string, NamedArray>& arrays);
std::string arrayLabel(const std::string& name, const NamedArray& a);  // one of them ("(the .npy array)" for "")

// "(2, 3, 4)": shapes in messages, as NumPy prints them.
std::string shapeTuple(const std::vector<std::int64_t>& shape);

// The bytes of a .npy file (version 1.0, '<f4') holding `data` with `shape`: for tests and the exporters' kin.
std::string npyBytes(const std::vector<std::int64_t>& shape, const std::vector<float>& data);

}  // namespace attnscope::arrays
