// attnscope analyze SCENE: what the heads do and whether they matter, as JSON: head-type scores, importance
// (ablation), clustering, and on request one cell's score breakdown, an ablation and a seed pitfall.
// Heads are numbered from 1 (as in export), query and key positions from 0.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "attnscope/analysis/analysis.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/scene/scene_json.h"
#include "backend_choice.h"
#include "cli/cli.h"

namespace attnscope::cli {

namespace {

using nlohmann::ordered_json;

// "1,2,3" -> {1, 2, 3}; anything but comma-separated integers throws InputError(field, expected, text).
std::vector<long> parseIntList(const std::string& field, const std::string& text, const std::string& expected) {
  std::vector<long> values;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    const long n = item.empty() ? 0 : std::strtol(item.c_str(), &end, 10);
    if (item.empty() || item.size() > 9 || *end != '\0') throw InputError(field, expected, "'" + text + "'");
    values.push_back(n);
    start = comma + 1;
  }
  return values;
}

void checkRange(const std::string& field, const std::string& what, long value, long first, long last) {
  if (value < first || value > last)
    throw InputError(field, what + " " + std::to_string(first) + " to " + std::to_string(last), std::to_string(value));
}

ordered_json vectorJson(const RowVector& v) {
  ordered_json out = ordered_json::array();
  for (Eigen::Index i = 0; i < v.size(); ++i) out.push_back(floatToJson(v[i]));
  return out;
}

ordered_json scoresJson(const Scene& scene, const Result& result, int window) {
  ordered_json heads = ordered_json::array();
  const std::vector<HeadTypeScores> scores = allHeadTypeScores(scene, result, window);
  for (std::size_t h = 0; h < scores.size(); ++h) {
    ordered_json j;
    j["head"] = h + 1;
    j["label"] = headTypeLabel(scores[h]);
    for (const std::string& name : headTypeScoreNames()) j[name] = optionalJson(headTypeScore(scores[h], name));
    if (h < result.stats.size()) j["entropy"] = floatToJson(result.stats[h].entropy);
    heads.push_back(std::move(j));
  }
  return heads;
}

// Heads by one score, highest first; heads without the score last, in head order.
ordered_json rankingJson(const Scene& scene, const Result& result, int window, const std::string& score) {
  const std::vector<HeadTypeScores> scores = allHeadTypeScores(scene, result, window);
  std::vector<int> order(scores.size());
  for (std::size_t h = 0; h < order.size(); ++h) order[h] = static_cast<int>(h);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const std::optional<double> x = headTypeScore(scores[static_cast<std::size_t>(a)], score);
    const std::optional<double> y = headTypeScore(scores[static_cast<std::size_t>(b)], score);
    return x && (!y || *x > *y);
  });
  ordered_json heads = ordered_json::array();
  for (int h : order) heads.push_back(h + 1);
  return {{"score", score}, {"heads", heads}};
}

ordered_json clusteringJson(const Result& result, ClusterMetric metric) {
  const Clustering c = clusterHeads(result.similarity, metric);
  ordered_json j;
  j["metric"] = metric == ClusterMetric::Cosine ? "cosine" : "js";
  j["distance"] = metric == ClusterMetric::Cosine ? "1 - cosine" : "Jensen-Shannon divergence (nats)";
  ordered_json order = ordered_json::array();
  for (int h : c.order) order.push_back(h + 1);
  j["order"] = order;
  ordered_json merges = ordered_json::array();
  for (const ClusterMerge& m : c.merges)
    merges.push_back({{"a", m.a + 1}, {"b", m.b + 1}, {"height", m.height}, {"size", m.size}});
  j["merges"] = merges;
  return j;
}

