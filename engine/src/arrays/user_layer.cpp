// The user's state dict to a scene: keys looked up and shape-checked per layout, then the one converter of
// scene/layouts.h for that layout, then validateScene.
#include "attnscope/arrays/user_layer.h"

#include <sstream>

#include "attnscope/error.h"
#include "attnscope/scene/layouts.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/text_bounds.h"

namespace attnscope::arrays {

namespace {

struct KeyReader {
  const std::map<std::string, NamedArray>& arrays;
  const std::string& file;

  std::string field(const std::string& key) const { return file + ": " + quoteFragment(key, 80); }
  // The key's array when present, its values checked (usableValues): only the keys a layout reads are.
  const NamedArray* find(const std::string& key) const {
    const auto it = arrays.find(key);
    if (it == arrays.end()) return nullptr;
    usableValues(field(key), it->second);
    return &it->second;
  }
  const NamedArray& need(const std::string& key, const std::string& why) const {
    const NamedArray* a = find(key);
    if (!a) throw InputError(field(key), "a tensor " + why, "no such key (the file holds: " + arrayListing(arrays) + ")");
    return *a;
  }
  // The array with exactly `shape`, or InputError naming the key, the expected and the actual shape.
  const NamedArray& shaped(const NamedArray& a, const std::string& key, const std::vector<std::int64_t>& shape) const {
    if (a.shape != shape) throw InputError(field(key), "shape " + shapeTuple(shape), "shape " + shapeTuple(a.shape));
    return a;
  }
  Matrix matrix(const std::string& key, std::int64_t rows, std::int64_t cols, const std::string& why) const {
    const NamedArray& a = shaped(need(key, why), key, {rows, cols});
    return Eigen::Map<const Matrix>(a.data.data(), rows, cols);
  }
  std::optional<RowVector> optionalVector(const std::string& key, std::int64_t size) const {
    const NamedArray* a = find(key);
    if (!a) return std::nullopt;
    shaped(*a, key, {size});
    return RowVector(Eigen::Map<const RowVector>(a->data.data(), size));
  }
  std::optional<Matrix> optionalMatrix(const std::string& key, std::int64_t rows, std::int64_t cols) const {
    const NamedArray* a = find(key);
    if (!a) return std::nullopt;
    shaped(*a, key, {rows, cols});
    return Matrix(Eigen::Map<const Matrix>(a->data.data(), rows, cols));
  }
  Tensor3 tensor3(const std::string& key, const std::string& why) const {
    const NamedArray& a = need(key, why);
    if (a.shape.size() != 3) throw InputError(field(key), "a 3-D tensor " + why, "shape " + shapeTuple(a.shape));
    return Tensor3{static_cast<int>(a.shape[0]), static_cast<int>(a.shape[1]), static_cast<int>(a.shape[2]), a.data};
  }
};

// The embedding width E from a (3E, E) fused weight, checked for heads dividing it.
std::int64_t fusedWidth(const KeyReader& r, const std::string& key, int heads) {
  const NamedArray& w = r.need(key, "(3E, E): the fused q, k, v projection");
  if (w.shape.size() != 2 || w.shape[0] != 3 * w.shape[1] || w.shape[1] == 0)
    throw InputError(r.field(key), "shape (3E, E)", "shape " + shapeTuple(w.shape));
  if (heads < 1) throw InputError("--heads", "the head count (this layout's weights do not hold it)", "none");
  if (w.shape[1] % heads != 0)
    throw InputError("--heads", "a divisor of E = " + std::to_string(w.shape[1]) + " (" + key + ")", std::to_string(heads));
  return w.shape[1];
}

}  // namespace

const std::vector<std::string>& userLayoutNames() {
  static const std::vector<std::string> names = {"torch-mha", "fused-qkv-002", "fused-qkv-003", "keras-mha"};
  return names;
}

UserLayout parseUserLayout(const std::string& name) {
  const std::vector<std::string>& names = userLayoutNames();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<UserLayout>(i);
  throw InputError("--layout", "torch-mha, fused-qkv-002, fused-qkv-003 or keras-mha", quoteFragment(name, 60));
}

std::vector<std::string> userLayoutKeys(UserLayout layout) {
  switch (layout) {
    case UserLayout::TorchMha: return {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"};
    case UserLayout::FusedQkv002: return {"attn.weight", "attn.bias"};
    case UserLayout::FusedQkv003: return {"qkv_linear.weight", "qkv_linear.bias", "fc_out.weight", "fc_out.bias"};
    case UserLayout::KerasMha:
      return {"query/kernel", "query/bias", "key/kernel", "key/bias", "value/kernel", "value/bias",
              "attention_output/kernel", "attention_output/bias"};
  }
  return {};
}

std::vector<std::string> splitTokenText(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  if (separator == ' ') {
    while (in >> part) parts.push_back(part);
  } else {
    while (std::getline(in, part, separator)) parts.push_back(part);
  }
  return parts;
}

std::size_t userLayerImportBytes(const std::map<std::string, NamedArray>& arrays, const std::optional<NamedArray>& inputs) {
  std::size_t values = inputs ? inputs->data.size() : 0;
  for (const auto& [name, a] : arrays) values += a.data.size();  // each at most 2^31 - 1: no overflow
  return values * (8 + kJsonBytesPerNumber + 16) + 4096;
}

Scene userLayerScene(const std::map<std::string, NamedArray>& arrays, const std::string& file,
                     const UserLayerOptions& options) {
  const KeyReader r{arrays, file};
  Projections projections;
  MaskKind mask = MaskKind::None;
  std::int64_t width = 0;
  switch (options.layout) {
    case UserLayout::TorchMha: {
      width = fusedWidth(r, "in_proj_weight", options.heads);
      TorchMhaWeights w;
      w.num_heads = options.heads;
      w.in_proj_weight = r.matrix("in_proj_weight", 3 * width, width, "");
      w.in_proj_bias = r.optionalVector("in_proj_bias", 3 * width);
      w.out_proj_weight = r.matrix("out_proj.weight", width, width, "(E, E): the output projection");
      w.out_proj_bias = r.optionalVector("out_proj.bias", width);
      projections = fromTorchMultiheadAttention(w);
      break;
    }
    case UserLayout::FusedQkv002:
    case UserLayout::FusedQkv003: {
      const bool seed2 = options.layout == UserLayout::FusedQkv002;
      const std::string prefix = seed2 ? "attn" : "qkv_linear";
      width = fusedWidth(r, prefix + ".weight", options.heads);
      projections = fromFusedQkv(r.matrix(prefix + ".weight", 3 * width, width, ""),
                                 r.optionalVector(prefix + ".bias", 3 * width), options.heads,
                                 seed2 ? FusedQkvOrder::SplitThenHeads : FusedQkvOrder::HeadsThenSplit);
      if (seed2) {
        mask = MaskKind::Causal;  // the seed's registered tril buffer
      } else if (const std::optional<Matrix> w_o = r.optionalMatrix("fc_out.weight", width, width)) {
        projections.w_o = w_o->transpose();  // nn.Linear: y = x W^T + b
        projections.b_o = r.optionalVector("fc_out.bias", width);
      }
      break;
    }
    case UserLayout::KerasMha: {
      KerasMhaWeights w;
      w.query_kernel = r.tensor3("query/kernel", "(E, heads, key_dim)");
      w.key_kernel = r.tensor3("key/kernel", "(E, heads, key_dim)");
      w.value_kernel = r.tensor3("value/kernel", "(E, heads, value_dim)");
      w.output_kernel = r.tensor3("attention_output/kernel", "(heads, value_dim, E)");
      const int heads = w.query_kernel.d1;
      width = w.query_kernel.d0;
      if (options.heads > 0 && options.heads != heads)
        throw InputError("--heads", std::to_string(heads) + " (query/kernel's second size)", std::to_string(options.heads));
      r.shaped(r.need("key/kernel", ""), "key/kernel", {width, heads, w.query_kernel.d2});
      r.shaped(r.need("value/kernel", ""), "value/kernel", {width, heads, w.value_kernel.d2});
      r.shaped(r.need("attention_output/kernel", ""), "attention_output/kernel", {heads, w.value_kernel.d2, width});
      w.query_bias = r.optionalMatrix("query/bias", heads, w.query_kernel.d2);
      w.key_bias = r.optionalMatrix("key/bias", heads, w.key_kernel.d2);
      w.value_bias = r.optionalMatrix("value/bias", heads, w.value_kernel.d2);
      w.output_bias = r.optionalVector("attention_output/bias", width);
      projections = fromKerasMultiHeadAttention(w);
      break;
    }
  }
  Scene scene;
  scene.d_model = static_cast<int>(width);
  if (options.inputs) {
    const NamedArray& x = *options.inputs;
    usableValues("--inputs", x);
    if (x.shape.size() != 2 || x.shape[1] != width)
      throw InputError("--inputs", "shape (n, " + std::to_string(width) + ")", "shape " + shapeTuple(x.shape));
    scene.query = Eigen::Map<const Matrix>(x.data.data(), x.shape[0], x.shape[1]);
  } else {
    const NamedArray& x = r.need("x", "(n, E): the layer's input rows (or give --inputs FILE)");
    r.shaped(x, "x", {x.shape.empty() ? 0 : x.shape[0], width});
    scene.query = Eigen::Map<const Matrix>(x.data.data(), x.shape[0], width);
  }
  if (static_cast<int>(options.tokens.size()) != scene.nQ())
    throw InputError("--tokens", std::to_string(scene.nQ()) + " tokens (one per row of x)",
                     std::to_string(options.tokens.size()));
  scene.query_tokens = options.tokens;
  scene.mask = options.mask.value_or(mask);
  scene.description = "imported from " + file + " (layout " +
                      userLayoutNames()[static_cast<std::size_t>(options.layout)] + ")";
  applyProjections(scene, std::move(projections));
  validateScene(scene);
  return scene;
}

}  // namespace attnscope::arrays
