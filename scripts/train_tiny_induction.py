#!/usr/bin/env python3
"""Trains the tiny model that ships in assets/models/tiny-induction: a GPT-NeoX (Pythia) checkpoint, 2 layers x 4
heads, hidden 64, head size 16 with rotary on half of it, attention only (its MLPs' weights are zero, so each MLP
adds 0), on random tokens repeated twice, so that it learns a previous-token head and an induction head (Olsson et
al. 2022). Plain PyTorch on the CPU, fixed seed: about three minutes (2000 steps) on a 2-core machine.

  scripts/train_tiny_induction.py [OUT_DIR] [--steps N]
  scripts/train_tiny_induction.py --forward CKPT --ids '[...]' --forward-out OUT.json   (the tests' reference)

Data: 56 random tokens per sequence, in which a stretch of L tokens (L from 6 to 24, at a random place) is copied
right after itself; the loss is on the copy. L and the place differ per sequence, so no head can predict the copy
from a fixed offset between positions: copying needs a previous-token head in layer 1 and an induction head in
layer 2 reading it (K-composition). Why the model is shaped so:
- rotary on 8 of each head's 16 dims (rotary_pct 0.5): a previous-token head is one query-key product peaked at
  offset 1, which rotary gives directly; the 8 dims that do not turn let layer 2 match content at any distance;
- a penalty on heads of one layer attending alike (OVERLAP * the sum over pairs of heads of the mean dot product
  of their weight rows): without it the four heads of a layer learn the same thing; with it one head of layer 1
  takes the previous token and one of layer 2 the induction step, so that Find heads lights one head each and
  ablating the induction head shows.
Writes config.json, model.safetensors (F32), tokenizer.json (byte-level, 256 byte tokens and <|endoftext|>, no
merges) and training.json: the steps, the last training loss on the copies (mean of the last 100 steps), and each
head's previous-token and induction scores measured here on held-out repeated random tokens, with the heads they
name. A rerun learns the same heads, not the same bits (PyTorch's threaded CPU sums vary run to run)."""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch

