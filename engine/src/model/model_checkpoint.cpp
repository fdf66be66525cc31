// Loading a checkpoint folder: config.json's model_type picks the family's row (model/arch/families.cpp); its
// config reader checks and describes the config, then the row's tokenizer files are read, then the weights through
// the one loader (model/arch/loader.cpp) and the row's tensor names.
#include <utility>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/model.h"
#include "model/arch/families.h"

namespace attnscope::model {

namespace {

constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;  // real ones are under 4 KB

}  // namespace

Model loadModel(const std::string& dir, std::size_t budget_bytes) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  const std::string config_path = base + "config.json";
  const nlohmann::json j = readJsonFile(config_path, kMaxConfigBytes);
  const Family* family = familyOfConfig(j);
  if (!family) throw InputError(config_path + ": model_type", modelTypeList(), describeJson(j["model_type"]));
  // The config first (every refusal of its fields before any other file is read), then the tokenizer, then the
  // weights.
  Model m;
  m.dir = dir;
  Architecture arch = family->read_config(j, config_path);
  m.model_type = arch.model_type;
  const bool bpe_files = family->tokenizer == TokenizerFiles::VocabAndMerges;
  m.tokenizer = bpe_files ? Tokenizer::load(base + "vocab.json", base + "merges.txt") : Tokenizer::loadTokenizerJson(dir);
  if (m.tokenizer.maxId() >= arch.vocab_size)
    throw InputError(base + (bpe_files ? "vocab.json" : "tokenizer.json"),
                     "ids below vocab_size (" + std::to_string(arch.vocab_size) + ")",
                     "an id " + std::to_string(m.tokenizer.maxId()));
  m.weights = loadWeights(dir, arch, budget_bytes, bpe_files ? base + "model.safetensors" : "");
  return m;
}

}  // namespace attnscope::model
