// Reads and checks a saved attention tensor and its tokens (attention_tensor.h).
#include "attnscope/arrays/attention_tensor.h"

#include <cmath>
#include <cstring>

#include "attnscope/arrays/array_file.h"
#include "attnscope/atomic_file.h"
#include "attnscope/compute/similarity.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/text_bounds.h"

namespace attnscope::arrays {

namespace {

constexpr std::size_t kMaxTokenFileBytes = std::size_t{64} << 20;

std::string indexText(int layer, int head, int layers) {
  return layers > 1 || layer > 0 ? "layer " + std::to_string(layer + 1) + ", head " + std::to_string(head + 1)
                                 : "head " + std::to_string(head + 1);
}

}  // namespace

AttentionTensor readAttentionTensor(const std::string& path, const std::optional<std::string>& tensor,
                                    std::vector<std::string> tokens) {
  return attentionTensorFrom(readArrays(path), path, tensor, std::move(tokens));
}

bool looksLikeAttention(const std::map<std::string, NamedArray>& arrays) {
  bool square = false;
  for (const auto& [name, a] : arrays) {
    if (!a.unreadable.empty()) continue;  // int64 input_ids beside the maps say nothing of what the file is
    const std::size_t rank = a.shape.size();
    if (rank == 1 || rank == 2) return false;
    square = square || ((rank == 3 || rank == 4) && a.shape[rank - 1] == a.shape[rank - 2]);
  }
  return square;
}

// Estimates in double (heads^2 of a 2^31-value tensor overflows 64 bits), clamped into a size_t.
static std::size_t clampBytes(double bytes) {
  return bytes >= 0x1p62 ? std::size_t{1} << 62 : static_cast<std::size_t>(bytes);
}

std::size_t tensorHoldBytes(std::int64_t layers, std::int64_t heads, std::int64_t n) {
  const double values = static_cast<double>(layers) * static_cast<double>(heads) * static_cast<double>(n) * n;
  const double h = static_cast<double>(heads);
  // The file's arrays and the forward's copy (4 bytes each, counted twice over for the read's own copy), then
  // one layer's analysis: its maps copied (h n^2 floats), the h (h - 1) / 2 head pairs (8 bytes each), cosine
  // and JS (h^2 floats each), and per head its scores and statistics (~256 bytes).
  return clampBytes(8 * values + 4 * h * static_cast<double>(n) * n + 4 * h * h + 8 * h * h + 256 * h);
}

std::size_t tensorAnalysisJsonBytes(std::int64_t layers, std::int64_t heads, std::int64_t n, std::size_t token_bytes) {
  const double l = static_cast<double>(layers), h = static_cast<double>(heads);
  // Per layer 2 h^2 similarity numbers, each kJsonBytesPerNumber of text and a 16-byte value in the tree held
  // while the text is made; per head an object of ~13 keys (~1 KiB, tree and text); the tokens up to 6 bytes a
  // byte as text ("\u0001") and a string in the tree.
  return clampBytes(l * (2 * h * h * (kJsonBytesPerNumber + 16) + 1024 * h) + 7.0 * static_cast<double>(token_bytes) +
                    48.0 * static_cast<double>(n) + 4096);
}

AttentionTensor attentionTensorFrom(std::map<std::string, NamedArray> arrays, const std::string& path,
                                    const std::optional<std::string>& tensor, std::vector<std::string> tokens,
                                    std::size_t budget) {
  NamedArray* chosen = nullptr;
  std::string name;
  if (tensor) {
    const auto it = arrays.find(*tensor);
    if (it == arrays.end())
      throw InputError("--tensor", "one of the file's tensors (" + arrayListing(arrays) + ")", quoteFragment(*tensor, 60));
    chosen = &it->second;
    name = *tensor;
  } else {
    if (arrays.size() != 1)
      throw InputError("--tensor",
                       "a tensor name: " + path + " holds " + std::to_string(arrays.size()) + " (" + arrayListing(arrays) + ")",
                       "none");
    chosen = &arrays.begin()->second;
    name = arrays.begin()->first;
  }
  const std::string field = path + (name.empty() ? "" : ": " + quoteFragment(name, 60));
  const NamedArray& a = *chosen;
  const std::vector<float>& values = usableValues(field, a);  // only the chosen tensor's dtype and values count
  if (a.shape.size() != 3 && a.shape.size() != 4)
    throw InputError(field, "shape (layers, heads, n_q, n_k) or (heads, n_q, n_k)", "shape " + shapeTuple(a.shape));
  const std::size_t rank = a.shape.size();
  const std::int64_t layers = rank == 4 ? a.shape[0] : 1, heads = a.shape[rank - 3], n_q = a.shape[rank - 2],
                     n_k = a.shape[rank - 1];
  if (n_q != n_k)
    throw InputError(field, "n_q == n_k (self-attention over one token list)", "shape " + shapeTuple(a.shape));
  if (layers < 1 || heads < 1 || n_q < 1) throw InputError(field, "at least one layer, head and token", "shape " + shapeTuple(a.shape));
  // elementCount (array_file.h) bounds every size and the product by 2^31 - 1: layers * heads fits an int.
  if (static_cast<std::uint64_t>(elementCount(field, a.shape)) != values.size())
    throw InputError(field, std::to_string(elementCount(field, a.shape)) + " values", std::to_string(values.size()));
  if (static_cast<std::int64_t>(tokens.size()) != n_q)
    throw InputError("--tokens", std::to_string(n_q) + " tokens (n of shape " + shapeTuple(a.shape) + ")",
                     std::to_string(tokens.size()));
  checkMemoryBudget(field, "the tensor and a layer's analysis (" + std::to_string(heads) + " heads of " +
                               std::to_string(n_q) + " x " + std::to_string(n_q) + ")",
                    tensorHoldBytes(layers, heads, n_q), budget);
  const int n = static_cast<int>(n_q), maps = static_cast<int>(layers * heads);
  // Weights, not scores: every entry in [0, 1] and every row summing to 1 (or 0, a row with every key masked).
  for (int m = 0; m < maps; ++m)
    for (int i = 0; i < n; ++i) {
      const float* row = values.data() + (static_cast<std::size_t>(m) * n + i) * n;
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        if (row[j] < 0.0f)
          throw InputError(field, "attention weights (>= 0, rows summing to 1)",
                           std::to_string(row[j]) + " at " + indexText(m / static_cast<int>(heads), m % static_cast<int>(heads), static_cast<int>(layers)) +
                               ", query " + std::to_string(i) + ", key " + std::to_string(j) +
                               ": it may be a pre-softmax score");
        sum += row[j];
      }
      if (std::abs(sum - 1.0) > kRowSumTolerance && std::abs(sum) > kRowSumTolerance)
        throw InputError(field, "rows summing to 1 (attention weights after the softmax)",
                         "a sum of " + std::to_string(sum) + " in " +
                             indexText(m / static_cast<int>(heads), m % static_cast<int>(heads), static_cast<int>(layers)) +
                             ", query " + std::to_string(i) + ": it may be a pre-softmax score");
    }
  AttentionTensor t;
  t.forward.layout = model::HeadLayout(static_cast<int>(layers), static_cast<int>(heads), static_cast<int>(heads));
  t.forward.layout.causal = false;  // whatever mask made it, every cell is the file's weight
  t.forward.resize(n, maps);
  std::memcpy(t.forward.buffer.data(), values.data(), values.size() * sizeof(float));
  t.tokens = std::move(tokens);
  t.tensor_name = name;
  return t;
}

