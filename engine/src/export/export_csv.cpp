// CSV export (RFC 4180): one head as a query-by-key table, all heads in long format, or the head similarity
// matrix; the layouts are documented with exportBytes in export.h.
#include <charconv>
#include <string>
#include <vector>

#include "export/export_formats.h"

namespace attnscope {

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

namespace {

// The shortest text that reads back as the same float32 (std::to_chars), e.g. 0.5, 0.33333334.
void appendNumber(std::string& out, float v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

void appendIndex(std::string& out, long v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

std::vector<std::string> csvFields(const std::vector<std::string>& tokens) {
  std::vector<std::string> fields;
  fields.reserve(tokens.size());
  for (const std::string& t : tokens) fields.push_back(csvField(t));
  return fields;
}

}  // namespace

void writeCsv(const Scene& scene, const Result& result, const ExportRequest& request, const ByteSink& sink) {
  std::string out;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  const auto flushIfFull = [&] {
    if (out.size() < kChunk) return;
    sink(out);
    out.clear();
  };
  const std::vector<std::string> q_fields = csvFields(scene.query_tokens);
  const std::vector<std::string> k_fields = csvFields(scene.keyTokens());
  const int h = scene.numHeads();
  switch (request.what) {
    case ExportWhat::Head: {
      const ExportWindow window = exportWindow(scene, request);  // (rows, cols) of the head's map
      out += csvField("query\\key");
      for (int j = window.col0; j < window.col1; ++j) out += "," + k_fields[static_cast<std::size_t>(j)];
      out += "\r\n";
      forEachWeightRow(scene, result, request.head, window, [&](int i, const float* w) {
        out += q_fields[static_cast<std::size_t>(i)];
        for (int j = 0; j < window.cols(); ++j) {
          out += ',';
          appendNumber(out, w[j]);
        }
        out += "\r\n";
        flushIfFull();
      });
      break;
    }
    case ExportWhat::Heads:
    case ExportWhat::Diff:  // exportBytes passes the deltas as the weights
      // One line per (head, query, key), about 40 bytes each: written out a chunk at a time.
      out.reserve(kChunk + 4096);
      out += request.what == ExportWhat::Diff ? "head,query_index,query_token,key_index,key_token,delta\r\n"
             : request.value_norms ? "head,query_index,query_token,key_index,key_token,weight_x_value_norm\r\n"
                                   : "head,query_index,query_token,key_index,key_token,weight\r\n";
      for (int a = 0; a < h; ++a) {
        forEachWeightRow(scene, result, a, exportWindow(scene, {}), [&](int i, const float* w) {
          for (int j = 0; j < scene.nK(); ++j) {
            appendIndex(out, a + 1);
            out += ',';
            appendIndex(out, i);
            out += ',';
            out += q_fields[static_cast<std::size_t>(i)];
            out += ',';
            appendIndex(out, j);
            out += ',';
            out += k_fields[static_cast<std::size_t>(j)];
            out += ',';
            appendNumber(out, w[j]);
            out += "\r\n";
          }
          flushIfFull();
        });
      }
      break;
    case ExportWhat::Similarity: {
      const Matrix& m = similarityMatrix(scene, result, request.metric);  // (h, h)
      out += "head";
      for (int a = 0; a < h; ++a) out += ",H" + std::to_string(a + 1);
      out += "\r\n";
      for (int a = 0; a < h; ++a) {
        out += "H" + std::to_string(a + 1);
        for (int b = 0; b < h; ++b) {
          out += ',';
          appendNumber(out, m(a, b));
        }
        out += "\r\n";
      }
      break;
    }
  }
  sink(out);
}

}  // namespace attnscope
