// BERT's and RoBERTa's config.json (model_type bert, roberta) as a description, each field the forward depends on
// checked against what transformers' BertConfig / RobertaConfig and their modeling files accept, defaulted as they
// default it: the first encoders (every query sees every key), learned absolute positions plus token type 0 with
// a LayerNorm on the sum, post-norm layers (x = LN(x + attn(x)); x = LN(x + mlp(x))), GELU, biases everywhere.
// RoBERTa's positions start after its padding index (create_position_ids_from_input_ids).
#include <string>

#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/model/family_configs.h"
#include "model/arch/configs/config_fields.h"

namespace attnscope::model {

Architecture encoderArchitectureFromJson(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path, "a JSON object", describeJson(j));
  const bool roberta = j.contains("model_type") && j["model_type"] == "roberta";
  if (!j.contains("model_type") || !(roberta || j["model_type"] == "bert"))
    throw InputError(path + ": model_type", "bert or roberta",
                     j.contains("model_type") ? describeJson(j["model_type"]) : "nothing");
  Architecture a;
  a.model_type = roberta ? "roberta" : "bert";
  a.hidden = intField(j, path, "hidden_size", 1, 1 << 16);
  a.n_layer = intField(j, path, "num_hidden_layers", 1, 1000);
  a.n_head = intField(j, path, "num_attention_heads", 1, 256);
  a.n_kv_head = a.n_head;
  if (a.hidden % a.n_head != 0)  // BertSelfAttention raises the same
    throw InputError(path + ": hidden_size", "a multiple of num_attention_heads (" + std::to_string(a.n_head) + ")",
                     std::to_string(a.hidden));
  a.head_dim = a.hidden / a.n_head;
  a.intermediate = intField(j, path, "intermediate_size", 1, 1 << 20);
  a.vocab_size = intField(j, path, "vocab_size", 1, 10'000'000);
  const int positions = intField(j, path, "max_position_embeddings", 1, 1 << 24);
  a.max_positions_field = "max_position_embeddings";
  // relative_key / relative_key_query add a distance embedding to the scores: not this forward's maths.
  const nlohmann::json kind =
      has(j, "position_embedding_type") ? j["position_embedding_type"] : nlohmann::json("absolute");
  if (kind != "absolute")
    throw InputError(path + ": position_embedding_type", "absolute (the only position kind attnscope implements)",
                     describeJson(kind));
  if (boolField(j, path, "is_decoder", false))  // BertModel with is_decoder masks causally: not an encoder
    throw InputError(path + ": is_decoder", "false (attnscope reads bert and roberta as encoders)", "true");
  a.type_vocab_size = intField(j, path, "type_vocab_size", 1, 1 << 16, 2);
  a.learned_positions = true;
  if (roberta) {  // positions padding_idx + 1 ...: max_position_embeddings - padding_idx - 1 tokens
    const int pad = intField(j, path, "pad_token_id", 0, a.vocab_size - 1, 1);
    if (positions <= pad + 1)
      throw InputError(path + ": max_position_embeddings",
                       "more than pad_token_id + 1 (" + std::to_string(pad + 1) +
                           ": RoBERTa's positions start after it)",
                       std::to_string(positions));
    a.position_offset = pad + 1;
    a.max_positions = positions - a.position_offset;
  } else {
    a.max_positions = positions;
  }

  a.causal = false;
  a.embed_norm = true;
  a.norm = NormKind::LayerNorm;
  a.norm_bias = true;
  a.norm_eps = positiveNumber(j, path + ": ", "layer_norm_eps", 1.0, 1e-12);
  a.residual = Residual::PostNorm;
  a.qkv = QkvStorage::Separate;
  a.qkv_bias = a.o_bias = a.mlp_bias = true;
  a.mlp = MlpKind::Plain;
  const nlohmann::json act = has(j, "hidden_act") ? j["hidden_act"] : nlohmann::json("gelu");
  if (act == "gelu") a.activation = Activation::GeluErf;
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") a.activation = Activation::GeluTanh;
  else
    throw InputError(path + ": hidden_act",
                     "gelu, gelu_new, gelu_pytorch_tanh or gelu_fast (the GELUs attnscope implements)", describeJson(act));
  a.tie_word_embeddings = true;  // the MLM head is never read
  a.window.assign(static_cast<std::size_t>(a.n_layer), 0);
  return a;
}

}  // namespace attnscope::model
