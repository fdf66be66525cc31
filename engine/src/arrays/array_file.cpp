// Reads .npy, .npz (stored entries) and safetensors files into float32 arrays, refusing anything malformed
// with one line naming the file, the entry and what was expected.
#include "attnscope/arrays/array_file.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/model/safetensors.h"
#include "attnscope/scene/scene.h"
#include "attnscope/text_bounds.h"

namespace attnscope::arrays {

namespace {

// An array file is read whole; past this it is refused before reading (4 GiB of float32 is 1G values).
constexpr std::size_t kMaxArrayFileBytes = std::size_t{4} << 30;

bool endsWith(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

std::uint64_t readLittle(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The value after `'key':` in a .npy header dict ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }").
std::string headerValue(const std::string& field, const std::string& header, const std::string& key) {
  const std::size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) throw InputError(field, "a .npy header with '" + key + "'", quoteFragment(header, 120));
  std::size_t start = header.find(':', at);
  if (start == std::string::npos) throw InputError(field, "a .npy header with '" + key + "': value", quoteFragment(header, 120));
  ++start;
  while (start < header.size() && header[start] == ' ') ++start;
  if (start < header.size() && header[start] == '(') return header.substr(start, header.find(')', start) - start + 1);
  if (start < header.size() && header[start] == '\'')
    return header.substr(start + 1, header.find('\'', start + 1) - start - 1);
  const std::size_t end = header.find_first_of(",}", start);
  return header.substr(start, end - start);
}

std::vector<std::int64_t> parseShape(const std::string& field, const std::string& tuple) {
  std::vector<std::int64_t> shape;
  std::size_t i = 1;  // past '('
  while (i < tuple.size()) {
    while (i < tuple.size() && (tuple[i] == ' ' || tuple[i] == ',')) ++i;
    if (i >= tuple.size() || tuple[i] == ')') break;
    std::size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(tuple.substr(i), &used);
    } catch (const std::exception&) {
      throw InputError(field, "a shape of non-negative integers", quoteFragment(tuple, 80));
    }
    if (value < 0 || used == 0) throw InputError(field, "a shape of non-negative integers", quoteFragment(tuple, 80));
    shape.push_back(value);
    i += used;
  }
  return shape;
}

// A stored dtype in NumPy's words, with its item size (0: not known here) and, when its values cannot be read
// as float32, why.
struct StoredType {
  std::string name;
  std::size_t item = 0;
  std::string unreadable;
};

// A .npy descr ('<f4', '>i8', '|b1', '<U10', 'O', ...).
StoredType npyType(const std::string& descr) {
  StoredType t;
  const char order = descr.empty() ? '?' : descr[0];
  const bool has_order = order == '<' || order == '>' || order == '=' || order == '|';
  const std::string body = has_order ? descr.substr(1) : descr;
  const char kind = body.empty() ? '?' : body[0];
  std::size_t digits = 0;
  for (std::size_t i = 1; i < body.size() && body[i] >= '0' && body[i] <= '9' && i < 8; ++i)
    digits = digits * 10 + static_cast<std::size_t>(body[i] - '0');
  const bool sized = body.size() > 1 && body.find_first_not_of("0123456789", 1) == std::string::npos && digits > 0;
  const char* kinds[][2] = {{"f", "float"}, {"i", "int"}, {"u", "uint"}, {"c", "complex"}, {"b", "bool"}};
  for (const auto& [k, word] : kinds)
    if (sized && kind == k[0]) {
      t.name = kind == 'b' ? std::string("bool") : word + std::to_string(8 * digits);
      t.item = digits;
    }
  if (t.name.empty()) t.name = "dtype " + quoteFragment(descr, 20);
  const bool little = order == '<' || order == '=' || (order == '|' && t.item == 1);
  if (kind != 'f' || !(t.item == 2 || t.item == 4 || t.item == 8) || !sized)
    t.unreadable = "expected a float array (float32, float64 or float16), got " + t.name;
  else if (!little)
    t.unreadable = "expected a little-endian float array (arr.astype('<f4')), got big-endian " + t.name;
  return t;
}

// A safetensors dtype: F32, F16, BF16 and F64 are read, the rest listed.
StoredType safetensorsType(model::DType dtype) {
  static const std::map<model::DType, std::string> names = {
      {model::DType::F32, "float32"}, {model::DType::F16, "float16"}, {model::DType::BF16, "bfloat16"},
      {model::DType::F64, "float64"}, {model::DType::I8, "int8"},     {model::DType::I16, "int16"},
      {model::DType::I32, "int32"},   {model::DType::I64, "int64"},   {model::DType::U8, "uint8"},
      {model::DType::U16, "uint16"},  {model::DType::U32, "uint32"},  {model::DType::U64, "uint64"},
      {model::DType::Bool, "bool"}};
  StoredType t;
  const auto it = names.find(dtype);
  t.name = it != names.end() ? it->second : model::dtypeName(dtype);
  t.item = model::dtypeSize(dtype);
  if (dtype != model::DType::F32 && dtype != model::DType::F16 && dtype != model::DType::BF16 &&
      dtype != model::DType::F64)
    t.unreadable = "expected a float tensor (F32, F16, BF16 or F64), got " + t.name + " (" + model::dtypeName(dtype) + ")";
  return t;
}

// One array found in the file and checked, its values not yet converted.
struct Found {
  std::string name, field;
  NamedArray array;  // shape, dtype, unreadable
  StoredType type;
  bool bfloat16 = false;
  const unsigned char* data = nullptr;  // count * type.item bytes when readable
  std::size_t count = 0;
};

// The stored bytes for `count` values of `type`, against the `have` bytes present: before any allocation.
void checkDataBytes(const Found& f, std::size_t have) {
  std::size_t need = 0;
  if (__builtin_mul_overflow(f.count, f.type.item, &need))  // count < 2^31 and item < 10^7: never, but checked
    throw InputError(f.field, "a data size that fits 64 bits", "shape " + shapeTuple(f.array.shape) + " of " + f.type.name);
  if (need != have)
    throw InputError(f.field, std::to_string(need) + " data bytes for shape " + shapeTuple(f.array.shape),
                     std::to_string(have) + (have < need ? " (truncated)" : ""));
}

// One .npy file's bytes [bytes, bytes + size), header checked, values not read; `field` names it ("a.npz: w").
Found parseNpy(const std::string& field, const unsigned char* bytes, std::size_t size) {
  if (size < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0)
    throw InputError(field, "a .npy array (magic \\x93NUMPY)", size < 10 ? std::to_string(size) + " bytes" : "other bytes");
  const int major = bytes[6];
  if (major < 1 || major > 3) throw InputError(field, ".npy format version 1, 2 or 3", std::to_string(major));
  const int length_bytes = major == 1 ? 2 : 4;
  const std::size_t header_start = 8 + static_cast<std::size_t>(length_bytes);
  if (size < header_start) throw InputError(field, "a complete .npy header", "a truncated file");
  const std::uint64_t header_length = readLittle(bytes + 8, length_bytes);
  if (header_length > size - header_start)
    throw InputError(field, "a header of " + std::to_string(header_length) + " bytes", "a truncated file");
  const std::string header(reinterpret_cast<const char*>(bytes + header_start), header_length);
  Found f;
  f.field = field;
  f.array.shape = parseShape(field, headerValue(field, header, "shape"));
  f.count = elementCount(field, f.array.shape);
  f.type = npyType(headerValue(field, header, "descr"));
  f.array.dtype = f.type.name;
  f.array.unreadable = f.type.unreadable;
  if (headerValue(field, header, "fortran_order").find("False") == std::string::npos && f.array.unreadable.empty())
    f.array.unreadable = "expected C order (np.ascontiguousarray before saving), got Fortran order";
  const std::size_t data_start = header_start + header_length;
  if (f.type.item > 0) checkDataBytes(f, size - data_start);  // a non-float array's bytes are checked too
  f.data = bytes + data_start;
  return f;
}

// A zip archive through its central directory (np.savez: ZIP_STORED entries, zip64 extras possible).
std::vector<Found> parseNpz(const std::string& path, const std::string& bytes) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  // The end-of-central-directory record: the last "PK\5\6" within 22 + 65535 bytes of the end.
  std::size_t eocd = std::string::npos;
  for (std::size_t i = size >= 22 ? size - 22 + 1 : 0; i-- > 0 && size - i <= 22 + 65535;)
    if (std::memcmp(b + i, "PK\x05\x06", 4) == 0) { eocd = i; break; }
  if (eocd == std::string::npos)
    throw InputError(path, "a zip archive (.npz, as np.savez writes)", size >= 4 && std::memcmp(b, "PK", 2) == 0
                                                                          ? "a truncated zip (no end record)"
                                                                          : "no zip end record (not a zip)");
  std::uint64_t entries = readLittle(b + eocd + 10, 2);
  std::uint64_t dir_offset = readLittle(b + eocd + 16, 4);
  if (dir_offset == 0xFFFFFFFFu || entries == 0xFFFFu) {  // zip64: the zip64 end record's locator precedes
    if (eocd < 20 || std::memcmp(b + eocd - 20, "PK\x06\x07", 4) != 0)
      throw InputError(path, "a zip64 end locator", "none (a damaged zip)");
    const std::uint64_t z64 = readLittle(b + eocd - 20 + 8, 8);
    if (z64 > size || size - z64 < 56 || std::memcmp(b + z64, "PK\x06\x06", 4) != 0)
      throw InputError(path, "a zip64 end record", "none (a damaged zip)");
    entries = readLittle(b + z64 + 32, 8);
    dir_offset = readLittle(b + z64 + 48, 8);
  }
  // Each entry takes at least 46 bytes of directory: a count past that is a damaged file, not a reservation.
  if (entries > size / 46) throw InputError(path, "at most " + std::to_string(size / 46) + " zip entries", std::to_string(entries));
  std::vector<Found> found;
  std::uint64_t at = dir_offset;
  for (std::uint64_t e = 0; e < entries; ++e) {
    if (at > size || size - at < 46 || std::memcmp(b + at, "PK\x01\x02", 4) != 0)
      throw InputError(path, "central directory entry " + std::to_string(e), "damaged or truncated bytes");
    const int method = static_cast<int>(readLittle(b + at + 10, 2));
    std::uint64_t compressed = readLittle(b + at + 20, 4), plain = readLittle(b + at + 24, 4);
    const std::size_t name_length = readLittle(b + at + 28, 2), extra_length = readLittle(b + at + 30, 2),
                      comment_length = readLittle(b + at + 32, 2);
    std::uint64_t local = readLittle(b + at + 42, 4);
    if (size - at - 46 < name_length + extra_length) throw InputError(path, "a complete central directory", "a truncated one");
    std::string name(reinterpret_cast<const char*>(b + at + 46), name_length);
    // zip64 extra (id 1): the 8-byte values of those fields that read 0xFFFFFFFF, in this order.
    for (std::size_t x = at + 46 + name_length; x + 4 <= at + 46 + name_length + extra_length;) {
      const std::uint64_t id = readLittle(b + x, 2), len = readLittle(b + x + 2, 2);
      std::size_t v = x + 4;
      if (id == 1) {
        if (plain == 0xFFFFFFFFu && v + 8 <= x + 4 + len && v + 8 <= size) { plain = readLittle(b + v, 8); v += 8; }
        if (compressed == 0xFFFFFFFFu && v + 8 <= x + 4 + len && v + 8 <= size) { compressed = readLittle(b + v, 8); v += 8; }
        if (local == 0xFFFFFFFFu && v + 8 <= x + 4 + len && v + 8 <= size) local = readLittle(b + v, 8);
      }
      x += 4 + len;
    }
    at += 46 + name_length + extra_length + comment_length;
    const std::string field = path + ": " + quoteFragment(name, 80);
    if (method == 8)
      throw InputError(field, "a stored entry (np.savez)",
                       "a deflate-compressed one (np.savez_compressed; attnscope has no zlib: save with np.savez)");
    if (method != 0) throw InputError(field, "a stored entry (np.savez)", "compression method " + std::to_string(method));
    if (local > size || size - local < 30 || std::memcmp(b + local, "PK\x03\x04", 4) != 0)
      throw InputError(field, "a local file header", "damaged or truncated bytes");
    const std::uint64_t data = local + 30 + readLittle(b + local + 26, 2) + readLittle(b + local + 28, 2);
    if (compressed != plain) throw InputError(field, "equal stored and plain sizes", std::to_string(compressed) + " and " + std::to_string(plain));
    if (data > size || compressed > size - data) throw InputError(field, std::to_string(compressed) + " bytes of data", "a truncated file");
    if (endsWith(name, ".npy")) name.resize(name.size() - 4);
    Found f = parseNpy(field, b + data, static_cast<std::size_t>(compressed));
    f.name = name;
    found.push_back(std::move(f));
  }
  return found;
}

