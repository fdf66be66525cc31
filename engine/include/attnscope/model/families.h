// The families attnscope reads, one row per config.json model_type (model/arch/families.cpp), as llama.cpp keeps
// LLM_ARCH_NAMES: what the window, the command line and the messages say of a family come from here, never from a
// branch on its name. Loading (loadModel) reads the same rows: the config reader, the tensor names, the tokenizer.
#pragma once

#include <string>
#include <vector>

namespace attnscope::model {

// The model_type values a config.json may give, in the registry's order (gpt2 first).
std::vector<std::string> modelTypes();
// "GPT-2", "Llama", "Gemma 2"...: how a family is named to a person; the model_type itself when no row has it.
std::string familyDisplayName(const std::string& model_type);

}  // namespace attnscope::model
