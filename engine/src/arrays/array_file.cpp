// Reads .npy, .npz (stored entries) and safetensors files into float32 arrays, refusing anything malformed
// with one line naming the file, the entry and what was expected.
#include "attnscope/arrays/array_file.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/model/safetensors.h"
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

// Product of the sizes, refusing one past 2^31 values (no array this program shows is that large).
std::size_t elementCount(const std::string& field, const std::vector<std::int64_t>& shape) {
  std::uint64_t count = 1;
  for (std::int64_t s : shape) {
    count *= static_cast<std::uint64_t>(s);
    if (count > (std::uint64_t{1} << 31)) throw InputError(field, "at most 2^31 values", "shape " + shapeTuple(shape));
  }
  return static_cast<std::size_t>(count);
}

void checkFinite(const std::string& field, const NamedArray& a) {
  for (std::size_t i = 0; i < a.data.size(); ++i)
    if (!std::isfinite(a.data[i]))
      throw InputError(field, "finite values", std::string(std::isnan(a.data[i]) ? "NaN" : "an infinity") +
                                                   " at flat index " + std::to_string(i) + " of shape " +
                                                   shapeTuple(a.shape));
}

// One .npy file's bytes [bytes, bytes + size) as an array; `field` names it in errors ("a.npz: w").
NamedArray parseNpy(const std::string& field, const unsigned char* bytes, std::size_t size) {
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
  const std::string descr = headerValue(field, header, "descr");
  if (headerValue(field, header, "fortran_order").find("False") == std::string::npos)
    throw InputError(field, "C order (fortran_order False; np.ascontiguousarray)", "Fortran order");
  NamedArray a;
  a.shape = parseShape(field, headerValue(field, header, "shape"));
  const std::size_t count = elementCount(field, a.shape);
  std::size_t item = 0;
  if (descr == "<f4" || descr == "=f4") item = 4;
  else if (descr == "<f8" || descr == "=f8") item = 8;
  else if (descr == "<f2" || descr == "=f2") item = 2;
  else throw InputError(field, "dtype float32, float64 or float16 (little-endian)", "dtype " + quoteFragment(descr, 40));
  const std::size_t data_start = header_start + header_length;
  const std::size_t have = size - data_start;
  if (have != count * item)
    throw InputError(field, std::to_string(count * item) + " data bytes for shape " + shapeTuple(a.shape),
                     std::to_string(have) + (have < count * item ? " (truncated)" : ""));
  const unsigned char* data = bytes + data_start;
  a.data.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (item == 4) {
      std::memcpy(&a.data[i], data + 4 * i, 4);
    } else if (item == 8) {
      double d;
      std::memcpy(&d, data + 8 * i, 8);
      a.data[i] = static_cast<float>(d);
    } else {
      a.data[i] = model::halfToFloat(static_cast<std::uint16_t>(readLittle(data + 2 * i, 2)));
    }
  }
  checkFinite(field, a);
  return a;
}

// A zip archive through its central directory (np.savez: ZIP_STORED entries, zip64 extras possible).
std::map<std::string, NamedArray> parseNpz(const std::string& path, const std::string& bytes) {
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
    if (z64 + 56 > size || std::memcmp(b + z64, "PK\x06\x06", 4) != 0)
      throw InputError(path, "a zip64 end record", "none (a damaged zip)");
    entries = readLittle(b + z64 + 32, 8);
    dir_offset = readLittle(b + z64 + 48, 8);
  }
  std::map<std::string, NamedArray> arrays;
  std::size_t at = dir_offset;
  for (std::uint64_t e = 0; e < entries; ++e) {
    if (at + 46 > size || std::memcmp(b + at, "PK\x01\x02", 4) != 0)
      throw InputError(path, "central directory entry " + std::to_string(e), "damaged or truncated bytes");
    const int method = static_cast<int>(readLittle(b + at + 10, 2));
    std::uint64_t compressed = readLittle(b + at + 20, 4), plain = readLittle(b + at + 24, 4);
    const std::size_t name_length = readLittle(b + at + 28, 2), extra_length = readLittle(b + at + 30, 2),
                      comment_length = readLittle(b + at + 32, 2);
    std::uint64_t local = readLittle(b + at + 42, 4);
    if (at + 46 + name_length + extra_length > size) throw InputError(path, "a complete central directory", "a truncated one");
    std::string name(reinterpret_cast<const char*>(b + at + 46), name_length);
    // zip64 extra (id 1): the 8-byte values of those fields that read 0xFFFFFFFF, in this order.
    for (std::size_t x = at + 46 + name_length; x + 4 <= at + 46 + name_length + extra_length;) {
      const std::uint64_t id = readLittle(b + x, 2), len = readLittle(b + x + 2, 2);
      std::size_t v = x + 4;
      if (id == 1) {
        if (plain == 0xFFFFFFFFu && v + 8 <= x + 4 + len) { plain = readLittle(b + v, 8); v += 8; }
        if (compressed == 0xFFFFFFFFu && v + 8 <= x + 4 + len) { compressed = readLittle(b + v, 8); v += 8; }
        if (local == 0xFFFFFFFFu && v + 8 <= x + 4 + len) local = readLittle(b + v, 8);
      }
      x += 4 + len;
    }
    at += 46 + name_length + extra_length + comment_length;
    const std::string field = path + ": " + quoteFragment(name, 80);
    if (method == 8)
      throw InputError(field, "a stored entry (np.savez)",
                       "a deflate-compressed one (np.savez_compressed; attnscope has no zlib: save with np.savez)");
    if (method != 0) throw InputError(field, "a stored entry (np.savez)", "compression method " + std::to_string(method));
    if (local + 30 > size || std::memcmp(b + local, "PK\x03\x04", 4) != 0)
      throw InputError(field, "a local file header", "damaged or truncated bytes");
    const std::uint64_t data = local + 30 + readLittle(b + local + 26, 2) + readLittle(b + local + 28, 2);
    if (compressed != plain) throw InputError(field, "equal stored and plain sizes", std::to_string(compressed) + " and " + std::to_string(plain));
    if (data > size || compressed > size - data) throw InputError(field, std::to_string(compressed) + " bytes of data", "a truncated file");
    if (endsWith(name, ".npy")) name.resize(name.size() - 4);
    arrays[name] = parseNpy(field, b + data, static_cast<std::size_t>(compressed));
  }
  return arrays;
}

std::map<std::string, NamedArray> readSafetensors(const std::string& path) {
  const model::SafetensorsFile file(path);
  std::map<std::string, NamedArray> arrays;
  for (const auto& [name, info] : file.tensors()) {
    NamedArray a;
    a.shape = info.shape;
    const std::string field = path + ": " + quoteFragment(name, 80);
    elementCount(field, a.shape);
    const Matrix m = file.readMatrix(name, info.shape);  // F32/F16/BF16 only; refuses others naming the tensor
    a.data.assign(m.data(), m.data() + m.size());        // row-major: C order
    checkFinite(field, a);
    arrays[name] = std::move(a);
  }
  return arrays;
}

}  // namespace

std::string shapeTuple(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::map<std::string, NamedArray> readArrays(const std::string& path) {
  if (endsWith(path, ".safetensors")) return readSafetensors(path);
  const bool npz = endsWith(path, ".npz");
  if (!npz && !endsWith(path, ".npy"))
    throw InputError(path, "a file ending in .npy, .npz or .safetensors", quoteFragment(path, 200));
  const std::string bytes = readWholeFile(path, path, kMaxArrayFileBytes);
  if (npz) return parseNpz(path, bytes);
  std::map<std::string, NamedArray> arrays;
  arrays[""] = parseNpy(path, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
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