std::vector<Found> parseSafetensors(const std::string& path, const std::string& bytes) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t data_start = 0;
  // The header parser checks every entry's offsets and byte count against its shape and the file.
  const std::map<std::string, model::TensorInfo> tensors =
      model::parseSafetensorsHeader(path, b, bytes.size(), bytes.size(), &data_start);
  std::vector<Found> found;
  for (const auto& [name, info] : tensors) {
    Found f;
    f.name = name;
    f.field = path + ": " + quoteFragment(name, 80);
    f.array.shape = info.shape;
    f.count = elementCount(f.field, info.shape);
    f.type = safetensorsType(info.dtype);
    f.bfloat16 = info.dtype == model::DType::BF16;
    f.array.dtype = f.type.name;
    f.array.unreadable = f.type.unreadable;
    checkDataBytes(f, static_cast<std::size_t>(info.end - info.begin));
    f.data = b + data_start + info.begin;
    found.push_back(std::move(f));
  }
  return found;
}

// The values of a readable array as float32, C order.
void convert(Found& f) {
  std::vector<float>& out = f.array.data;
  out.resize(f.count);
  for (std::size_t i = 0; i < f.count; ++i) {
    if (f.type.item == 4) {
      std::memcpy(&out[i], f.data + 4 * i, 4);
    } else if (f.type.item == 8) {
      double d;
      std::memcpy(&d, f.data + 8 * i, 8);
      out[i] = static_cast<float>(d);
    } else {
      const auto bits = static_cast<std::uint16_t>(readLittle(f.data + 2 * i, 2));
      out[i] = f.bfloat16 ? model::bfloat16ToFloat(bits) : model::halfToFloat(bits);
    }
  }
}

}  // namespace

