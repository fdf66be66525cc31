#!/usr/bin/env python3
"""Tiny GPT-2 checkpoints for attnscope's tests, and an independent NumPy GPT-2 forward (float64) on them.

Written apart from the C++ engine: its own safetensors writer, its own bytes_to_unicode, its own forward.
Usage: gpt2_reference.py OUT_DIR [--dtype F32|F16|BF16] [--seed S] [--layers L] [--heads H] [--embd D]
       [--positions P] [--tokens N] [--no-prefix]
Writes OUT_DIR/{config.json, model.safetensors, vocab.json, merges.txt} and OUT_DIR/expected.json:
{"ids": [...], "weights": [L][H][n][n], "hidden": [n][d], "rollout": [n][n]}.
"""
import argparse
import json
import os
import struct

import numpy as np

# Merges of the tiny vocabulary, by rank (the result of each is added to the vocabulary after the bytes).
MERGES = ["h e", "l l", "he ll", "hell o", "Ġ t", "Ġt h", "e r", "Ġth er", "Ġther e"]


def bytes_to_unicode():
    # GPT-2's table: printable Latin-1 bytes stand for themselves, the rest are shifted to 256 + k.
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def quantise(a, dtype):
    """The float32 array as stored in `dtype`: (bytes, the values the file really holds as float64)."""
    a = a.astype(np.float32)
    if dtype == "F32":
        return a.tobytes(), a.astype(np.float64)
    if dtype == "F16":
        h = a.astype(np.float16)
        return h.tobytes(), h.astype(np.float64)
    # BF16: round to nearest even on the upper 16 bits of the float32.
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    back = (rounded.astype(np.uint32) << 16).view(np.float32)
    return rounded.tobytes(), back.astype(np.float64)


def write_safetensors(path, tensors, dtype):
    header, blobs, offset = {}, [], 0
    values = {}
    for name, a in tensors.items():
        data, held = quantise(a, dtype)
        values[name] = held
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    return values


