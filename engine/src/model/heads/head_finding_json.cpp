// The head-finding analysis as JSON: score maps [layer][head] and composition [layer][head][layer][head].
#include "attnscope/model/head_finding.h"

namespace attnscope::model {

nlohmann::ordered_json headScoresJson(const std::vector<std::vector<HeadTypeScores>>& scores) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const std::string& name : headTypeScoreNames()) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const std::vector<HeadTypeScores>& layer : scores) {
      nlohmann::ordered_json heads = nlohmann::ordered_json::array();
      for (const HeadTypeScores& s : layer) {
        const std::optional<double> v = headTypeScore(s, name);
        heads.push_back(v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr));
      }
      layers.push_back(std::move(heads));
    }
    j[name] = std::move(layers);
  }
  return j;
}

nlohmann::ordered_json compositionJson(const Composition& c) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  const std::pair<const char*, const std::vector<double>*> modes[] = {{"q", &c.q}, {"k", &c.k}, {"v", &c.v}};
  for (const auto& [name, mode] : modes) {
    nlohmann::ordered_json la = nlohmann::ordered_json::array();
    for (int l = 0; l < c.n_layer; ++l) {
      nlohmann::ordered_json ha = nlohmann::ordered_json::array();
      for (int h = 0; h < c.n_head; ++h) {
        nlohmann::ordered_json lb = nlohmann::ordered_json::array();
        for (int l2 = 0; l2 < c.n_layer; ++l2) {
          nlohmann::ordered_json hb = nlohmann::ordered_json::array();
          for (int h2 = 0; h2 < c.n_head; ++h2) hb.push_back(c.at(*mode, l, h, l2, h2));
          lb.push_back(std::move(hb));
        }
        ha.push_back(std::move(lb));
      }
      la.push_back(std::move(ha));
    }
    j[name] = std::move(la);
  }
  return j;
}

}  // namespace attnscope::model