ordered_json cellJson(const Scene& scene, const CellBreakdown& b) {
  ordered_json j;
  j["head"] = b.head + 1;
  j["query"] = b.query;
  j["key"] = b.key;
  j["query_token"] = scene.query_tokens[static_cast<std::size_t>(b.query)];
  j["key_token"] = scene.keyTokens()[static_cast<std::size_t>(b.key)];
  ordered_json terms = ordered_json::array();
  for (const ScoreTerm& t : b.terms) terms.push_back({{"t", t.t}, {"product", t.product}});
  j["terms"] = terms;
  j["dot"] = b.dot;
  j["scale"] = b.scale;
  j["score"] = b.score;
  j["engine_score"] = b.engine_score ? floatToJson(*b.engine_score) : ordered_json(nullptr);
  j["masked"] = b.masked;
  ordered_json softmax;
  softmax["row_max"] = b.row_max;
  softmax["exp_sum"] = b.exp_sum;
  softmax["weight"] = b.weight;
  softmax["engine_weight"] = floatToJson(b.engine_weight);
  ordered_json keys = ordered_json::array();
  for (const SoftmaxEntry& e : b.row)
    keys.push_back({{"key", e.key},
                    {"token", scene.keyTokens()[static_cast<std::size_t>(e.key)]},
                    {"masked", e.masked},
                    {"score", e.masked ? ordered_json(nullptr) : ordered_json(e.score)},
                    {"exp", e.exp},
                    {"weight", e.weight}});
  softmax["keys"] = keys;
  j["softmax"] = softmax;
  if (b.query_products.size() > 0) {
    j["input_side"] = {{"q", vectorJson(b.q)},
                       {"k", vectorJson(b.k)},
                       {"query_products", matrixToJson(b.query_products)},
                       {"key_products", matrixToJson(b.key_products)},
                       {"query_bias", vectorJson(b.query_bias)},
                       {"key_bias", vectorJson(b.key_bias)}};
  } else {
    j["input_side"] = nullptr;
  }
  return j;
}

ordered_json ablationJson(const AblationResult& ab) {
  ordered_json heads = ordered_json::array();
  for (int h : ab.heads) heads.push_back(h + 1);
  return {{"mode", ablationModeName(ab.mode)},
          {"heads", heads},
          {"query_change", ab.query_change},
          {"total_change", ab.total_change},
          {"output", matrixToJson(ab.output)}};
}

ordered_json pitfallJson(const PitfallResult& r) {
  const PitfallInfo& info = pitfallInfo(r.pitfall);
  ordered_json j;
  j["name"] = info.name;
  j["source"] = info.source;
  j["what"] = info.what;
  j["note"] = r.note;
  ordered_json heads = ordered_json::array();
  for (std::size_t h = 0; h < r.weights.size(); ++h)
    heads.push_back({{"head", h + 1},
                     {"entropy", r.entropy[h]},
                     {"correct_entropy", r.correct_entropy[h]},
                     {"max_abs_weight_diff", r.max_abs_weight_diff[h]},
                     {"weights", matrixToJson(r.weights[h])},
                     {"weight_diff", matrixToJson(r.weight_diff[h])}});
  j["heads"] = heads;
  j["output"] = r.output ? matrixToJson(*r.output) : ordered_json(nullptr);
  j["output_diff"] = r.output_diff ? matrixToJson(*r.output_diff) : ordered_json(nullptr);
  j["max_abs_output_diff"] = r.max_abs_output_diff;
  return j;
}

}  // namespace

