// The family table every per-family test runs over: each row a tiny random checkpoint that a family's
// tests/model/*_reference.py writes in the family's own tensor names, with expected.json from a NumPy float64
// forward written from transformers' modeling_*.py. The CPU forward's rows (test_family_references.cpp) and the
// GPU forward's (tests/gpu/test_gpu_forward.cpp) are the same rows: a new family is a row here.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "model/test_model_support.h"

namespace model_test {

struct FamilyRow {
  const char* model_type;  // what config.json names, checked after loading
  const char* script;      // tests/model/SCRIPT writes the checkpoint and expected.json
  const char* args;
  const std::string* text;
};

// gtest's name for a row in a failure (rather than the struct's bytes).
inline void PrintTo(const FamilyRow& r, std::ostream* out) { *out << r.script << " " << r.args; }

// gtest's name for a row's case: its index and model_type.
inline std::string familyRowName(const ::testing::TestParamInfo<FamilyRow>& row) {
  return std::to_string(row.index) + "_" + row.param.model_type;
}

// The row's checkpoint, written by its script into a fresh folder.
inline std::string checkpointOf(const FamilyRow& r) {
  return referenceCheckpoint(r.script, std::string(r.args) + " --text '" + *r.text + "'");
}

inline const std::vector<FamilyRow> kFamilyRows = {
    // Llama: sharded into 3 files, GQA 4 query heads on 2 kv heads, Llama 3.1's rope scaling, q/k/v/o biases
    FamilyRow{"llama", "llama_reference.py",
              "--family llama --shards 3 --rope-scaling llama3 --attention-bias --rope-theta 500000", &kShort},
    // Mistral: BF16, a sliding window of 5 over 151 tokens, MQA (4 query heads on 1 kv head)
    FamilyRow{"mistral", "llama_reference.py", "--family mistral --dtype BF16 --window 5 --kv-heads 1 --positions 256",
              &kLong},
    // Qwen2: F16, q/k/v biases, tied embeddings, linear rope scaling, a window of 7 from layer 2 on
    FamilyRow{"qwen2", "llama_reference.py",
              "--family qwen2 --dtype F16 --tie --rope-scaling linear --window 7 --layers 3 --positions 256", &kLong},
    // Qwen3: head_dim 12 != 32 / 4, q_norm and k_norm before RoPE, GQA 2 per kv head
    FamilyRow{"qwen3", "llama_reference.py", "--family qwen3 --head-dim 12 --seed 5", &kShort},
    // Pythia (GPT-NeoX): parallel residual, rotary_pct 0.25 (4 of 16 dims), erf GELU, biases
    FamilyRow{"gpt_neox", "neox_reference.py", "", &kShort},
    // sequential residual, BF16, half the dims rotating, transformers 5's rope_parameters, 151 tokens
    FamilyRow{"gpt_neox", "neox_reference.py", "--sequential --dtype BF16 --rotary-pct 0.5 --v5 --positions 256",
              &kLong},
    // every dim rotating on base 500, tanh GELU, no attention biases, F16
    FamilyRow{"gpt_neox", "neox_reference.py",
              "--rotary-pct 1 --rotary-base 500 --act gelu_new --no-attention-bias --dtype F16", &kShort},
    // Gemma 1: head_dim 16 of hidden 48 / 4 heads, GQA 4:2, scores by head_dim^-1/2, (1 + w) norms, bf16 sqrt(48)
    FamilyRow{"gemma", "gemma_reference.py", "--family gemma", &kShort},
    // Gemma 2 in BF16: soft cap 3, query_pre_attn_scalar 24, sandwich norms, layer 0 local (window 5), 151 tokens
    FamilyRow{"gemma2", "gemma_reference.py", "--family gemma2 --dtype BF16 --softcap 3", &kLong},
    // Gemma 2, F16, no soft cap, layer_types: global then local, sqrt(48) in float16, transformers 5's config
    FamilyRow{"gemma2", "gemma_reference.py", "--family gemma2 --dtype F16 --layer-types fs --torch-dtype float16 --v5",
              &kLong},
    // Gemma 3: q/k norms, 3 layers with pattern 3 (local, local, global), local base 10000, global 1e6 with
    // linear scaling 4
    FamilyRow{"gemma3_text", "gemma_reference.py",
              "--family gemma3_text --layers 3 --pattern 3 --rope-theta 1000000 --linear-scaling 4", &kLong},
    // Gemma 3's multimodal config (model_type gemma3; the text model inside, read from text_config and
    // language_model.model.*, is gemma3_text), v5's per-layer-type rope_parameters, layer_types sfs, MQA,
    // float32 scale
    FamilyRow{"gemma3_text", "gemma_reference.py",
              "--family gemma3 --layers 3 --layer-types sfs --kv-heads 1 --rope-theta 50000 --local-theta 300 --v5 "
              "--torch-dtype float32",
              &kLong},
    // Phi-3: every dim rotating, grouped heads (4 query, 2 kv)
    FamilyRow{"phi3", "llama_kin_reference.py", "--family phi3", &kShort},
    // Phi-3: partial rotary 0.5 (8 of 16 dims), a 40-key sliding window, BF16, transformers 5's rope_parameters
    FamilyRow{"phi3", "llama_kin_reference.py", "--family phi3 --rotary 0.5 --window 40 --dtype BF16 --v5 --theta 500",
              &kLong},
    // OLMo 2: whole-projection q/k norms, post norms; 4 kv heads (no grouping), F16
    FamilyRow{"olmo2", "llama_kin_reference.py", "--family olmo2 --kv-heads 4 --dtype F16", &kShort},
    FamilyRow{"olmo2", "llama_kin_reference.py", "--family olmo2 --v5 --theta 500000", &kLong},
    // Mixtral: 4 experts, top 2, grouped heads
    FamilyRow{"mixtral", "llama_kin_reference.py", "--family mixtral", &kShort},
    // Mixtral: top 1, 3 experts, a 50-key window, BF16
    FamilyRow{"mixtral", "llama_kin_reference.py", "--family mixtral --topk 1 --experts 3 --window 50 --dtype BF16",
              &kLong},
    // BERT: BertForMaskedLM's names (bert.*, the cls.predictions head and the pooler unread), erf GELU, F32
    FamilyRow{"bert", "bert_reference.py", "", &kEncoderShort},
    // BertModel's bare names, older gamma / beta LayerNorms, BF16, tanh GELU, 3 layers, 131 tokens
    FamilyRow{"bert", "bert_reference.py",
              "--no-prefix --gamma-beta --dtype BF16 --act gelu_new --layers 3 --positions 256", &kEncoderLong},
    // RoBERTa (positions from padding_idx + 1 = 2), F16, one token type
    FamilyRow{"roberta", "bert_reference.py", "--family roberta --dtype F16 --types 1", &kEncoderShort}};

}  // namespace model_test
