#!/usr/bin/env python3
"""Tiny GPT-NeoX / Pythia checkpoints (model_type gpt_neox) for attnscope's tests, and an independent NumPy forward
on them, written from transformers' modeling_gpt_neox.py (GPTNeoXAttention: query_key_value's output viewed as
(n, heads, 3 * head_size), q, k, v the thirds of each head's slice; rotary on the first rotary_ndims =
int(head_size * rotary_pct) dims with inv_freq = 1 / base^(arange(0, rotary_ndims, 2) / rotary_ndims) and
rotate_half; scores scaled by head_size^-0.5, the causal mask, softmax; GPTNeoXLayer's parallel residual
x + attn(ln1 x) + mlp(ln2 x) or the sequential one; GPTNeoXMLP dense_h_to_4h, act, dense_4h_to_h; LayerNorm with
bias), not from attnscope's C++.

Usage: neox_reference.py OUT_DIR [--dtype F32|F16|BF16] [--layers L] [--heads H] [--hidden D] [--inter I]
       [--rotary-pct P] [--rotary-base B] [--sequential] [--act gelu|gelu_new] [--no-attention-bias] [--v5]
       [--positions P] [--text TEXT] [--seed S] [--bad-qkv]
Writes OUT_DIR/{config.json, model.safetensors, tokenizer.json} in Pythia's exact tensor names (GPTNeoXForCausalLM:
gpt_neox.*, embed_out.weight), with the buffers real Pythia checkpoints hold (attention.bias BOOL,
attention.masked_bias, attention.rotary_emb.inv_freq), and OUT_DIR/expected.json: {"ids", "weights": [L][H][n][n],
"hidden": [n][d], "rollout": [n][n]}, float64. --v5 writes the config as transformers 5 does (rope_parameters with
rope_theta and partial_rotary_factor instead of rotary_emb_base and rotary_pct).
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_reference import layer_norm, quantise, rollout  # noqa: E402  (shared helpers)
from llama_reference import capture_attention, finish_capture, head_value_norms, tokenizer_json  # noqa: E402


def gelu(x, act):
    if act == "gelu":  # nn.functional.gelu, the exact erf form
        return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))  # gelu_new


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def forward(w, cfg, ids, value_norms=None, attention=None):
    """(maps (L, H, n, n), final_layer_norm output (n, d)) in float64. w: name -> array (PyTorch layouts).
    `attention(layer, q, k, v, 0)`, when given, sees each layer's q, k (H, n, hd) after the partial rotary, and v
    (llama_reference.capture_attention)."""
    H, d = cfg["num_attention_heads"], cfg["hidden_size"]
    hd = d // H
    rot = int(hd * cfg["rotary"])
    eps = cfg["layer_norm_eps"]
    n = len(ids)
    inv = 1.0 / cfg["base"] ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    freqs = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)

    def rope(t):  # t: (H, n, hd); only the first rot dims turn
        r, keep = t[..., :rot], t[..., rot:]
        return np.concatenate([r * cos + rotate_half(r) * sin, keep], axis=-1)

    def lin(h, name):
        y = h @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    x = w["gpt_neox.embed_in.weight"][ids]
    maps = []
    for layer in range(cfg["num_hidden_layers"]):
        p = f"gpt_neox.layers.{layer}."
        h = layer_norm(x, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
        qkv = lin(h, p + "attention.query_key_value").reshape(n, H, 3 * hd)  # (n, heads, 3 * head_size)
        q = qkv[..., :hd].transpose(1, 0, 2)  # (H, n, hd)
        k = qkv[..., hd:2 * hd].transpose(1, 0, 2)
        v = qkv[..., 2 * hd:].transpose(1, 0, 2)
        q, k = rope(q), rope(k)
        if attention is not None:
            attention(layer, q, k, v, 0)
        s = (q @ k.transpose(0, 2, 1)) * hd ** -0.5
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        s = np.where(j <= i, s, -np.inf)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        a = s / s.sum(axis=-1, keepdims=True)
        maps.append(a)
        if value_norms is not None:
            value_norms.append(head_value_norms(v, w[p + "attention.dense.weight"]))
        attn = lin((a @ v).transpose(1, 0, 2).reshape(n, d), p + "attention.dense")

        def mlp(t):
            return lin(gelu(lin(t, p + "mlp.dense_h_to_4h"), cfg["act"]), p + "mlp.dense_4h_to_h")

        post = (w[p + "post_attention_layernorm.weight"], w[p + "post_attention_layernorm.bias"], eps)
        if cfg["parallel"]:
            x = x + attn + mlp(layer_norm(x, *post))
        else:
            x = x + attn
            x = x + mlp(layer_norm(x, *post))
    final = layer_norm(x, w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"], eps)
    return np.stack(maps), final


def make_weights(a, rng):
    H, d, inter, V = a.heads, a.hidden, a.inter, 300
    s = d ** -0.5
    w = {"gpt_neox.embed_in.weight": rng.normal(0, 1.0, (V, d))}
    for layer in range(a.layers):
        p = f"gpt_neox.layers.{layer}."
        w[p + "input_layernorm.weight"] = 1 + rng.normal(0, 0.1, d)
        w[p + "input_layernorm.bias"] = rng.normal(0, 0.1, d)
        w[p + "post_attention_layernorm.weight"] = 1 + rng.normal(0, 0.1, d)
        w[p + "post_attention_layernorm.bias"] = rng.normal(0, 0.1, d)
        # (3d, d) in the per-head interleaved order: rows [3 h hd, 3 h hd + hd) are head h's q, then its k, its v.
        # q and k rows larger than v so that the maps are far from uniform.
        qkv = rng.normal(0, s, (H, 3, d // H, d))
        qkv[:, :2] *= 1.5
        w[p + "attention.query_key_value.weight"] = qkv.reshape(3 * d, d)[: 2 * d if a.bad_qkv else 3 * d]
        if not a.no_attention_bias:
            w[p + "attention.query_key_value.bias"] = rng.normal(0, 0.3, 3 * d)
            w[p + "attention.dense.bias"] = rng.normal(0, 0.1, d)
        w[p + "attention.dense.weight"] = rng.normal(0, s, (d, d))
        w[p + "mlp.dense_h_to_4h.weight"] = rng.normal(0, s, (inter, d))
        w[p + "mlp.dense_h_to_4h.bias"] = rng.normal(0, 0.1, inter)
        w[p + "mlp.dense_4h_to_h.weight"] = rng.normal(0, inter ** -0.5, (d, inter))
        w[p + "mlp.dense_4h_to_h.bias"] = rng.normal(0, 0.1, d)
    w["gpt_neox.final_layer_norm.weight"] = 1 + rng.normal(0, 0.1, d)
    w["gpt_neox.final_layer_norm.bias"] = rng.normal(0, 0.1, d)
    w["embed_out.weight"] = rng.normal(0, s, (V, d))
    return w


def write_checkpoint(path, tensors, dtype, a):
    """model.safetensors: the weights in `dtype`, and per layer the buffers real Pythia files hold (not weights):
    attention.bias BOOL (P, P) lower-triangular, attention.masked_bias F32 -1e9, rotary_emb.inv_freq F32.
    Returns name -> the weights' values as stored, float64."""
    header, blobs, offset, held = {}, [], 0, {}

    def add(name, dt, shape, data):
        nonlocal offset
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)

    for name, arr in tensors.items():
        data, values = quantise(arr, dtype)
        held[name] = values
        add(name, dtype, arr.shape, data)
    hd = a.hidden // a.heads
    rot = int(hd * a.rotary_pct)
    for layer in range(a.layers):
        p = f"gpt_neox.layers.{layer}.attention."
        tri = np.tril(np.ones((a.positions, a.positions), dtype=np.uint8)).reshape(1, 1, a.positions, a.positions)
        add(p + "bias", "BOOL", tri.shape, tri.tobytes())
        add(p + "masked_bias", "F32", [], np.array(-1e9, dtype="<f4").tobytes())
        inv = (1.0 / a.rotary_base ** (np.arange(0, rot, 2) / rot)).astype("<f4")
        add(p + "rotary_emb.inv_freq", "F32", inv.shape, inv.tobytes())
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    return held