def layer_norm(x, g, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def forward(w, cfg, ids, prefix, trace=None, value_norms=None, edit_residual=None, edit_heads=None, edit_mlp=None):
    """GPT-2 forward in float64: returns per-layer weights (L, H, n, n) and ln_f's output (n, d). A dict `trace`
    gets "x": the residual stream after the embedding and after each attention and MLP add, "heads": per layer
    each head's output through its rows of c_proj (H, n, d), "attn_bias": per layer c_proj's bias. A list
    `value_norms` gets per layer (H, n): ||v_j W_O^h||, what head h writes for key j (Kobayashi et al. 2020).
    Interventions (patching_reference.py): edit_residual(layer, x) and edit_heads(layer, z) return the residual
    stream entering the layer and its heads' outputs before c_proj (n, H dh), edited or not."""
    p = prefix
    d, nh = cfg["n_embd"], cfg["n_head"]
    dh, eps, n = d // nh, cfg["layer_norm_epsilon"], len(ids)
    x = w[p + "wte.weight"][ids] + w[p + "wpe.weight"][:n]
    causal = np.tril(np.ones((n, n), dtype=bool))
    maps = np.zeros((cfg["n_layer"], nh, n, n))
    if trace is not None:
        trace.update(x=[x.copy()], heads=[], attn_bias=[])
    for layer in range(cfg["n_layer"]):
        h = f"{p}h.{layer}."
        if edit_residual is not None:
            x = edit_residual(layer, x)
        a = layer_norm(x, w[h + "ln_1.weight"], w[h + "ln_1.bias"], eps)
        qkv = a @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"]  # (n, 3d)
        q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        out = np.zeros((n, d))
        for head in range(nh):
            cols = slice(head * dh, (head + 1) * dh)
            s = q[:, cols] @ k[:, cols].T / np.sqrt(dh)
            s = np.where(causal, s, -np.inf)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            att = e / e.sum(axis=1, keepdims=True)
            maps[layer, head] = att
            out[:, cols] = att @ v[:, cols]
        if edit_heads is not None:
            out = edit_heads(layer, out)
        x = x + out @ w[h + "attn.c_proj.weight"] + w[h + "attn.c_proj.bias"]
        if value_norms is not None:
            o = w[h + "attn.c_proj.weight"]  # (d, d): head c's rows c dh .. (c + 1) dh
            value_norms.append(np.stack([np.linalg.norm(v[:, c * dh:(c + 1) * dh] @ o[c * dh:(c + 1) * dh], axis=1)
                                         for c in range(nh)]))
        if trace is not None:
            proj = w[h + "attn.c_proj.weight"]
            trace["heads"].append(np.stack([out[:, c * dh:(c + 1) * dh] @ proj[c * dh:(c + 1) * dh] for c in range(nh)]))
            trace["attn_bias"].append(w[h + "attn.c_proj.bias"])
            trace["x"].append(x.copy())
        m = layer_norm(x, w[h + "ln_2.weight"], w[h + "ln_2.bias"], eps)
        m = gelu_tanh(m @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"])
        m = m @ w[h + "mlp.c_proj.weight"] + w[h + "mlp.c_proj.bias"]
        x = x + (edit_mlp(layer, m) if edit_mlp is not None else m)
        if trace is not None:
            trace["x"].append(x.copy())
    return maps, layer_norm(x, w[p + "ln_f.weight"], w[p + "ln_f.bias"], eps)


def rollout(maps):
    """Abnar and Zuidema (2020): A = 0.5 mean_heads(W) + 0.5 I, rows renormalised, R = A_L ... A_1."""
    n = maps.shape[-1]
    r = np.eye(n)
    for layer in range(maps.shape[0]):
        a = 0.5 * maps[layer].mean(axis=0) + 0.5 * np.eye(n)
        a = a / a.sum(axis=1, keepdims=True)
        r = a @ r
    return r


def make_weights(cfg, rng, prefix):
    d, L, V, P = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"], cfg["n_positions"]
    t = {prefix + "wte.weight": rng.normal(0, 0.5, (V, d)), prefix + "wpe.weight": rng.normal(0, 0.3, (P, d))}
    for layer in range(L):
        h = f"{prefix}h.{layer}."
        t[h + "ln_1.weight"] = 1 + rng.normal(0, 0.1, d)
        t[h + "ln_1.bias"] = rng.normal(0, 0.1, d)
        t[h + "attn.c_attn.weight"] = rng.normal(0, 0.6, (d, 3 * d))
        t[h + "attn.c_attn.bias"] = rng.normal(0, 0.2, 3 * d)
        t[h + "attn.c_proj.weight"] = rng.normal(0, 0.2, (d, d))
        t[h + "attn.c_proj.bias"] = rng.normal(0, 0.1, d)
        t[h + "ln_2.weight"] = 1 + rng.normal(0, 0.1, d)
        t[h + "ln_2.bias"] = rng.normal(0, 0.1, d)
        t[h + "mlp.c_fc.weight"] = rng.normal(0, 0.3, (d, 4 * d))
        t[h + "mlp.c_fc.bias"] = rng.normal(0, 0.1, 4 * d)
        t[h + "mlp.c_proj.weight"] = rng.normal(0, 0.15, (4 * d, d))
        t[h + "mlp.c_proj.bias"] = rng.normal(0, 0.1, d)
    t[prefix + "ln_f.weight"] = 1 + rng.normal(0, 0.1, d)
    t[prefix + "ln_f.bias"] = rng.normal(0, 0.1, d)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--embd", type=int, default=32)
    ap.add_argument("--positions", type=int, default=40)
    ap.add_argument("--tokens", type=int, default=24)
    ap.add_argument("--no-prefix", action="store_true")
    # The forward of given vocabulary entries (a JSON list of strings such as '["hello", "\\u0120t"]') instead
    # of random ids; the weights are the same for the same seed.
    ap.add_argument("--token-strings")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    # Vocabulary: the 256 byte symbols under a shuffled id order, then each merge's result, then <|endoftext|>.
    rng = np.random.default_rng(args.seed)
    table = bytes_to_unicode()
    order = rng.permutation(256)
    vocab = {table[int(b)]: i for i, b in enumerate(order)}
    for m in MERGES:
        vocab["".join(m.split(" "))] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    cfg = {"model_type": "gpt2", "activation_function": "gelu_new", "n_layer": args.layers, "n_head": args.heads,
           "n_embd": args.embd, "n_positions": args.positions, "layer_norm_epsilon": 1e-5,
           "vocab_size": len(vocab)}
    prefix = "" if args.no_prefix else "transformer."
    weights = write_safetensors(os.path.join(args.out, "model.safetensors"), make_weights(cfg, rng, prefix),
                                args.dtype)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(args.out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(args.out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(MERGES) + "\n")

    ids = [int(i) for i in rng.integers(0, len(vocab), args.tokens)]
    if args.token_strings is not None:
        ids = [vocab[t] for t in json.loads(args.token_strings)]
    value_norms = []
    maps, hidden = forward(weights, cfg, ids, prefix, value_norms=value_norms)
    expected = {"ids": ids, "weights": maps.tolist(), "hidden": hidden.tolist(), "rollout": rollout(maps).tolist(),
                "value_norms": np.stack(value_norms).tolist()}
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
