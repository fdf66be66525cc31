// Scene files (JSON, "format": "attnscope-scene", "version": 1), and the number formatting every JSON output shares.
// The format is documented in docs/formats.md.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/types.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

// Parses and validates (validateScene). Errors are InputErrors naming the JSON field, e.g.
// "heads[1].w_k: expected 4 x 2, got 4 x 3". Numbers may be float64 in the file; they are stored as float32.
Scene sceneFromJson(const nlohmann::json& j);
// As sceneFromJson; a missing file or a JSON syntax error is named by the path (with line and column). The file is
// read through readWholeFile and parseJsonText (json_file.h): at most kMaxSceneFileBytes, nested at most 64 deep.
constexpr std::size_t kMaxSceneFileBytes = std::size_t{256} << 20;
Scene loadSceneFile(const std::string& path);
nlohmann::ordered_json sceneToJson(const Scene& scene);
void saveSceneFile(const Scene& scene, const std::string& path);  // atomic

// The worked example of seed 001 (assets/scenes/worked_example.json, built into the binary).
Scene workedExampleScene();

// One float as the shortest decimal that reads back as the same float32 (integers as integers, non-finite as
// null), and a matrix as a list of rows of them: how every number of compute's and analyze's JSON is written.
nlohmann::ordered_json floatToJson(float f);
nlohmann::ordered_json matrixToJson(const Matrix& m);

// Large matrices kept out of a JSON tree: add() returns a placeholder to put in the tree where the matrix goes,
// and formatJson / formatJsonTo write the matrix's rows there, as matrixToJson would have. A tree of a few
// thousand nodes then stands for gigabytes of numbers, which stream to the file. data: row-major (rows, cols),
// alive until the text is written.
class JsonMatrices {
 public:
  struct Entry {
    const float* data;
    long rows, cols;
    std::function<Matrix()> make{};  // set: the matrix is made when written (data null), one alive at a time
  };
  nlohmann::ordered_json add(const float* data, long rows, long cols);
  // A (rows, cols) matrix made only as the text reaches it and dropped after: maps recomputed on demand stream
  // out with one in memory at a time.
  nlohmann::ordered_json addMade(long rows, long cols, std::function<Matrix()> make);
  template <typename M>
  nlohmann::ordered_json add(const M& m) {  // Matrix or a Map of one: row-major
    return add(m.data(), static_cast<long>(m.rows()), static_cast<long>(m.cols()));
  }
  const Entry& at(std::size_t i) const { return entries_.at(i); }
  std::size_t numbers() const;  // every entry's rows x cols

 private:
  std::vector<Entry> entries_;
};

// Bytes a number takes in formatJson's text, at most: 9 significant digits, a sign, a point and an exponent
// ("-1.23456789e-38") and ", ". What an output's size is bounded with before it is computed.
constexpr std::size_t kJsonBytesPerNumber = 17;

// JSON as text, indented, with each list of numbers on one line (a matrix is one row per line).
// Floats are written with the fewest digits that read back as the same float32. `matrices`: the placeholders'
// matrices, when the tree holds any.
std::string formatJson(const nlohmann::ordered_json& j, const JsonMatrices* matrices = nullptr);
// The same text, handed to `sink` about a megabyte at a time instead of built whole.
void formatJsonTo(const nlohmann::ordered_json& j, const JsonMatrices& matrices,
                  const std::function<void(std::string_view)>& sink);

}  // namespace attnscope