def make_config(a):
    cfg = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": a.hidden,
           "num_hidden_layers": a.layers, "num_attention_heads": a.heads, "intermediate_size": a.inter,
           "vocab_size": 300, "max_position_embeddings": a.positions, "layer_norm_eps": 1e-5,
           "use_parallel_residual": not a.sequential, "hidden_act": a.act, "tie_word_embeddings": False,
           "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float32", "use_cache": True}
    if a.no_attention_bias:
        cfg["attention_bias"] = False
    if a.v5:
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": a.rotary_base,
                                  "partial_rotary_factor": a.rotary_pct}
    else:
        cfg["rotary_pct"] = a.rotary_pct
        cfg["rotary_emb_base"] = a.rotary_base
    return cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--inter", type=int, default=128)
    ap.add_argument("--rotary-pct", type=float, default=0.25)
    ap.add_argument("--rotary-base", type=float, default=10000.0)
    ap.add_argument("--sequential", action="store_true")
    ap.add_argument("--act", default="gelu", choices=["gelu", "gelu_new"])
    ap.add_argument("--no-attention-bias", action="store_true")
    ap.add_argument("--v5", action="store_true")
    ap.add_argument("--positions", type=int, default=64)
    ap.add_argument("--bad-qkv", action="store_true")  # hostile: query_key_value with 2 x hidden rows, no forward
    ap.add_argument("--text", default="Hello there, attention heads!")
    ap.add_argument("--capture", help="also write an attnscope capture of the run to this folder "
                    "(llama_reference.capture_attention: the capture's attention function called as transformers does)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    cfg = make_config(a)
    held = write_checkpoint(os.path.join(a.out, "model.safetensors"), make_weights(a, rng), a.dtype, a)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False)
    if a.bad_qkv:
        return
    ids = [256] + list(a.text.encode("utf-8"))  # BOS, then one token per byte
    ref = {"rotary": a.rotary_pct, "base": a.rotary_base, "parallel": not a.sequential, "act": a.act,
           "layer_norm_eps": cfg["layer_norm_eps"], "num_attention_heads": a.heads, "hidden_size": a.hidden,
           "num_hidden_layers": a.layers}
    value_norms = []
    hook = None
    if a.capture:
        texts = ["<bos>"] + [chr(b) if 32 <= b < 127 else f"<0x{b:02X}>" for b in a.text.encode("utf-8")]
        hook = capture_attention(a.capture, "tiny gpt_neox", ids, texts, (a.hidden // a.heads) ** -0.5)
    maps, hidden = forward(held, ref, ids, value_norms, attention=hook)
    if a.capture:
        finish_capture(a.capture, 1)
    expected = {"ids": ids, "weights": maps.tolist(), "hidden": hidden.tolist(), "rollout": rollout(maps).tolist(),
                "value_norms": np.stack(value_norms).tolist()}
    with open(os.path.join(a.out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
