// `attnscope model` end to end on tiny checkpoints: the outputs (JSON and NPY against NumPy's forward of the
// same tokens, a scene the engine computes to NumPy's maps, PNG/SVG figures), and hostile files (truncated,
// header past the end, overlapping or out-of-range offsets, unknown dtype, shapes, missing tensors, broken
// vocab or merges): exit 2, one line naming the file and the field, no output file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "attnscope/compute/cpu_backend.h"
#include "attnscope/export/colormap.h"
#include "attnscope/model/model_export.h"
#include "attnscope/scene/scene_json.h"
#include "compare.h"
#include "export/test_export_support.h"
#include "model/test_model_support.h"

using nlohmann::json;
namespace fs = std::filesystem;
namespace model = attnscope::model;

namespace {

model_test::CommandRun attnscope(const std::string& args) {
  return model_test::run(std::string("'") + ATTNSCOPE_BINARY + "' " + args);
}

// A fresh copy of one tiny F32 checkpoint per test.
std::string freshCheckpoint() {
  static const std::string original = model_test::tinyCheckpoint("--dtype F32");
  const std::string dir = model_test::tempDir() + "/ckpt";
  fs::copy(original, dir);
  return dir;
}

// Rewrites model.safetensors' header through `edit` (the data section is kept as it is).
template <typename Edit>
void editHeader(const std::string& dir, Edit edit) {
  const std::string path = dir + "/model.safetensors";
  const std::string bytes = model_test::slurp(path);
  std::uint64_t len = 0;
  std::memcpy(&len, bytes.data(), 8);
  json header = json::parse(bytes.substr(8, len));
  edit(header);
  const std::string text = header.dump();
  std::string out(8, '\0');
  const std::uint64_t new_len = text.size();
  std::memcpy(out.data(), &new_len, 8);
  model_test::spit(path, out + text + bytes.substr(8 + len));
}

int lineCount(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// Runs the command on `dir` and expects exit 2, one stderr line holding each of `needles`, and no output.
void expectRefused(const std::string& dir, const std::vector<std::string>& needles) {
  const std::string out = model_test::tempDir() + "/out.json";
  const model_test::CommandRun r = attnscope("model '" + dir + "' --text 'hello there' --out '" + out + "'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lineCount(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("attnscope: ", 0), 0u) << r.err;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' in " << r.err;
  EXPECT_FALSE(fs::exists(out));
}

// NumPy's forward (gpt2_reference.py, float64) of the same checkpoint (seed and dtype as freshCheckpoint) on
// the tokens of 'hello there', which test_model_tokenizer works out by hand: the independent reference of the
// command's maps and rollout. {"weights": [L][H][n][n], "rollout": [n][n]}.
const json& numpyHelloThere() {
  static const json expected = [] {
    const std::string dir = model_test::tempDir() + "/ref";
    const model_test::CommandRun r = model_test::run(std::string(model_test::kPython) + " '" + ATTNSCOPE_SOURCE_DIR +
                                                     "/tests/model/gpt2_reference.py' '" + dir +
                                                     "' --dtype F32 --token-strings "
                                                     "'[\"hello\", \"\\u0120t\", \"he\", \"r\", \"e\"]'");
    if (r.status != 0) throw std::runtime_error("gpt2_reference.py failed: " + r.err);
    return json::parse(model_test::slurp(dir + "/expected.json"));
  }();
  return expected;
}

// float32 forward against NumPy's float64 on these 5 tokens: seen maps 2.2e-6, rollout 1.4e-7.
constexpr double kWeightTol = 2e-5, kRolloutTol = 1e-6;

// Largest |got - NumPy| over maps stored (heads, n, n) row-major from `values[offset]`, against layer `l`.
double npyLayerError(const std::vector<float>& values, std::size_t offset, const json& layer) {
  double worst = 0;
  for (std::size_t h = 0; h < layer.size(); ++h) {
    const Eigen::MatrixXd want = attnscope::test::jsonMatrix(layer[h]);
    if (values.size() < offset + (h + 1) * 25) return attnscope::test::kInfiniteError;
    const Eigen::Map<const Eigen::Matrix<float, 5, 5, Eigen::RowMajor>> got(values.data() + offset + h * 25);
    worst = attnscope::test::worse(worst, attnscope::test::maxError(got, want, {}, "npy"));
  }
  return worst;
}

TEST(ModelCli, OutputsAndLayerScene) {
  const std::string dir = freshCheckpoint(), out = model_test::tempDir();
  const model_test::CommandRun r =
      attnscope("model '" + dir + "' --text 'hello there' --out '" + out + "/r.json' --grid-out '" + out +
                "/grid.png' --rollout-out '" + out + "/rollout.svg'");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(model_test::slurp(out + "/r.json"));
  const json& numpy = numpyHelloThere();
  EXPECT_EQ(j["tokens"], json({"hello", "\u2423t", "he", "r", "e"}));  // worked by hand in test_model_tokenizer
  ASSERT_EQ(j["layers"].size(), 3u);
  double worst_w = 0;
  for (std::size_t l = 0; l < 3; ++l) {
    ASSERT_EQ(j["layers"][l]["heads"].size(), 4u);
    EXPECT_EQ(j["layers"][l]["layer"], l + 1);  // layers counted from 1, as everywhere
    for (std::size_t h = 0; h < 4; ++h)
      worst_w = attnscope::test::worse(
          worst_w, attnscope::test::maxError(attnscope::test::jsonMatrix(j["layers"][l]["heads"][h]),
                                             attnscope::test::jsonMatrix(numpy["weights"][l][h]), {}, "maps"));
  }
  const double worst_r = attnscope::test::expectClose(attnscope::test::jsonMatrix(j["rollout"]),
                                                      attnscope::test::jsonMatrix(numpy["rollout"]), kRolloutTol,
                                                      "rollout");
  EXPECT_LE(worst_w, kWeightTol);
  std::printf("[ model cli ] vs NumPy: maps %.2g, rollout %.2g\n", worst_w, worst_r);
  // The grid PNG decoded: every cell of every (layer, head) panel in the colour of NumPy's weight (within one
  // colour-map entry: the binary draws float32), masked above the diagonal. Cell positions come from the
  // exporter's layout of the same figure (its layout is tested in test_export.cpp).
  {
    model::ForwardResult numpy_maps;
    numpy_maps.resize(5, 12);
    for (int m = 0; m < 12; ++m)
      numpy_maps.mutableMap(m) = attnscope::test::jsonMatrix(numpy["weights"][m / 4][m % 4]).cast<float>();
    const model::HeadLayout config(3, 4, 4);
    // The command line's figure: titled after the family, drawn at the default dpi (twice the layout a side).
    attnscope::Figure figure =
        model::modelGridFigure(numpy_maps, config, {"hello", "\u2423t", "he", "r", "e"}, -1, {}, "GPT-2");
    figure.dpi = attnscope::kDefaultDpi;
    const attnscope::FigureLayout layout = attnscope::pngLayout(figure);
    const attnscope::testing::Image img = attnscope::testing::decodePng(model_test::slurp(out + "/grid.png"));
    ASSERT_EQ(img.width, layout.width);
    ASSERT_EQ(img.height, layout.height);
    int wrong = 0;
    for (int m = 0; m < 12; ++m)
      for (int i = 0; i < 5; ++i)
        for (int k = 0; k < 5; ++k) {
          const attnscope::PixelRect cell = attnscope::cellRect(figure, layout, m, i, k);
          const attnscope::Rgb8 got = img.at(cell.x + cell.w / 2, cell.y + cell.h / 2);
          const float w = numpy_maps.keptMap(m)(i, k);
          const bool ok = k > i ? got == attnscope::kMaskedColor
                                : (got == attnscope::colorAt(attnscope::ColorMap::Viridis, w - 1e-5f) ||
                                   got == attnscope::colorAt(attnscope::ColorMap::Viridis, w + 1e-5f));
          wrong += !ok;
        }
    EXPECT_EQ(wrong, 0) << "grid cells not in colorAt(NumPy's weight) or masked";
  }
  // The rollout SVG: every cell a <rect> at the exporter's layout of NumPy's rollout, filled with the colour of
  // NumPy's value (within one colour-map entry), grey above the diagonal.
  {
    const attnscope::Matrix rollout = attnscope::test::jsonMatrix(numpy["rollout"]).cast<float>();
    const attnscope::Figure figure = model::rolloutFigure(rollout, {"hello", "\u2423t", "he", "r", "e"});
    const attnscope::FigureLayout layout = attnscope::layoutFigure(figure);
    const std::string svg = model_test::slurp(out + "/rollout.svg");
    const auto rect = [](const attnscope::PixelRect& cell_rect, attnscope::Rgb8 c) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\" stroke=\"none\"/>",
                    cell_rect.x,
                    cell_rect.y, cell_rect.w, cell_rect.h, c.r, c.g, c.b);
      return std::string(buf);
    };
    int wrong = 0;
    for (int i = 0; i < 5; ++i)
      for (int k = 0; k < 5; ++k) {
        const attnscope::PixelRect cell = attnscope::cellRect(figure, layout, 0, i, k);
        const float w = rollout(i, k);
        const bool ok =
            k > i ? svg.find(rect(cell, attnscope::kMaskedColor)) != std::string::npos
                  : svg.find(rect(cell, attnscope::colorAt(attnscope::ColorMap::Viridis, w - 1e-5f))) != std::string::npos ||
                        svg.find(rect(cell, attnscope::colorAt(attnscope::ColorMap::Viridis, w + 1e-5f))) != std::string::npos;
        wrong += !ok;
      }
    EXPECT_EQ(wrong, 0) << "rollout SVG cells not a <rect> in colorAt(NumPy's rollout) or masked";
  }

  // Layer 2 (counted from 1: the checkpoint's h.1) as a scene: the engine's compute of it gives NumPy's maps of
  // its second layer, weights[1].
  const model_test::CommandRun s = attnscope("model '" + dir + "' --text 'hello there' --layer 2 --scene-out '" + out +
                                             "/l1.json' --out '" + out + "/l1.npy'");
  ASSERT_EQ(s.status, 0) << s.err;
  const attnscope::Scene scene = attnscope::loadSceneFile(out + "/l1.json");
  EXPECT_NE(scene.description.find("layer 2 of 3"), std::string::npos) << scene.description;
  EXPECT_NE(scene.description.find("hello there"), std::string::npos);
  EXPECT_EQ(scene.query_tokens, (std::vector<std::string>{"hello", "\u2423t", "he", "r", "e"}));
  const attnscope::Result res = attnscope::CpuBackend().compute(scene);
  ASSERT_EQ(res.heads.size(), 4u);
  for (std::size_t h = 0; h < 4; ++h)
    attnscope::test::expectClose(res.heads[h].weights, attnscope::test::jsonMatrix(numpy["weights"][1][h]),
                                 kWeightTol, "layer-1 scene head " + std::to_string(h));
  // Every layer as NPY (layers, heads, n, n), the text read from a file: every value NumPy's.
  model_test::spit(out + "/text.txt", "hello there");
  const model_test::CommandRun all =
      attnscope("model '" + dir + "' --text-file '" + out + "/text.txt' --out '" + out + "/all.npy'");
  ASSERT_EQ(all.status, 0) << all.err;
  const attnscope::testing::Npy all_npy = attnscope::testing::decodeNpy(model_test::slurp(out + "/all.npy"));
  EXPECT_NE(all_npy.dict.find("'shape': (3, 4, 5, 5)"), std::string::npos) << all_npy.dict;
  ASSERT_EQ(all_npy.values.size(), 3u * 4 * 5 * 5);
  for (std::size_t l = 0; l < 3; ++l)
    EXPECT_LE(npyLayerError(all_npy.values, l * 100, numpy["weights"][l]), kWeightTol) << "layer " << l;
  // NPY (heads, n, n) for one layer.
  const attnscope::testing::Npy npy = attnscope::testing::decodeNpy(model_test::slurp(out + "/l1.npy"));
  EXPECT_NE(npy.dict.find("'shape': (4, 5, 5)"), std::string::npos) << npy.dict;
  ASSERT_EQ(npy.values.size(), 4u * 5 * 5);
  EXPECT_LE(npyLayerError(npy.values, 0, numpy["weights"][1]), kWeightTol);
}

TEST(ModelCli, UsageErrors) {
  const std::string dir = freshCheckpoint();
  EXPECT_EQ(attnscope("model '" + dir + "'").status, 2);
  // 3 layers, counted from 1: 1..3.
  const model_test::CommandRun past = attnscope("model '" + dir + "' --text hi --layer 4");
  EXPECT_EQ(past.status, 2);
  EXPECT_NE(past.err.find("--layer: expected 1 to 3, got 4"), std::string::npos) << past.err;
  EXPECT_EQ(attnscope("model '" + dir + "' --text hi --layer 0").status, 2);
  EXPECT_EQ(attnscope("model '" + dir + "' --text hi --scene-out x.json").status, 2);
  EXPECT_EQ(attnscope("model '" + dir + "' --text hi --grid-out x.jpg").status, 2);
  // 41 x's (no merge joins x's) and " y" (no "Ġ y" merge) are 43 tokens; n_positions is 40.
  const model_test::CommandRun long_text = attnscope("model '" + dir + "' --text '" + std::string(41, 'x') + " y'");
  EXPECT_EQ(long_text.status, 2);
  // Refused as soon as the count passes n_positions: after the first word's 41 tokens.
  EXPECT_NE(long_text.err.find("text: expected at most 40 tokens, got more (counted to 41, then stopped)"),
            std::string::npos)
      << long_text.err;
}

// --grid-out --contrast row --log: layer 2's heads, each cell at t = 1 + log10(w / its row's max) / 3 of NumPy's
// weights (causal: the row's max over keys 0..i), masked above the diagonal. The binary's float32 maps are within
// kWeightTol of NumPy's, so the ratio r = w / top is within e = kWeightTol (1 + r) / top, and t within
// e / (r ln 10 * 3): any colour-map entry over that range of t is accepted.
TEST(ModelCli, GridOutInRowMaxLogContrast) {
  const std::string dir = freshCheckpoint(), out = model_test::tempDir() + "/rows.png";
  const model_test::CommandRun r =
      attnscope("model '" + dir + "' --text 'hello there' --layer 2 --grid-out '" + out + "' --contrast row --log");
  ASSERT_EQ(r.status, 0) << r.err;
  const json& numpy = numpyHelloThere();
  model::ForwardResult numpy_maps;
  numpy_maps.resize(5, 12);
  for (int m = 0; m < 12; ++m)
    numpy_maps.mutableMap(m) = attnscope::test::jsonMatrix(numpy["weights"][m / 4][m % 4]).cast<float>();
  const model::HeadLayout config(3, 4, 4);
  attnscope::Figure figure = model::modelGridFigure(numpy_maps, config, {"hello", "\u2423t", "he", "r", "e"}, 1,
                                                    {attnscope::ColorScale::RowMax, true}, "GPT-2");
  EXPECT_EQ(figure.scale_label, "weight / row's max, log scale");
  figure.dpi = attnscope::kDefaultDpi;  // the command line's default
  const attnscope::FigureLayout layout = attnscope::pngLayout(figure);
  const attnscope::testing::Image img = attnscope::testing::decodePng(model_test::slurp(out));
  ASSERT_EQ(img.width, layout.width);
  ASSERT_EQ(img.height, layout.height);
  int wrong = 0;
  for (int h = 0; h < 4; ++h) {
    const Eigen::MatrixXd w = attnscope::test::jsonMatrix(numpy["weights"][1][h]);
    for (int i = 0; i < 5; ++i) {
      const double top = w.row(i).head(i + 1).maxCoeff();
      for (int k = 0; k < 5; ++k) {
        const attnscope::PixelRect cell = attnscope::cellRect(figure, layout, h, i, k);
        const attnscope::Rgb8 got = img.at(cell.x + cell.w / 2, cell.y + cell.h / 2);
        if (k > i) {
          wrong += !(got == attnscope::kMaskedColor);
          continue;
        }
        const double ratio = w(i, k) / top, e = kWeightTol * (1 + ratio) / top;
        const auto t = [](double x) { return x <= 0 ? 0.0 : std::max(0.0, 1 + std::log10(x) / 3); };
        const int lo = attnscope::colorMapIndex(static_cast<float>(t(ratio - e) - 1e-6));
        const int hi = attnscope::colorMapIndex(static_cast<float>(t(ratio + e) + 1e-6));
        bool ok = false;
        for (int entry = lo; entry <= hi; ++entry)
          ok = ok || got == attnscope::colorMapTable(attnscope::ColorMap::Viridis)[static_cast<std::size_t>(entry)];
        wrong += !ok;
      }
    }
  }
  EXPECT_EQ(wrong, 0) << "grid cells not at log10(NumPy's weight / its row's max) or masked";
  // A contrast without a figure to colour, and a bad one: one line, exit 2, no file.
  for (const std::string& bad : {std::string("--out '") + out + ".json' --contrast row", "--grid-out '" + out + "2.png' --contrast nope"}) {
    const model_test::CommandRun b = attnscope("model '" + dir + "' --text hi " + bad);
    EXPECT_EQ(b.status, 2) << bad;
    EXPECT_EQ(lineCount(b.err), 1) << b.err;
    EXPECT_NE(b.err.find("attnscope: --contrast: expected "), std::string::npos) << b.err;
    EXPECT_FALSE(fs::exists(out + ".json") || fs::exists(out + "2.png"));
  }
}

// --rollout-out --contrast row: each rollout row over its own largest unmasked value (row 0 is [1]: a per-map
// top would be 1 and change nothing, the rows' are below it), each SVG cell's fill against NumPy's rollout:
// within kRolloutTol, so r = v / top within e = kRolloutTol (1 + r) / top; any colour-map entry over
// [r - e, r + e] is accepted.
TEST(ModelCli, RolloutOutInRowMaxContrast) {
  const std::string dir = freshCheckpoint(), out = model_test::tempDir() + "/rollout.svg";
  const model_test::CommandRun r =
      attnscope("model '" + dir + "' --text 'hello there' --rollout-out '" + out + "' --contrast row");
  ASSERT_EQ(r.status, 0) << r.err;
  const attnscope::Matrix rollout = attnscope::test::jsonMatrix(numpyHelloThere()["rollout"]).cast<float>();
  const attnscope::Figure figure = model::rolloutFigure(rollout, {"hello", "\u2423t", "he", "r", "e"}, true,
                                                        {attnscope::ColorScale::RowMax, false});
  EXPECT_EQ(figure.scale_label, "weight / row's max");
  const attnscope::FigureLayout layout = attnscope::layoutFigure(figure);
  const std::string svg = model_test::slurp(out);
  int wrong = 0, below_one = 0;
  for (int i = 0; i < 5; ++i) {
    double top = 0;
    for (int k = 0; k <= i; ++k) top = std::max(top, static_cast<double>(rollout(i, k)));
    below_one += top < 0.99;
    for (int k = 0; k < 5; ++k) {
      const attnscope::PixelRect c = attnscope::cellRect(figure, layout, 0, i, k);
      const std::string at = "<rect x=\"" + std::to_string(c.x) + "\" y=\"" + std::to_string(c.y) + "\" width=\"" +
                             std::to_string(c.w) + "\" height=\"" + std::to_string(c.h) + "\" fill=\"#";
      const std::size_t p = svg.find(at);
      if (p == std::string::npos) {
        ++wrong;
        continue;
      }
      const std::string hex = svg.substr(p + at.size(), 6);
      const auto byte = [&](int b) { return static_cast<std::uint8_t>(std::stoi(hex.substr(2 * b, 2), nullptr, 16)); };
      const attnscope::Rgb8 got{byte(0), byte(1), byte(2)};
      if (k > i) {
        wrong += !(got == attnscope::kMaskedColor);
        continue;
      }
      const double ratio = rollout(i, k) / top, e = kRolloutTol * (1 + ratio) / top;
      bool ok = false;
      for (int entry = attnscope::colorMapIndex(static_cast<float>(ratio - e));
           entry <= attnscope::colorMapIndex(static_cast<float>(ratio + e)); ++entry)
        ok = ok || got == attnscope::colorMapTable(attnscope::ColorMap::Viridis)[static_cast<std::size_t>(entry)];
      wrong += !ok;
    }
  }
  EXPECT_EQ(wrong, 0) << "rollout cells not at NumPy's rollout over its row's max, or masked";
  EXPECT_GE(below_one, 3) << "rows whose max is below 1, where the contrast shows";
}

TEST(ModelCli, HostileSafetensors) {
  {  // truncated: the last tensors' bytes are gone
    const std::string dir = freshCheckpoint();
    const std::string bytes = model_test::slurp(dir + "/model.safetensors");
    model_test::spit(dir + "/model.safetensors", bytes.substr(0, bytes.size() / 2));
    expectRefused(dir, {"model.safetensors: tensor '", "data_offsets", "data section"});
  }
  {  // header length past the end of the file
    const std::string dir = freshCheckpoint();
    std::string bytes = model_test::slurp(dir + "/model.safetensors");
    const std::uint64_t huge = bytes.size() + 1;
    std::memcpy(bytes.data(), &huge, 8);
    model_test::spit(dir + "/model.safetensors", bytes);
    expectRefused(dir, {"model.safetensors: header length", std::to_string(bytes.size() + 1)});
  }
  {  // a file shorter than the 8-byte length
    const std::string dir = freshCheckpoint();
    model_test::spit(dir + "/model.safetensors", "abc");
    expectRefused(dir, {"model.safetensors: header length"});
  }
  {  // header not JSON
    const std::string dir = freshCheckpoint();
    std::string bytes = model_test::slurp(dir + "/model.safetensors");
    bytes[8] = '[';
    model_test::spit(dir + "/model.safetensors", bytes);
    expectRefused(dir, {"model.safetensors: header: expected valid JSON"});
  }
  {  // overlapping offsets: wpe moved onto wte's bytes
    const std::string dir = freshCheckpoint();
    editHeader(dir, [](json& h) {
      auto& o = h["transformer.wpe.weight"]["data_offsets"];
      const std::uint64_t size = o[1].get<std::uint64_t>() - o[0].get<std::uint64_t>();
      o = {16, 16 + size};
    });
    expectRefused(dir, {"model.safetensors: tensor '", "data_offsets", "overlap"});
  }
  {  // out of range: the last tensor's end one float past the data
    const std::string dir = freshCheckpoint();
    editHeader(dir, [](json& h) {
      std::string last;
      std::uint64_t end = 0;
      for (auto& [k, v] : h.items())
        if (k != "__metadata__" && v["data_offsets"][1].get<std::uint64_t>() > end)
          end = v["data_offsets"][1].get<std::uint64_t>(), last = k;
      h[last]["data_offsets"] = {h[last]["data_offsets"][0].get<std::uint64_t>() + 4, end + 4};
    });
    expectRefused(dir, {"model.safetensors: tensor '", "data_offsets", "data section"});
  }
  {  // an unknown dtype
    const std::string dir = freshCheckpoint();
    editHeader(dir, [](json& h) { h["transformer.h.0.ln_1.bias"]["dtype"] = "F7"; });
    expectRefused(dir, {"model.safetensors: tensor 'transformer.h.0.ln_1.bias' dtype", "string 'F7'"});
  }
  {  // a known dtype the model cannot use (same size, so the header itself is sound)
    const std::string dir = freshCheckpoint();
    editHeader(dir, [](json& h) { h["transformer.ln_f.weight"]["dtype"] = "I32"; });
    expectRefused(dir, {"model.safetensors: tensor 'transformer.ln_f.weight' dtype", "F32, F16 or BF16", "I32"});
  }
  {  // sizes that disagree with the offsets
    const std::string dir = freshCheckpoint();
    editHeader(dir, [](json& h) { h["transformer.ln_f.bias"]["shape"] = {33}; });
    expectRefused(dir, {"tensor 'transformer.ln_f.bias' data_offsets", "132 bytes", "128 bytes"});
  }
  {  // a shape that does not match config.json (the header itself is consistent)
    const std::string dir = freshCheckpoint();
    editHeader(dir, [](json& h) { h["transformer.h.1.attn.c_proj.weight"]["shape"] = {64, 16}; });
    expectRefused(dir, {"tensor 'transformer.h.1.attn.c_proj.weight' shape", "[32, 32]", "[64, 16]"});
  }
  {  // a missing tensor
    const std::string dir = freshCheckpoint();
    editHeader(dir, [](json& h) { h.erase("transformer.h.2.mlp.c_fc.bias"); });
    expectRefused(dir, {"model.safetensors: tensor 'transformer.h.2.mlp.c_fc.bias'", "missing"});
  }
  {  // no weights file at all
    const std::string dir = freshCheckpoint();
    fs::remove(dir + "/model.safetensors");
    expectRefused(dir, {"model.safetensors"});
  }
}

TEST(ModelCli, HostileConfigVocabMerges) {
  {
    const std::string dir = freshCheckpoint();
    json c = json::parse(model_test::slurp(dir + "/config.json"));
    c["n_positions"] = 41;  // wpe is [40, 32]
    model_test::spit(dir + "/config.json", c.dump());
    expectRefused(dir, {"tensor 'transformer.wpe.weight' shape", "[41, 32]", "[40, 32]"});
  }
  {
    const std::string dir = freshCheckpoint();
    json c = json::parse(model_test::slurp(dir + "/config.json"));
    c.erase("n_head");
    model_test::spit(dir + "/config.json", c.dump());
    expectRefused(dir, {"config.json: n_head"});
  }
  {
    const std::string dir = freshCheckpoint();
    json c = json::parse(model_test::slurp(dir + "/config.json"));
    c["n_head"] = 5;  // 32 is not a multiple of 5
    model_test::spit(dir + "/config.json", c.dump());
    expectRefused(dir, {"config.json: n_embd", "multiple of n_head"});
  }
  {
    const std::string dir = freshCheckpoint();
    model_test::spit(dir + "/vocab.json", "{\"a\": 0,");
    expectRefused(dir, {"vocab.json: expected valid JSON"});
  }
  {
    const std::string dir = freshCheckpoint();
    model_test::spit(dir + "/merges.txt", "#version: 0.2\nh e\nl l l\n");
    expectRefused(dir, {"merges.txt: line 3"});
  }
  {
    const std::string dir = freshCheckpoint();
    json v = json::parse(model_test::slurp(dir + "/vocab.json"));
    v["extra"] = 9999;  // past vocab_size
    model_test::spit(dir + "/vocab.json", v.dump());
    expectRefused(dir, {"vocab.json", "vocab_size"});
  }
}

// --patch-out: activation patching between two texts of 5 tokens each, written as JSON, every head's, every MLP's and
// every residual (layer, position) value against patching_reference.py's float64 NumPy run of the written token ids
// (tolerance as test_patching.cpp derives it); and the refusals, each one line with exit 2 and no file.
TEST(ModelCli, PatchOutAgainstNumPy) {
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  const std::string dir = freshCheckpoint(), out = model_test::tempDir() + "/patch.json";
  const model_test::CommandRun r = attnscope("model '" + dir + "' --text 'hello there' --corrupt 'hello ther!' " +
                                             "--metric logit-diff:5,7 --patch-out '" + out + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const json got = json::parse(model_test::slurp(out));
  EXPECT_EQ(got["kind"], "patching (clean into corrupt)");
  EXPECT_EQ(got["tokens"].size(), 5u);
  const std::string ref_out = model_test::tempDir() + "/ref.json";
  const model_test::CommandRun ref = model_test::run(
      std::string(model_test::kPython) + " '" + ATTNSCOPE_SOURCE_DIR + "/tests/model/patching_reference.py' '" + dir +
      "' --ids '" + got["token_ids"].dump() + "' --corrupt '" + got["corrupt_token_ids"].dump() +
      "' --metric logit-diff:5,7 --out '" + ref_out + "'");
  ASSERT_EQ(ref.status, 0) << ref.err;
  const json want = json::parse(model_test::slurp(ref_out));
  const double tol = 2 * model_test::kHiddenTol * want["unembed_l1"].get<double>();
  double worst = std::abs(got["clean"].get<double>() - want["clean"].get<double>());
  worst = std::max(worst, std::abs(got["corrupt"].get<double>() - want["corrupt"].get<double>()));
  for (const char* key : {"heads", "residual", "mlp"})
    for (std::size_t l = 0; l < want[key].size(); ++l)
      for (std::size_t j = 0; j < want[key][l].size(); ++j)
        worst = std::max(worst, std::abs(got[key][l][j].get<double>() -
                                         (want[key][l].is_array() ? want[key][l][j] : want[key][l]).get<double>()));
  EXPECT_LE(worst, tol);
  // Normalised: the changed token's residual at layer 1 restores the clean run exactly; the others change nothing.
  EXPECT_NEAR(got["residual_normalised"][0][4].get<double>(), 1.0, 1e-6);
  EXPECT_NEAR(got["residual_normalised"][0][0].get<double>(), 0.0, 1e-6);

  for (const auto& [args, field] :
       {std::pair<std::string, std::string>{"--metric loss", "--metric"},
        {"--metric loss --patch-out '" + out + ".2' --corrupt 'hi'", "--corrupt"},
        {"--metric 'logprob:hello there' --patch-out '" + out + ".2'", "--metric"},
        {"--metric entropy --patch-out '" + out + ".2'", "--metric"},
        {"--patch-out '" + out + ".2'", "--metric"},
        {"--metric loss --patch-out '" + out + ".2' --ablate half", "--ablate"},
        {"--metric loss --patch-out '" + out + ".2' --reference 'hi'", "--reference"},
        {"--metric loss --patch-out '" + out + ".2' --ablate mean --reference ''", "--reference"},
        {"--metric loss --patch-out '" + out + ".2' --patch-direction noise", "--patch-direction"}}) {
    const model_test::CommandRun bad = attnscope("model '" + dir + "' --text 'hello there' " + args);
    EXPECT_EQ(bad.status, 2) << args;
    EXPECT_EQ(lineCount(bad.err), 1) << bad.err;
    EXPECT_NE(bad.err.find(field), std::string::npos) << bad.err;
    EXPECT_FALSE(fs::exists(out + ".2")) << args;
  }
}

}  // namespace