std::string shapeTuple(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::size_t elementCount(const std::string& field, const std::vector<std::int64_t>& shape) {
  std::uint64_t count = 1;
  for (std::int64_t s : shape) {
    if (s < 0 || s > kMaxArraySide)
      throw InputError(field, "sizes from 0 to " + std::to_string(kMaxArraySide) + " each", "shape " + shapeTuple(shape));
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(s), &count) || count > kMaxArrayValues)
      throw InputError(field, "at most " + std::to_string(kMaxArrayValues) + " values (2^31 - 1)",
                       "shape " + shapeTuple(shape));
  }
  return static_cast<std::size_t>(count);
}

const std::vector<float>& usableValues(const std::string& field, const NamedArray& a) {
  if (!a.unreadable.empty()) throw InputError(field, a.unreadable + " of shape " + shapeTuple(a.shape));
  for (std::size_t i = 0; i < a.data.size(); ++i)
    if (!std::isfinite(a.data[i]))
      throw InputError(field, "finite values", std::string(std::isnan(a.data[i]) ? "NaN" : "an infinity") +
                                                   " at flat index " + std::to_string(i) + " of shape " +
                                                   shapeTuple(a.shape));
  return a.data;
}

std::string arrayLabel(const std::string& name, const NamedArray& a) {
  return (name.empty() ? std::string("(the .npy array)") : quoteFragment(name, 60)) + " " + a.dtype + " " +
         shapeTuple(a.shape);
}

