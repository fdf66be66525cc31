// The family registry: one row per config.json model_type, with its display name, its config reader
// (family_configs.h), its tensor-name table (tensor_names.cpp) and its tokenizer's files. Adding a family is a row
// here, a config reader, a name table and its reference test (tests/model/test_families.cpp).
#include "model/arch/families.h"

#include <array>

#include "attnscope/model/families.h"
#include "attnscope/model/family_configs.h"
#include "model/arch/tensor_names.h"

namespace attnscope::model {

namespace {

Architecture readGpt2(const nlohmann::json& j, const std::string& path) {
  return describeGpt2(gpt2ConfigFromJson(j, path));
}
Architecture readLlama(const nlohmann::json& j, const std::string& path) {
  return describeLlama(llamaConfigFromJson(j, path));
}

constexpr TokenizerFiles kBpeFiles = TokenizerFiles::VocabAndMerges, kJson = TokenizerFiles::TokenizerJson;

const std::array<Family, 15> kFamilies = {{
    {"gpt2", "GPT-2", readGpt2, &kGpt2Names, kBpeFiles},
    {"llama", "Llama", readLlama, &kLlamaNames, kJson},
    {"mistral", "Mistral", readLlama, &kLlamaNames, kJson},
    {"qwen2", "Qwen2", readLlama, &kLlamaNames, kJson},
    {"qwen3", "Qwen3", readLlama, &kLlamaNames, kJson},
    {"gpt_neox", "GPT-NeoX", neoxArchitectureFromJson, &kNeoxNames, kJson},
    {"gemma", "Gemma", gemmaArchitectureFromJson, &kGemmaNames, kJson},
    {"gemma2", "Gemma 2", gemmaArchitectureFromJson, &kGemma2Names, kJson},
    {"gemma3_text", "Gemma 3", gemmaArchitectureFromJson, &kGemma2Names, kJson},
    {"gemma3", "Gemma 3", gemmaArchitectureFromJson, &kGemma2Names, kJson},  // its text_config: gemma3_text
    {"phi3", "Phi-3", llamaKinArchitectureFromJson, &kPhi3Names, kJson},
    {"olmo2", "OLMo 2", llamaKinArchitectureFromJson, &kOlmo2Names, kJson},
    {"mixtral", "Mixtral", llamaKinArchitectureFromJson, &kMixtralNames, kJson},
    {"bert", "BERT", encoderArchitectureFromJson, &kBertNames, kJson},
    {"roberta", "RoBERTa", encoderArchitectureFromJson, &kRobertaNames, kJson},
}};

}  // namespace

const Family* findFamily(const std::string& model_type) {
  for (const Family& f : kFamilies)
    if (model_type == f.model_type) return &f;
  return nullptr;
}

const Family* familyOfConfig(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("model_type")) return &kFamilies[0];  // GPT-2
  return j["model_type"].is_string() ? findFamily(j["model_type"].get<std::string>()) : nullptr;
}

std::string modelTypeList() {
  std::string s;
  for (std::size_t i = 0; i < kFamilies.size(); ++i)
    s += std::string(i == 0 ? "" : i + 1 == kFamilies.size() ? " or " : ", ") + kFamilies[i].model_type;
  return s;
}

std::vector<std::string> modelTypes() {
  std::vector<std::string> types;
  for (const Family& f : kFamilies) types.emplace_back(f.model_type);
  return types;
}

std::string familyDisplayName(const std::string& model_type) {
  const Family* f = findFamily(model_type);
  return f ? f->display_name : model_type;
}

}  // namespace attnscope::model
