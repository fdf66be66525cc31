// The family registry's rows (families.cpp): one per config.json model_type. Internal to model/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "attnscope/model/architecture.h"

namespace attnscope::model {

struct FamilyNames;  // tensor_names.h

enum class TokenizerFiles {
  VocabAndMerges,  // vocab.json + merges.txt (GPT-2's byte-level BPE)
  TokenizerJson,   // tokenizer.json (and tokenizer_config.json's BOS / EOS)
};

struct Family {
  const char* model_type;    // config.json's
  const char* display_name;  // how a person names it
  // config.json's fields checked and described; `path` names the file in every refusal.
  Architecture (*read_config)(const nlohmann::json& config, const std::string& path);
  const FamilyNames* names;  // its checkpoints' tensor names and the forward's stage names
  TokenizerFiles tokenizer;
};

// The row of `model_type`; null when attnscope does not read it.
const Family* findFamily(const std::string& model_type);
// The row a config.json names: its model_type's, GPT-2's when it names none (older GPT-2 configs do not); null
// for a model_type that is not a string or that no row has.
const Family* familyOfConfig(const nlohmann::json& config);
// Every model_type for a refusal's "expected": "gpt2, llama, ..., bert or roberta".
std::string modelTypeList();

}  // namespace attnscope::model