int runAnalyze(Args& args) {
  const std::string backend_name = args.takeChoice("--backend", {"cpu", "gpu", "auto"}, "cpu");
  const std::optional<std::string> cell = args.take("--cell");
  const std::optional<std::string> ablate = args.take("--ablate");
  const AblationMode mode = parseAblationMode(args.takeChoice("--ablation", {"zero", "mean"}, "zero"));
  std::vector<std::string> pitfall_names;
  for (const PitfallInfo& p : pitfallList()) pitfall_names.push_back(p.name);
  const std::string pitfall = args.takeChoice("--pitfall", pitfall_names, "");
  const ClusterMetric metric = parseClusterMetric(args.takeChoice("--metric", {"cosine", "js"}, "cosine"));
  const int window = static_cast<int>(args.takeInt("--window", kDefaultLocalWindow, 0, 1000000));
  const std::string sort = args.takeChoice("--sort", headTypeScoreNames(), "");
  const std::optional<std::string> out_path = args.take("--out", "-o");
  const std::vector<std::string> files = args.positionals(1);
  if (files.empty()) throw InputError("analyze", "a scene file (attnscope analyze SCENE)", "none");

  const Scene scene = loadSceneFile(files[0]);
  // Indices are checked before computing, so bad input costs nothing.
  const int h = scene.numHeads();
  std::vector<long> cell_index, ablate_heads;
  if (cell) {
    cell_index = parseIntList("--cell", *cell, "H,I,J: head from 1, query and key positions from 0");
    if (cell_index.size() != 3)
      throw InputError("--cell", "H,I,J: head from 1, query and key positions from 0", "'" + *cell + "'");
    checkRange("--cell", "head", cell_index[0], 1, h);
    checkRange("--cell", "query position", cell_index[1], 0, scene.nQ() - 1);
    checkRange("--cell", "key position", cell_index[2], 0, scene.nK() - 1);
  }
  if (ablate) {
    if (ablate->empty()) throw InputError("--ablate", "at least one head, numbered from 1", "an empty list");
    ablate_heads = parseIntList("--ablate", *ablate, "head numbers from 1, separated by commas");
    for (long a : ablate_heads) checkRange("--ablate", "head", a, 1, h);
  }

  // Maps are kept while they fit mapsLimitBytes(); past it every score, statistic and the cell streams through
  // tiles (O(n d) memory), and only the pitfall, whose output is whole maps, is refused.
  ComputeOptions options;
  options.maps = MapPolicy::Auto;
  if (!pitfall.empty() && !keepsMaps(scene, options))
    throw InputError("--pitfall", "a scene whose maps fit " + byteString(mapsLimitBytes()) +
                                      " (ATTNSCOPE_MAPS_LIMIT): its output is every head's whole map",
                     byteString(mapBytes(scene, options.keep_scores)) + " of maps");

  std::vector<std::string> warnings;
  const std::unique_ptr<Backend> backend = makeBackend(backend_name, 0, warnings);
  const Result result = backend->compute(scene, options);
  warnings.insert(warnings.end(), result.warnings.begin(), result.warnings.end());
  for (const std::string& w : warnings) std::fprintf(stderr, "attnscope: warning: %s\n", w.c_str());

  ordered_json out;
  out["backend"] = backend->name();
  out["device"] = backend->device();
  out["heads"] = h;
  out["tokens"] = {{"query", scene.query_tokens}, {"key", scene.keyTokens()}};
  out["local_window"] = window;
  out["scores"] = scoresJson(scene, result, window);
  if (!sort.empty()) out["ranking"] = rankingJson(scene, result, window, sort);
  out["importance"] = {{"ablation", ablationModeName(mode)}, {"per_head", headImportance(scene, result, mode)}};
  out["clustering"] = clusteringJson(result, metric);
  if (cell)
    out["cell"] = cellJson(scene, scoreBreakdown(scene, result, static_cast<int>(cell_index[0] - 1),
                                                 static_cast<int>(cell_index[1]), static_cast<int>(cell_index[2])));
  if (ablate) {
    std::vector<int> heads;
    for (long a : ablate_heads) heads.push_back(static_cast<int>(a - 1));
    out["ablation"] = ablationJson(ablateHeads(scene, result, heads, mode));
  }
  if (!pitfall.empty()) out["pitfall"] = pitfallJson(applyPitfall(scene, result, parsePitfall(pitfall)));

  writeOutput(formatJson(out), out_path);
  return 0;
}

}  // namespace attnscope::cli