LAYERS, HEADS, D, HD, ROTARY, POSITIONS, VOCAB, INTER = 2, 4, 64, 16, 8, 128, 257, 64
SEQUENCE, SEED, OVERLAP = 56, 20261129, 0.5


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (the byte-level BPE's alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class Tiny(torch.nn.Module):
    """transformers' GPTNeoXForCausalLM forward (parallel residual, LayerNorm, query_key_value's rows per head as
    q, k, v of head_size each, rotate_half rotary on the first ROTARY dims), with its MLPs left out: their weights
    are zero, and gelu(0) = 0. Parameters in the checkpoint's layouts."""

    def __init__(self, dtype=torch.float32):
        super().__init__()
        g = torch.Generator().manual_seed(SEED)
        p = lambda *shape, s: torch.nn.Parameter((torch.randn(*shape, generator=g) * s).to(dtype))  # noqa: E731
        z = lambda *shape: torch.nn.Parameter(torch.zeros(*shape, dtype=dtype))  # noqa: E731
        self.embed = p(VOCAB, D, s=0.1)
        self.qkv = torch.nn.ParameterList([p(3 * D, D, s=D ** -0.5) for _ in range(LAYERS)])  # (3 D, D)
        self.qkv_b = torch.nn.ParameterList([z(3 * D) for _ in range(LAYERS)])
        self.dense = torch.nn.ParameterList([p(D, D, s=D ** -0.5) for _ in range(LAYERS)])  # (D, D): out, in
        self.dense_b = torch.nn.ParameterList([z(D) for _ in range(LAYERS)])
        inv = 1.0 / 10000.0 ** (torch.arange(0, ROTARY, 2, dtype=torch.float64) / ROTARY)
        angles = torch.arange(POSITIONS, dtype=torch.float64)[:, None] * inv
        self.register_buffer("cos", torch.cat([angles, angles], -1).cos().to(dtype), persistent=False)
        self.register_buffer("sin", torch.cat([angles, angles], -1).sin().to(dtype), persistent=False)

    def rotary(self, t):  # t: (B, H, n, HD); the first ROTARY dims turn
        n, half = t.shape[-2], ROTARY // 2
        r, keep = t[..., :ROTARY], t[..., ROTARY:]
        turned = torch.cat([-r[..., half:], r[..., :half]], -1)
        return torch.cat([r * self.cos[:n] + turned * self.sin[:n], keep], -1)

    def forward(self, ids, maps=None):
        """Logits (B, n, VOCAB); each layer's weights (B, H, n, n) appended to `maps` when given."""
        B, n = ids.shape
        x = self.embed[ids]
        causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
        for layer in range(LAYERS):
            a = torch.nn.functional.layer_norm(x, (D,), eps=1e-5)  # input_layernorm, weight 1 and bias 0
            qkv = (a @ self.qkv[layer].T + self.qkv_b[layer]).reshape(B, n, HEADS, 3 * HD).transpose(1, 2)
            q, k, v = self.rotary(qkv[..., :HD]), self.rotary(qkv[..., HD:2 * HD]), qkv[..., 2 * HD:]
            w = torch.softmax((q @ k.transpose(-1, -2) * HD ** -0.5).masked_fill(~causal, float("-inf")), -1)
            if maps is not None:
                maps.append(w)
            x = x + (w @ v).transpose(1, 2).reshape(B, n, D) @ self.dense[layer].T + self.dense_b[layer]
        x = torch.nn.functional.layer_norm(x, (D,), eps=1e-5)  # final_layer_norm
        return x @ self.embed.T  # embed_out: written as a copy of embed_in


def batch(rng, size):
    """(ids (size, SEQUENCE), the positions whose next token is the copy's): random tokens with a stretch of L
    copied right after itself, L and its place drawn per sequence."""
    ids = rng.integers(0, VOCAB, (size, SEQUENCE))
    predicts = np.zeros((size, SEQUENCE), dtype=bool)
    for b in range(size):
        length = int(rng.integers(6, 25))
        at = int(rng.integers(0, SEQUENCE - 2 * length + 1))
        ids[b, at + length:at + 2 * length] = ids[b, at:at + length]
        predicts[b, at + length:at + 2 * length - 1] = True  # position i predicts token i + 1, in the copy
    return torch.tensor(ids), torch.tensor(predicts)


def head_scores(model, rng, count=64, length=20):
    """Per layer and head (lists [layer][head]), on `count` sequences of `length` random tokens repeated, as
    attnscope's Find heads defines the scores: previous-token (mean weight of query i on key i - 1, i >= 1) and
    induction (mean weight of a second-copy query i on key i - length + 1, the token after its first occurrence)."""
    first = rng.integers(0, VOCAB, (count, length))
    ids = torch.tensor(np.concatenate([first, first], axis=1))
    maps = []
    with torch.no_grad():
        model(ids, maps)
    i, j = torch.arange(1, 2 * length), torch.arange(length, 2 * length)
    prev = [w[:, :, i, i - 1].mean(dim=(0, 2)).tolist() for w in maps]
    induction = [w[:, :, j, j - length + 1].mean(dim=(0, 2)).tolist() for w in maps]
    return prev, induction


def tensors(model):
    """The checkpoint's tensors (Pythia's names), float32."""
    t = {"gpt_neox.embed_in.weight": model.embed, "embed_out.weight": model.embed,
         "gpt_neox.final_layer_norm.weight": torch.ones(D), "gpt_neox.final_layer_norm.bias": torch.zeros(D)}
    for layer in range(LAYERS):
        p = f"gpt_neox.layers.{layer}."
        t.update({p + "input_layernorm.weight": torch.ones(D), p + "input_layernorm.bias": torch.zeros(D),
                  p + "post_attention_layernorm.weight": torch.ones(D),
                  p + "post_attention_layernorm.bias": torch.zeros(D),
                  p + "attention.query_key_value.weight": model.qkv[layer],
                  p + "attention.query_key_value.bias": model.qkv_b[layer],
                  p + "attention.dense.weight": model.dense[layer], p + "attention.dense.bias": model.dense_b[layer],
                  p + "mlp.dense_h_to_4h.weight": torch.zeros(INTER, D), p + "mlp.dense_h_to_4h.bias": torch.zeros(INTER),
                  p + "mlp.dense_4h_to_h.weight": torch.zeros(D, INTER), p + "mlp.dense_4h_to_h.bias": torch.zeros(D)})
    return {name: v.detach().to(torch.float32).contiguous() for name, v in t.items()}


def tokenizer_json():
    """Byte-level BPE without merges: byte b is token b, <|endoftext|> is 256; nothing added around a text."""
    table = bytes_to_unicode()
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 256, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": {table[b]: b for b in range(256)}, "merges": []},
    }


