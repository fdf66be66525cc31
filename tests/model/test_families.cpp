// The family registry (engine/src/model/arch/families.cpp): every row's display name, and the refusal of a
// model_type no row has, naming every one a config may give (the list written out here, not read from the code).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "attnscope/error.h"
#include "attnscope/model/families.h"
#include "attnscope/model/model.h"

namespace model = attnscope::model;

TEST(Families, DisplayNames) {
  EXPECT_EQ(model::familyDisplayName("gpt2"), "GPT-2");
  EXPECT_EQ(model::familyDisplayName("gpt_neox"), "GPT-NeoX");
  EXPECT_EQ(model::familyDisplayName("gemma2"), "Gemma 2");
  EXPECT_EQ(model::familyDisplayName("gemma3_text"), "Gemma 3");
  EXPECT_EQ(model::familyDisplayName("olmo2"), "OLMo 2");
  EXPECT_EQ(model::familyDisplayName("roberta"), "RoBERTa");
  EXPECT_EQ(model::familyDisplayName("gpt3"), "gpt3");  // no row: the model_type as given
  for (const std::string& type : model::modelTypes())
    EXPECT_NE(model::familyDisplayName(type), type) << type << " has a row, so a name of its own";
}

TEST(Families, AnUnknownModelTypeIsRefusedNamingEveryRow) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "attnscope_families_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt3"})";
  try {
    (void)model::loadModel(dir.string());
    ADD_FAILURE() << "a gpt3 config loaded";
  } catch (const attnscope::InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("config.json: model_type"), std::string::npos) << m;
    EXPECT_NE(m.find("gpt2, llama, mistral, qwen2, qwen3, gpt_neox, gemma, gemma2, gemma3_text, gemma3, phi3, olmo2, "
                     "mixtral, bert or roberta"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("got string 'gpt3'"), std::string::npos) << m;
  }
  std::filesystem::remove_all(dir);
}
