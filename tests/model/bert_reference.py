#!/usr/bin/env python3
"""Tiny BERT and RoBERTa checkpoints (model_type bert, roberta) for attnscope's tests, and an independent NumPy
float64 forward on them, written from transformers' modeling_bert.py and modeling_roberta.py, not from attnscope's
C++:
- BertEmbeddings: word_embeddings(ids) + token_type_embeddings(0) + position_embeddings(position ids), then
  LayerNorm (eps layer_norm_eps). BERT's position ids are 0..n-1; RoBERTa's come from
  create_position_ids_from_input_ids: mask = ids != padding_idx, cumsum(mask) * mask + padding_idx (padding tokens
  at padding_idx, the others from padding_idx + 1).
- BertSelfAttention: query, key, value nn.Linear; scores q k^T / sqrt(head_size), NO causal mask (an encoder; the
  all-ones attention mask adds 0), softmax.
- BertSelfOutput: LayerNorm(dense(context) + input); BertIntermediate: gelu(dense(x)) (erf gelu; gelu_new tanh);
  BertOutput: LayerNorm(dense(h) + attention_output). No final norm.

Usage: bert_reference.py OUT_DIR [--family bert|roberta] [--dtype F32|F16|BF16] [--layers L] [--heads H]
       [--hidden D] [--inter I] [--positions P] [--types T] [--pad P] [--act gelu|gelu_new] [--gamma-beta]
       [--no-prefix] [--text TEXT | --ids 0,5,1,...] [--seed S] [--bad-query]
Writes OUT_DIR/{config.json, model.safetensors, tokenizer.json} in the exact tensor names (BertForMaskedLM:
bert.* plus the cls.predictions.* head and the pooler, which attnscope never reads; --no-prefix: BertModel's names)
and OUT_DIR/expected.json: {"ids", "weights": [L][H][n][n], "hidden": [n][d], "rollout": [n][n]}, float64.
The tokenizer.json is a WordPiece one as `tokenizers` serialises bert-base-uncased's (BertNormalizer,
BertPreTokenizer, [CLS] $A [SEP], the WordPiece decoder) over a small vocabulary; the ids of --text come from the
tokenisation written here (lowercase, split at whitespace and punctuation, greedy longest-match-first WordPiece).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_reference import layer_norm, rollout, write_safetensors  # noqa: E402  (shared helpers)
from llama_reference import head_value_norms  # noqa: E402  (shared helper)

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["hello", "there", "attention", "head", "encoder", "the", "every", "key", "sees", "query"]
PUNCT = list(",.!?'-")
CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789")


def vocabulary():
    """token -> id: the specials, whole words, single characters, their ## continuations, punctuation."""
    tokens = SPECIALS + WORDS + CHARS + ["##" + c for c in CHARS] + ["##s", "##ing"] + PUNCT
    return {t: i for i, t in enumerate(dict.fromkeys(tokens))}


def wordpiece_ids(text, vocab):
    """[CLS] + BERT's basic tokenisation (lowercase ASCII, whitespace and punctuation splits) + WordPiece + [SEP]."""
    words, cur = [], ""
    for ch in text.lower():
        if ch.isspace() or ch in PUNCT or not ch.isalnum():
            if cur:
                words.append(cur)
            cur = ""
            if not ch.isspace():
                words.append(ch)
        else:
            cur += ch
    if cur:
        words.append(cur)
    ids = [vocab["[CLS]"]]
    for word in words:
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                sub = ("##" if start else "") + word[start:end]
                if sub in vocab:
                    break
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(vocab[sub])
            start = end
        ids += pieces
    return ids + [vocab["[SEP]"]]


def tokenizer_json(vocab):
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for t in SPECIALS],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }


def gelu(x, act):
    if act == "gelu":  # nn.functional.gelu, the exact erf form
        return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))  # gelu_new


def position_ids(ids, cfg):
    if cfg["model_type"] != "roberta":
        return np.arange(len(ids))
    pad = cfg["pad_token_id"]
    mask = (np.asarray(ids) != pad).astype(np.int64)
    return np.cumsum(mask) * mask + pad


