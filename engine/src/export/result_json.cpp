// The Result as JSON: what `attnscope compute` writes.
#include "attnscope/export/result_json.h"

#include "attnscope/scene/scene_json.h"

namespace attnscope {

using nlohmann::ordered_json;

ordered_json resultToJson(const Scene& scene, const Result& result, JsonMatrices* streamed) {
  const auto matrixToJson = [&](const Matrix& m) { return streamed ? streamed->add(m) : attnscope::matrixToJson(m); };
  ordered_json j;
  j["tokens"]["query"] = scene.query_tokens;
  j["tokens"]["key"] = scene.keyTokens();
  ordered_json heads = ordered_json::array();
  for (std::size_t i = 0; i < result.heads.size(); ++i) {
    const HeadResult& hr = result.heads[i];
    ordered_json h;
    h["q"] = matrixToJson(hr.q);              // (n_q, d_k)
    h["k"] = matrixToJson(hr.k());              // (n_k, d_k)
    h["v"] = matrixToJson(hr.v());              // (n_k, d_v)
    h["scores"] = matrixToJson(hr.scores);    // (n_q, n_k) scaled; masked = null
    h["weights"] = matrixToJson(hr.weights);  // (n_q, n_k)
    h["output"] = matrixToJson(hr.output);    // (n_q, d_v)
    if (i < result.stats.size()) {
      h["stats"]["entropy"] = floatToJson(result.stats[i].entropy);
      h["stats"]["max_weight"] = floatToJson(result.stats[i].max_weight);
      h["stats"]["mean_distance"] = floatToJson(result.stats[i].mean_distance);
    }
    heads.push_back(std::move(h));
  }
  j["heads"] = std::move(heads);
  j["concat"] = matrixToJson(result.concat);  // (n_q, sum of d_v)
  j["output"] = matrixToJson(result.output);  // (n_q, d_model), or the concat without W_O
  if (result.similarity.cosine.size() > 0) {
    j["similarity"]["cosine"] = matrixToJson(result.similarity.cosine);  // (h, h)
    j["similarity"]["js"] = matrixToJson(result.similarity.js);          // (h, h)
  }
  j["warnings"] = result.warnings;
  return j;
}

std::size_t resultJsonBytes(const Scene& scene) {
  std::size_t label_bytes = 0;  // a byte of a label takes at most 6 in JSON ("\u0001")
  for (const std::string& t : scene.query_tokens) label_bytes += 6 * t.size() + 4;
  for (const std::string& t : scene.key_tokens) label_bytes += 6 * t.size() + 4;
  const std::size_t h = scene.heads.size();
  return (estimateResultBytes(scene) / sizeof(float) + 2 * h * h + 3 * h) * kJsonBytesPerNumber + 2 * label_bytes + 4096;
}

}  // namespace attnscope
