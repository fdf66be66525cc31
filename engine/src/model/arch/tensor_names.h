// Per family, the tensor names of a checkpoint and the config fields its shapes come from (as llama.cpp's
// llama-arch.cpp keeps a name table per architecture): the loader reads through it, the forward names its stages
// with it. Internal to model/arch/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/model/architecture.h"
#include "model/arch/model_view.h"

namespace attnscope::model {

// A family's tensor names (no prefix) and the config fields its shapes come from; null: the family has none.
struct FamilyNames {
  std::vector<std::string> prefixes;
  const char *embed, *pos_embed, *final_norm, *layers;
  const char *norm1, *norm2, *q, *k, *v, *qkv, *q_norm, *k_norm, *o, *gate, *up, *down;
  const char* lm_head;  // the whole name, no prefix; null: always tied
  // config field names, for messages
  const char *f_hidden, *f_heads, *f_kv_heads, *f_inter, *f_vocab, *f_positions;
  StageNames stages;
};
extern const FamilyNames kGpt2Names, kLlamaNames, kNeoxNames, kGemmaNames, kGemma2Names, kPhi3Names, kOlmo2Names,
    kMixtralNames, kBertNames, kRobertaNames;

// Where a tensor goes once read.
enum class Slot {
  Embed, PosEmbed, FinalG, FinalB,
  // A sublayer's norms (SublayerNorms): on its input, on its branch before the add, on the sum after it.
  AttnInG, AttnInB, AttnBranchG, AttnBranchB, AttnOutG, AttnOutB,
  MlpInG, MlpInB, MlpBranchG, MlpBranchB, MlpOutG, MlpOutB,
  Q, K, V, QB, KB, VB, Qkv, QkvB, QNorm, KNorm, O, OB, Gate, Up, UpB, Down, DownB,
  GateUp, Router, ExpertGate, ExpertUp, ExpertDown,  // Phi-3's gate_up_proj, Mixtral's router and experts
  TypeEmbed, EmbedNormG, EmbedNormB,  // encoders' token_type_embeddings and embeddings.LayerNorm
  LmHead,  // checked (an untied checkpoint without it is broken), not read: maps need no logits
};

struct ExpectedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string why;  // the config fields the shape comes from, for messages
  Slot slot;
  int layer = -1;   // -1: not a layer's
  int expert = -1;  // Mixtral's expert index, for the Expert* slots
};

// Whether a tensor in `slot` is a norm's weight or bias (old BERT checkpoints name those gamma and beta).
bool isNormSlot(Slot slot);

// Every tensor `arch` implies, named with `prefix` before the body's names (GPT-2's "transformer.", Llama's
// "model.", GPT-NeoX's "gpt_neox."), in the order they are checked.
std::vector<ExpectedTensor> expectedTensors(const Architecture& arch, const std::string& prefix);

// The body prefixes a file of this family may use, the likeliest first; the loader takes the first whose
// embedding it holds (else the first, so that the missing tensor is named as most files name it).
std::vector<std::string> bodyPrefixes(const Architecture& arch);
// The embedding's name without prefix ("wte.weight").
std::string embedName(const Architecture& arch);

}  // namespace attnscope::model
