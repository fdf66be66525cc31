// NPY export (format version 1.0, little-endian float32, C order), readable by numpy.load: all heads
// (h, n_q, n_k), one head (n_q, n_k), or the similarity matrix (h, h).
#include <bit>
#include <string>
#include <vector>

#include "export/export_formats.h"

namespace attnscope {

namespace {

static_assert(std::endian::native == std::endian::little, "NPY '<f4' is written straight from memory");

void writeFloats(const float* data, long count, const ByteSink& sink) {
  sink(std::string_view(reinterpret_cast<const char*>(data), static_cast<std::size_t>(count) * sizeof(float)));
}

void writeFloats(const Matrix& m, const ByteSink& sink) { writeFloats(m.data(), m.size(), sink); }  // row-major: C order

}  // namespace

// Magic, version 1.0, header length (uint16 LE), then the header dict padded with spaces and ended by '\n' so
// that the data starts at a multiple of 64 bytes (as numpy writes it).
std::string npyHeader(const std::vector<long>& shape) {
  std::string dims;
  for (long d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.resize(dims.size() - 2);
  else
    dims.pop_back();  // (n,) keeps its comma
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict;
}

void writeNpy(const Scene& scene, const Result& result, const ExportRequest& request, const ByteSink& sink) {
  const long h = scene.numHeads();
  switch (request.what) {
    case ExportWhat::Head: {
      const ExportWindow window = exportWindow(scene, request);
      sink(npyHeader({window.rows(), window.cols()}));
      forEachWeightRow(scene, result, request.head, window, [&](int, const float* w) { writeFloats(w, window.cols(), sink); });
      break;
    }
    case ExportWhat::Heads:
    case ExportWhat::Diff:  // exportBytes passes the deltas as the weights
      sink(npyHeader({h, scene.nQ(), scene.nK()}));
      for (int a = 0; a < h; ++a)  // a row at a time: no copy of a kept map, no whole map of a long one
        forEachWeightRow(scene, result, a, exportWindow(scene, {}), [&](int, const float* w) { writeFloats(w, scene.nK(), sink); });
      break;
    case ExportWhat::Similarity: {
      const Matrix& m = similarityMatrix(scene, result, request.metric);  // (h, h)
      sink(npyHeader({h, h}));
      writeFloats(m, sink);
      break;
    }
  }
}

}  // namespace attnscope