std::string arrayListing(const std::map<std::string, NamedArray>& arrays) {
  std::string text;
  std::size_t listed = 0;
  for (const auto& [name, a] : arrays) {
    if (++listed > 20) return text + ", and " + std::to_string(arrays.size() - 20) + " more";
    text += (text.empty() ? "" : ", ") + arrayLabel(name, a);
  }
  return text.empty() ? "no arrays" : text;
}

std::map<std::string, NamedArray> readArrays(const std::string& path, std::size_t budget) {
  if (!endsWith(path, ".npz") && !endsWith(path, ".safetensors") && !endsWith(path, ".npy"))
    throw InputError(path, "a file ending in .npy, .npz or .safetensors", quoteFragment(path, 200));
  return arraysFromBytes(path, readWholeFile(path, path, kMaxArrayFileBytes), budget);
}

std::map<std::string, NamedArray> arraysFromBytes(const std::string& path, const std::string& bytes, std::size_t budget) {
  const bool npz = endsWith(path, ".npz"), safetensors = endsWith(path, ".safetensors");
  std::vector<Found> found;
  if (npz) {
    found = parseNpz(path, bytes);
  } else if (safetensors) {
    found = parseSafetensors(path, bytes);
  } else {
    found.push_back(parseNpy(path, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()));
  }
  // What reading holds at its peak: the file's bytes and every readable array's floats (each count checked
  // against the bytes present, so the sum is at most 4 x the file's size).
  std::size_t held = bytes.size();
  for (const Found& f : found)
    if (f.array.unreadable.empty()) held += f.count * sizeof(float);
  checkMemoryBudget(path, "arrays read whole", held, budget);
  std::map<std::string, NamedArray> arrays;
  for (Found& f : found) {
    if (f.array.unreadable.empty()) convert(f);
    if (!arrays.emplace(f.name, std::move(f.array)).second)
      throw InputError(f.field, "one entry of each name", "a second entry " + quoteFragment(f.name, 80));
  }
  return arrays;
}

std::string npyBytes(const std::vector<std::int64_t>& shape, const std::vector<float>& data) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shapeTuple(shape) + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  return out;
}

}  // namespace attnscope::arrays
