// CSV export (RFC 4180): one head as a query-by-key table, all heads in long format, or the head similarity
// matrix; the layouts are documented with exportBytes in export.h.
#include <cstdio>
#include <string>

#include "export_formats.h"

namespace attnscope {

namespace {

// RFC 4180: a field holding a comma, a quote, CR or LF is quoted, with its quotes doubled.
std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// %.9g: enough digits for a float32 to read back exactly.
std::string csvNumber(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace

std::string csvBytes(const Scene& scene, const Result& result, const ExportRequest& request) {
  std::string out;
  const std::vector<std::string>& q_tokens = scene.query_tokens;
  const std::vector<std::string>& k_tokens = scene.keyTokens();
  const int h = scene.numHeads();
  switch (request.what) {
    case ExportWhat::Head: {
      const Matrix& w = result.heads[static_cast<std::size_t>(request.head)].weights;  // (n_q, n_k)
      out += csvField("query\\key");
      for (const std::string& t : k_tokens) out += "," + csvField(t);
      out += "\r\n";
      for (Eigen::Index i = 0; i < w.rows(); ++i) {
        out += csvField(q_tokens[static_cast<std::size_t>(i)]);
        for (Eigen::Index j = 0; j < w.cols(); ++j) out += "," + csvNumber(w(i, j));
        out += "\r\n";
      }
      break;
    }
    case ExportWhat::Heads:
      out += "head,query_index,query_token,key_index,key_token,weight\r\n";
      for (int a = 0; a < h; ++a) {
        const Matrix& w = result.heads[static_cast<std::size_t>(a)].weights;
        for (Eigen::Index i = 0; i < w.rows(); ++i) {
          const std::string row = std::to_string(a + 1) + "," + std::to_string(i) + "," +
                                  csvField(q_tokens[static_cast<std::size_t>(i)]) + ",";
          for (Eigen::Index j = 0; j < w.cols(); ++j)
            out += row + std::to_string(j) + "," + csvField(k_tokens[static_cast<std::size_t>(j)]) + "," +
                   csvNumber(w(i, j)) + "\r\n";
        }
      }
      break;
    case ExportWhat::Similarity: {
      const Matrix& m = similarityMatrix(scene, result, request.metric);  // (h, h)
      out += "head";
      for (int a = 0; a < h; ++a) out += ",H" + std::to_string(a + 1);
      out += "\r\n";
      for (int a = 0; a < h; ++a) {
        out += "H" + std::to_string(a + 1);
        for (int b = 0; b < h; ++b) out += "," + csvNumber(m(a, b));
        out += "\r\n";
      }
      break;
    }
  }
  return out;
}

}  // namespace attnscope