def forward(w, cfg, ids, p, value_norms=None, edit_residual=None, edit_heads=None, edit_mlp=None):
    """(maps (L, H, n, n), the last layer's output (n, d)) in float64. w: name -> array (PyTorch layouts); p the
    body's prefix ("bert.", "roberta." or ""). edit_residual(layer, x), edit_heads(layer, context before
    attention.output.dense), edit_mlp(layer, output.dense's result before its add and LayerNorm): interventions
    (patching_reference.py)."""
    H, d = cfg["num_attention_heads"], cfg["hidden_size"]
    hd, n, eps = d // H, len(ids), cfg["layer_norm_eps"]

    def norm(t, name):
        g = w.get(name + ".weight", w.get(name + ".gamma"))
        b = w.get(name + ".bias", w.get(name + ".beta"))
        return layer_norm(t, g, b, eps)

    def lin(t, name):
        return t @ w[name + ".weight"].T + w[name + ".bias"]

    e = p + "embeddings."
    x = (w[e + "word_embeddings.weight"][ids] + w[e + "token_type_embeddings.weight"][0] +
         w[e + "position_embeddings.weight"][position_ids(ids, cfg)])
    x = norm(x, e + "LayerNorm")
    maps = []
    for layer in range(cfg["num_hidden_layers"]):
        q_ = p + f"encoder.layer.{layer}."
        if edit_residual is not None:
            x = edit_residual(layer, x)

        def heads(t):
            return t.reshape(n, H, hd).transpose(1, 0, 2)  # (H, n, hd)

        q = heads(lin(x, q_ + "attention.self.query"))
        k = heads(lin(x, q_ + "attention.self.key"))
        v = heads(lin(x, q_ + "attention.self.value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)  # no mask: every query sees every key
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        a = s / s.sum(axis=-1, keepdims=True)
        maps.append(a)
        if value_norms is not None:  # before the output LayerNorm: what each head writes into the dense sum
            value_norms.append(head_value_norms(v, w[q_ + "attention.output.dense.weight"]))
        context = (a @ v).transpose(1, 0, 2).reshape(n, d)
        if edit_heads is not None:
            context = edit_heads(layer, context)
        x = norm(lin(context, q_ + "attention.output.dense") + x, q_ + "attention.output.LayerNorm")
        h = gelu(lin(x, q_ + "intermediate.dense"), cfg["hidden_act"])
        m = lin(h, q_ + "output.dense")
        if edit_mlp is not None:
            m = edit_mlp(layer, m)
        x = norm(m + x, q_ + "output.LayerNorm")
    return np.stack(maps), x


def masked_lm_transform(w, cfg, h):
    """BertForMaskedLM's cls.predictions.transform (dense, hidden_act, LayerNorm) or RobertaForMaskedLM's lm_head
    (dense, erf GELU, layer_norm), before the tied word embeddings and the bias."""
    roberta = cfg["model_type"] == "roberta"
    dense, ln = ("lm_head.dense", "lm_head.layer_norm") if roberta else \
        ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm")
    t = gelu(h @ w[dense + ".weight"].T + w[dense + ".bias"], "gelu" if roberta else cfg["hidden_act"])
    g = w.get(ln + ".weight", w.get(ln + ".gamma"))
    b = w.get(ln + ".bias", w.get(ln + ".beta"))
    return layer_norm(t, g, b, cfg["layer_norm_eps"])


def make_weights(a, rng, p, vocab_size, positions):
    d, inter = a.hidden, a.inter
    s = d ** -0.5
    g, b = ("gamma", "beta") if a.gamma_beta else ("weight", "bias")
    e = p + "embeddings."
    w = {e + "word_embeddings.weight": rng.normal(0, 1.0, (vocab_size, d)),
         e + "position_embeddings.weight": rng.normal(0, 0.5, (positions, d)),
         e + "token_type_embeddings.weight": rng.normal(0, 0.5, (a.types, d)),
         e + "LayerNorm." + g: 1 + rng.normal(0, 0.1, d), e + "LayerNorm." + b: rng.normal(0, 0.1, d)}
    for layer in range(a.layers):
        q = p + f"encoder.layer.{layer}."
        # query and key rows larger than value's, so that the maps are far from uniform
        w[q + "attention.self.query.weight"] = rng.normal(0, 1.5 * s, (d // 2 if a.bad_query else d, d))
        w[q + "attention.self.query.bias"] = rng.normal(0, 0.3, d)
        w[q + "attention.self.key.weight"] = rng.normal(0, 1.5 * s, (d, d))
        w[q + "attention.self.key.bias"] = rng.normal(0, 0.3, d)
        w[q + "attention.self.value.weight"] = rng.normal(0, s, (d, d))
        w[q + "attention.self.value.bias"] = rng.normal(0, 0.1, d)
        w[q + "attention.output.dense.weight"] = rng.normal(0, s, (d, d))
        w[q + "attention.output.dense.bias"] = rng.normal(0, 0.1, d)
        w[q + "attention.output.LayerNorm." + g] = 1 + rng.normal(0, 0.1, d)
        w[q + "attention.output.LayerNorm." + b] = rng.normal(0, 0.1, d)
        w[q + "intermediate.dense.weight"] = rng.normal(0, s, (inter, d))
        w[q + "intermediate.dense.bias"] = rng.normal(0, 0.1, inter)
        w[q + "output.dense.weight"] = rng.normal(0, inter ** -0.5, (d, inter))
        w[q + "output.dense.bias"] = rng.normal(0, 0.1, d)
        w[q + "output.LayerNorm." + g] = 1 + rng.normal(0, 0.1, d)
        w[q + "output.LayerNorm." + b] = rng.normal(0, 0.1, d)
    if p == "bert.":  # BertForMaskedLM's head (read for a metric: patching) and BertModel's pooler (never read)
        w[p + "pooler.dense.weight"] = rng.normal(0, s, (d, d))
        w[p + "pooler.dense.bias"] = rng.normal(0, 0.1, d)
        w["cls.predictions.bias"] = rng.normal(0, 0.1, vocab_size)
        w["cls.predictions.transform.dense.weight"] = rng.normal(0, s, (d, d))
        w["cls.predictions.transform.dense.bias"] = rng.normal(0, 0.1, d)
        w["cls.predictions.transform.LayerNorm." + g] = 1 + rng.normal(0, 0.1, d)
        w["cls.predictions.transform.LayerNorm." + b] = rng.normal(0, 0.1, d)
    elif p:  # RobertaForMaskedLM's lm_head (its decoder tied to the word embeddings)
        w["lm_head.bias"] = rng.normal(0, 0.1, vocab_size)
        w["lm_head.dense.weight"] = rng.normal(0, s, (d, d))
        w["lm_head.dense.bias"] = rng.normal(0, 0.1, d)
        w["lm_head.layer_norm.weight"] = 1 + rng.normal(0, 0.1, d)
        w["lm_head.layer_norm.bias"] = rng.normal(0, 0.1, d)
    return w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--family", default="bert", choices=["bert", "roberta"])
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--inter", type=int, default=128)
    ap.add_argument("--positions", type=int, default=64)
    ap.add_argument("--types", type=int, default=2)
    ap.add_argument("--pad", type=int, default=1)  # RoBERTa's pad_token_id
    ap.add_argument("--act", default="gelu", choices=["gelu", "gelu_new"])
    ap.add_argument("--gamma-beta", action="store_true")  # older checkpoints' LayerNorm names
    ap.add_argument("--no-prefix", action="store_true")   # BertModel's names, no "bert."
    ap.add_argument("--bad-query", action="store_true")   # hostile: query.weight with hidden / 2 rows, no forward
    ap.add_argument("--text", default="Hello there, every key sees the query!")
    ap.add_argument("--ids", default="")  # comma-separated ids instead of --text (RoBERTa's padding positions)
    ap.add_argument("--patch", help="interventions to run (a JSON list, patching_reference.run_specs), into "
                                    "OUT_DIR/patch.json: the metric through the masked-LM head")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    vocab = vocabulary()
    vocab_size = 300
    roberta = a.family == "roberta"
    cfg = {"architectures": ["RobertaForMaskedLM" if roberta else "BertForMaskedLM"], "model_type": a.family,
           "hidden_size": a.hidden, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
           "intermediate_size": a.inter, "vocab_size": vocab_size, "max_position_embeddings": a.positions,
           "type_vocab_size": a.types, "layer_norm_eps": 1e-12, "hidden_act": a.act,
           "position_embedding_type": "absolute", "pad_token_id": a.pad if roberta else 0,
           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
           "torch_dtype": "float32", "use_cache": True}
    prefix = "" if a.no_prefix else a.family + "."
    held = write_safetensors(os.path.join(a.out, "model.safetensors"),
                             make_weights(a, rng, prefix, vocab_size, a.positions), a.dtype)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab), f, ensure_ascii=False)
    if a.bad_query:
        return
    ids = [int(i) for i in a.ids.split(",")] if a.ids else wordpiece_ids(a.text, vocab)
    value_norms = []
    maps, hidden = forward(held, cfg, ids, prefix, value_norms)
    expected = {"ids": ids, "weights": maps.tolist(), "hidden": hidden.tolist(), "rollout": rollout(maps).tolist(),
                "value_norms": np.stack(value_norms).tolist()}
    with open(os.path.join(a.out, "expected.json"), "w") as f:
        json.dump(expected, f)
    if a.patch:
        import patching_reference  # noqa: E402  (it imports the reference scripts, this one's siblings)
        # How far a logit moves per unit of error e in every element of the last layer's output h, through the
        # masked-LM head, in 2-norms: ||e|| <= e sqrt(d); the dense layer multiplies it by at most its spectral norm,
        # GELU by its largest slope 1.13, the LayerNorm by max|g| / sigma (its Jacobian: a projection times g /
        # sigma; sigma the row's deviation, the smallest over the texts' un-intervened runs, with a factor 2 of room
        # for the interventions'); a logit reads the result through a word embedding, at most its largest 2-norm.
        dense, ln = ("lm_head.dense", "lm_head.layer_norm") if roberta else \
            ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm")
        sigma = min(float((forward(held, cfg, s["ids"], prefix)[1] @ held[dense + ".weight"].T +
                           held[dense + ".bias"]).std(axis=1).min()) for s in json.loads(a.patch)) / 2
        embed = held[prefix + "embeddings.word_embeddings.weight"]
        sensitivity = math.sqrt(a.hidden) * float(np.linalg.norm(held[dense + ".weight"], 2)) * 1.13 * \
            float(np.abs(held.get(ln + ".weight", held.get(ln + ".gamma"))).max()) / sigma * \
            float(np.linalg.norm(embed, axis=1).max())
        out = patching_reference.run_specs(
            json.loads(a.patch), lambda t, **hooks: masked_lm_transform(held, cfg, forward(held, cfg, t, prefix, **hooks)[1]),
            held[prefix + "embeddings.word_embeddings.weight"], a.layers, a.heads, a.hidden // a.heads,
            bias=held["lm_head.bias" if roberta else "cls.predictions.bias"], encoder=True, sensitivity=sensitivity)
        with open(os.path.join(a.out, "patch.json"), "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