std::vector<std::string> tokensFromArgument(const std::string& argument) {
  if (argument.empty() || argument[0] != '[') return readTokenFile(argument);
  const nlohmann::json j = parseJsonText(argument, "--tokens");
  if (!j.is_array()) throw InputError("--tokens", "a JSON list of strings", std::string(j.type_name()));
  std::vector<std::string> tokens;
  for (const auto& token : j) {
    if (!token.is_string()) throw InputError("--tokens", "a JSON list of strings", std::string("a ") + token.type_name());
    tokens.push_back(token.get<std::string>());
  }
  return tokens;
}

TensorLayerAnalysis analyseTensorLayer(const model::ForwardResult& f, const std::vector<std::string>& tokens,
                                       int layer, int window) {
  // The scores read only the tokens (induction, duplicates): a scene of the tokens alone carries them.
  Scene tokens_only;
  tokens_only.d_model = 1;
  tokens_only.query_tokens = tokens;
  tokens_only.query = Matrix::Zero(f.n, 1);
  const int heads = f.layout.n_head;
  std::vector<Matrix> maps;
  for (int h = 0; h < heads; ++h) maps.emplace_back(f.map(layer, h));
  TensorLayerAnalysis a;
  std::vector<const Matrix*> pointers;
  for (const Matrix& w : maps) {
    pointers.push_back(&w);
    a.scores.push_back(headTypeScores(tokens_only, w, window));
    a.stats.push_back(headStats(w));
  }
  a.similarity = headSimilarity(pointers);
  return a;
}

std::vector<std::string> readTokenFile(const std::string& path) {
  const std::string text = readWholeFile(path, "--tokens", kMaxTokenFileBytes);
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    const nlohmann::json j = parseJsonText(text, path);
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_string())
        throw InputError(path + "[" + std::to_string(i) + "]", "a string (a JSON list of tokens)", std::string(j[i].type_name()));
      tokens.push_back(j[i].get<std::string>());
    }
    return tokens;
  }
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tokens.push_back(line);
    start = end + 1;
  }
  return tokens;
}

}  // namespace attnscope::arrays