def write(out, model, report):
    os.makedirs(out, exist_ok=True)
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors(model).items():
        data = tensor.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensor.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    config = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": D,
              "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "intermediate_size": INTER,
              "vocab_size": VOCAB, "max_position_embeddings": POSITIONS, "layer_norm_eps": 1e-5,
              "rotary_pct": ROTARY / HD, "rotary_emb_base": 10000, "use_parallel_residual": True,
              "hidden_act": "gelu", "tie_word_embeddings": False, "bos_token_id": 256, "eos_token_id": 256,
              "torch_dtype": "float32"}
    for name, value in (("config.json", config), ("tokenizer.json", tokenizer_json()), ("training.json", report)):
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            json.dump(value, f, indent=1, ensure_ascii=False)
            f.write("\n")


def load(ckpt, dtype):
    """A Tiny with the checkpoint's weights (checked to be this script's shape), in `dtype`."""
    with open(os.path.join(ckpt, "model.safetensors"), "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        blob = f.read()
    header.pop("__metadata__", None)
    read = {name: torch.from_numpy(np.frombuffer(blob[e["data_offsets"][0]:e["data_offsets"][1]], dtype="<f4")
                                   .reshape(e["shape"]).copy()).to(dtype) for name, e in header.items()}
    model = Tiny(dtype)
    with torch.no_grad():
        model.embed.copy_(read["gpt_neox.embed_in.weight"])
        for layer in range(LAYERS):
            p = f"gpt_neox.layers.{layer}."
            model.qkv[layer].copy_(read[p + "attention.query_key_value.weight"])
            model.qkv_b[layer].copy_(read[p + "attention.query_key_value.bias"])
            model.dense[layer].copy_(read[p + "attention.dense.weight"])
            model.dense_b[layer].copy_(read[p + "attention.dense.bias"])
    return model


def forward_out(args):
    """The tests' reference: this script's forward in float64 on the checkpoint's weights: {"weights": [layer]
    [head][n][n], "loss_second_half": the mean next-token loss from position n/2 on}."""
    model = load(args.forward, torch.float64)
    ids = torch.tensor([json.loads(args.ids)])
    maps = []
    with torch.no_grad():
        logits = model(ids, maps)
    half = ids.shape[1] // 2
    loss = torch.nn.functional.cross_entropy(logits[0, half:-1], ids[0, half + 1:]).item()
    with open(args.forward_out, "w") as f:
        json.dump({"weights": [w[0].tolist() for w in maps], "loss_second_half": loss}, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                           "assets", "models", "tiny-induction"))
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--forward", help="a checkpoint this script wrote: run its forward instead of training")
    ap.add_argument("--ids")
    ap.add_argument("--forward-out")
    args = ap.parse_args()
    if args.forward:
        return forward_out(args)
    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = np.random.default_rng(SEED)
    model = Tiny()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    recent, start = [], time.time()
    for step in range(args.steps):
        ids, predicts = batch(rng, 64)
        maps = []
        logits = model(ids[:, :-1], maps)
        loss = torch.nn.functional.cross_entropy(logits[predicts[:, :-1]], ids[:, 1:][predicts[:, :-1]])
        overlap = sum((w[:, h] * w[:, g]).sum(-1).mean() for w in maps for h in range(HEADS) for g in range(h + 1, HEADS))
        opt.zero_grad()
        (loss + OVERLAP * overlap).backward()
        opt.step()
        recent = (recent + [loss.item()])[-100:]
        if step % 250 == 0 or step == args.steps - 1:
            prev, induction = head_scores(model, np.random.default_rng(SEED + 1), count=16)
            print(f"step {step} ({time.time() - start:.0f} s): loss on the copies {np.mean(recent):.4f}; "
                  f"previous-token {[round(x, 2) for x in prev[0]]}, induction {[round(x, 2) for x in induction[1]]}",
                  flush=True)
    prev, induction = head_scores(model, np.random.default_rng(SEED + 1))
    best = lambda s: max(((l, h) for l in range(LAYERS) for h in range(HEADS)), key=lambda lh: s[lh[0]][lh[1]])  # noqa
    report = {"seed": SEED, "steps": args.steps, "torch": torch.__version__,
              "last_loss_on_copies": round(float(np.mean(recent)), 4),
              "previous_token": prev, "induction": induction,
              "strongest_previous_token": best(prev), "strongest_induction": best(induction),
              "note": "layers and heads from 0; scores on 64 held-out sequences of 20 random tokens repeated"}
    write(args.out, model, report)
    print(json.dumps({k: report[k] for k in ("last_loss_on_copies", "strongest_previous_token",
                                             "strongest_induction")}))


if __name__ == "__main__":
    sys.exit(main())
