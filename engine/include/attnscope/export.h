// Exporters: heatmaps of a Result as PNG or SVG (title, token labels on both axes, colour bar, optional
// value annotations), and the numbers as CSV or NPY. Every file is written atomically.
#pragma once

#include <string>
#include <vector>

#include "attnscope/result.h"
#include "attnscope/scene.h"

namespace attnscope {

enum class ExportWhat { Head, Heads, Similarity };
enum class ExportFormat { Png, Svg, Csv, Npy };
enum class SimilarityMetric { Cosine, JensenShannon };

struct ExportRequest {
  ExportWhat what = ExportWhat::Heads;
  int head = 0;  // for ExportWhat::Head
  ExportFormat format = ExportFormat::Png;
  SimilarityMetric metric = SimilarityMetric::Cosine;
  bool annotate = false;  // write each cell's value in the cell (as seaborn's annot=True)
  std::string path;
};

// Throws InputError for a head out of range, an unwritable path, etc.; never leaves a partial file.
void exportResult(const Scene& scene, const Result& result, const ExportRequest& request);

}  // namespace attnscope
