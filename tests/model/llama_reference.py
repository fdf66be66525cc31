#!/usr/bin/env python3
"""Tiny Llama-family checkpoints (llama, mistral, qwen2, qwen3) for attnscope's tests, and an independent NumPy
forward on them, written from transformers' definitions (LlamaRMSNorm, rotate_half / apply_rotary_pos_emb,
_compute_llama3_parameters, repeat_kv, eager attention with the sliding-window causal mask, LlamaMLP), not
from attnscope's C++.

Usage: llama_reference.py OUT_DIR --family llama|mistral|qwen2|qwen3 [--dtype F32|F16|BF16] [--shards K]
       [--layers L] [--heads H] [--kv-heads KV] [--hidden D] [--head-dim HD] [--inter I] [--window W] [--positions P]
       [--rope-scaling none|linear|llama3] [--tie] [--attention-bias] [--text TEXT] [--seed S]
Writes OUT_DIR/{config.json, model.safetensors or model-0000k-of-0000K.safetensors + model.safetensors.index.json,
tokenizer.json} and OUT_DIR/expected.json: {"ids", "kv_head", "weights": [L][H][n][n], "hidden": [n][d],
"rollout": [n][n]}, all in float64.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_reference import bytes_to_unicode, rollout, write_safetensors  # noqa: E402  (safetensors writer, shared)


def rms_norm(x, g, eps):
    # LlamaRMSNorm: x * rsqrt(mean(x^2) + eps), then weight * x (over the last axis).
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * g


def inverse_frequencies(cfg, dim):
    """transformers' _compute_default_rope_parameters, _compute_linear_scaling_rope_parameters and
    _compute_llama3_parameters, in float64."""
    inv = 1.0 / cfg["rope_theta"] ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    rs = cfg.get("rope_scaling")
    if not rs:
        return inv
    kind = rs.get("rope_type", rs.get("type"))
    factor = rs["factor"]
    if kind == "linear":
        return inv / factor
    assert kind == "llama3"
    low, high, old = rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old / low, old / high
    wavelen = 2 * np.pi / inv
    inv_llama = np.where(wavelen > low_freq_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_llama / factor + smooth * inv_llama
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return np.where(is_medium, smoothed, inv_llama)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    # x: (heads, n, hd); cos, sin: (n, hd) = cat(freqs, freqs) as LlamaRotaryEmbedding builds them.
    return x * cos + rotate_half(x) * sin


def windows(cfg):
    """Each layer's sliding window (None: full causal), as the families' configs switch it on."""
    L, t = cfg["num_hidden_layers"], cfg["model_type"]
    if t == "mistral":
        return [cfg.get("sliding_window")] * L
    if t in ("qwen2", "qwen3") and cfg.get("use_sliding_window"):
        return [cfg["sliding_window"] if i >= cfg.get("max_window_layers", 28) else None for i in range(L)]
    return [None] * L


def head_value_norms(v, o):
    """Value-norm weighting's norms (Kobayashi et al. 2020): v (H, n, hd) each query head's values (its KV head's),
    o the output projection's (d, H hd) weight (PyTorch layout). (H, n): ||v_j W_O^h||, what head h writes for key j."""
    hd = v.shape[-1]
    return np.stack([np.linalg.norm(v[c] @ o[:, c * hd:(c + 1) * hd].T, axis=1) for c in range(v.shape[0])])


def forward(w, cfg, ids, dtype=np.float64, trace=None, value_norms=None, attention=None, edit_residual=None,
            edit_heads=None, edit_mlp=None):
    """(maps (L, H, n, n), final normed hidden state (n, d)) in `dtype`. w: name -> array (PyTorch layouts).
    A dict `trace` gets "x": the residual stream after the embedding and after each attention and MLP add,
    "heads": per layer each head's output through its columns of o_proj (H, n, d), "attn_bias": o_proj's bias.
    A list `value_norms` gets per layer (H, n): ||v_j W_O^h||, what head h writes for key j (Kobayashi et al. 2020;
    v_j from its KV head). `attention(layer, q, k, v, window)`, when given, sees each layer's q (H, n, hd) and k, v
    (KV, n, hd) after RoPE and before repeat_kv, as transformers hands them to an attention function.
    Interventions (patching_reference.py): edit_residual(layer, x) and edit_heads(layer, z) return the residual
    stream entering the layer and its heads' outputs before o_proj (n, H hd), edited or not."""
    t = cfg["model_type"]
    H, KV, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    hd = cfg.get("head_dim") or d // H
    eps = cfg["rms_norm_eps"]
    n = len(ids)
    inv = inverse_frequencies(cfg, hd)
    freqs = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)
    qkv_bias = t == "qwen2" or (cfg.get("attention_bias") and t != "mistral")
    o_bias = cfg.get("attention_bias") and t in ("llama", "qwen3")
    x = w["model.embed_tokens.weight"][ids]
    maps = []
    if trace is not None:
        trace.update(x=[x.copy()], heads=[], attn_bias=[])
    for layer, window in enumerate(windows(cfg)):
        p = f"model.layers.{layer}."
        if edit_residual is not None:
            x = edit_residual(layer, x)
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = h @ w[p + "self_attn.q_proj.weight"].T
        k = h @ w[p + "self_attn.k_proj.weight"].T
        v = h @ w[p + "self_attn.v_proj.weight"].T
        if qkv_bias:
            q, k, v = (q + w[p + "self_attn.q_proj.bias"], k + w[p + "self_attn.k_proj.bias"],
                       v + w[p + "self_attn.v_proj.bias"])
        q = q.reshape(n, H, hd).transpose(1, 0, 2)  # (H, n, hd)
        k = k.reshape(n, KV, hd).transpose(1, 0, 2)  # (KV, n, hd)
        v = v.reshape(n, KV, hd).transpose(1, 0, 2)
        if t == "qwen3":  # Qwen3Attention: q_norm / k_norm over head_dim, before RoPE
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if attention is not None:
            attention(layer, q, k, v, window)
        k, v = np.repeat(k, H // KV, axis=0), np.repeat(v, H // KV, axis=0)  # repeat_kv: head h reads h // (H/KV)
        s = (q @ k.transpose(0, 2, 1)) * dtype(hd ** -0.5)  # (H, n, n)
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        allowed = j <= i
        if window is not None:  # sliding_window_causal_mask_function: kv_idx > q_idx - sliding_window
            allowed &= j > i - window
        s = np.where(allowed, s, -np.inf)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        a = s / s.sum(axis=-1, keepdims=True)
        maps.append(a)
        if value_norms is not None:
            value_norms.append(head_value_norms(v, w[p + "self_attn.o_proj.weight"]))
        out = (a @ v).transpose(1, 0, 2).reshape(n, H * hd)
        if edit_heads is not None:
            out = edit_heads(layer, out)
        out = out @ w[p + "self_attn.o_proj.weight"].T
        if o_bias:
            out = out + w[p + "self_attn.o_proj.bias"]
        x = x + out
        if trace is not None:
            o = w[p + "self_attn.o_proj.weight"]  # (d, H hd)
            trace["heads"].append(np.stack([(a @ v)[c] @ o[:, c * hd:(c + 1) * hd].T for c in range(H)]))
            trace["attn_bias"].append(w[p + "self_attn.o_proj.bias"] if o_bias else np.zeros(d))
            trace["x"].append(x.copy())
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        m = ((gate / (1 + np.exp(-gate))) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        x = x + (edit_mlp(layer, m) if edit_mlp is not None else m)
        if trace is not None:
            trace["x"].append(x.copy())
    return np.stack(maps), rms_norm(x, w["model.norm.weight"], eps)


def make_weights(cfg, rng):
    t = cfg["model_type"]
    H, KV, d, inter = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"], cfg["intermediate_size"]
    hd = cfg.get("head_dim") or d // H
    V = cfg["vocab_size"]
    s = d ** -0.5
    w = {"model.embed_tokens.weight": rng.normal(0, 1.0, (V, d))}
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        w[p + "input_layernorm.weight"] = 1 + rng.normal(0, 0.1, d)
        # q and k larger than v so that the maps are far from uniform
        w[p + "self_attn.q_proj.weight"] = rng.normal(0, 2 * s, (H * hd, d))
        w[p + "self_attn.k_proj.weight"] = rng.normal(0, 2 * s, (KV * hd, d))
        w[p + "self_attn.v_proj.weight"] = rng.normal(0, s, (KV * hd, d))
        if t == "qwen2" or (cfg.get("attention_bias") and t != "mistral"):
            for name, rows in (("q", H * hd), ("k", KV * hd), ("v", KV * hd)):
                w[p + f"self_attn.{name}_proj.bias"] = rng.normal(0, 0.3, rows)
        if t == "qwen3":
            w[p + "self_attn.q_norm.weight"] = 1 + rng.normal(0, 0.2, hd)
            w[p + "self_attn.k_norm.weight"] = 1 + rng.normal(0, 0.2, hd)
        w[p + "self_attn.o_proj.weight"] = rng.normal(0, (H * hd) ** -0.5, (d, H * hd))
        if cfg.get("attention_bias") and t in ("llama", "qwen3"):
            w[p + "self_attn.o_proj.bias"] = rng.normal(0, 0.1, d)
        w[p + "post_attention_layernorm.weight"] = 1 + rng.normal(0, 0.1, d)
        w[p + "mlp.gate_proj.weight"] = rng.normal(0, s, (inter, d))
        w[p + "mlp.up_proj.weight"] = rng.normal(0, s, (inter, d))
        w[p + "mlp.down_proj.weight"] = rng.normal(0, inter ** -0.5, (d, inter))
    w["model.norm.weight"] = 1 + rng.normal(0, 0.1, d)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = rng.normal(0, s, (V, d))
    return w


def write_weights(out, tensors, dtype, shards):
    """model.safetensors, or `shards` files with model.safetensors.index.json (layers dealt round-robin, the rest
    in the last shard). Returns name -> the values the files hold, as float64."""
    if shards <= 1:
        return write_safetensors(os.path.join(out, "model.safetensors"), tensors, dtype)
    names = [f"model-{k + 1:05d}-of-{shards:05d}.safetensors" for k in range(shards)]
    parts = [dict() for _ in range(shards)]
    weight_map = {}
    for name, a in tensors.items():
        k = int(name.split(".")[2]) % shards if name.startswith("model.layers.") else shards - 1
        parts[k][name] = a
        weight_map[name] = names[k]
    held = {}
    for k in range(shards):
        held.update(write_safetensors(os.path.join(out, names[k]), parts[k], dtype))
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=1)
    return held


def tokenizer_json():
    """A byte-level BPE with no merges (every byte is a token: byte b is id b) and BOS <s> = 256 added by a
    TemplateProcessing post-processor, as Llama 3's tokenizer.json adds <|begin_of_text|>."""
    table = bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    bos = {"SpecialToken": {"id": "<s>", "type_id": 0}}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 256, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "TemplateProcessing", "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [256], "tokens": ["<s>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": []},
    }


def make_config(args):
    cfg = {"architectures": ["X"], "model_type": args.family, "hidden_size": args.hidden,
           "num_hidden_layers": args.layers, "num_attention_heads": args.heads, "num_key_value_heads": args.kv_heads,
           "intermediate_size": args.inter, "vocab_size": 300, "max_position_embeddings": args.positions,
           "rms_norm_eps": 1e-6, "rope_theta": args.rope_theta, "hidden_act": "silu",
           "tie_word_embeddings": args.tie, "torch_dtype": "float32"}
    if args.head_dim:
        cfg["head_dim"] = args.head_dim
    if args.attention_bias:
        cfg["attention_bias"] = True
    if args.rope_scaling == "linear":
        cfg["rope_scaling"] = {"type": "linear", "factor": 4.0}
    elif args.rope_scaling == "llama3":
        # Llama 3.1's numbers with a small old context, so that all three bands occur at head_dim 16
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 64}
    if args.family == "mistral":
        cfg["sliding_window"] = args.window
    elif args.family in ("qwen2", "qwen3"):
        cfg["use_sliding_window"] = args.window is not None
        cfg["sliding_window"] = args.window
        cfg["max_window_layers"] = 1 if args.window is not None else args.layers
    return cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--family", required=True, choices=["llama", "mistral", "qwen2", "qwen3"])
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--head-dim", type=int, default=0)
    ap.add_argument("--inter", type=int, default=48)
    ap.add_argument("--window", type=int, default=None)
    ap.add_argument("--positions", type=int, default=64)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--rope-scaling", default="none", choices=["none", "linear", "llama3"])
    ap.add_argument("--tie", action="store_true")
    ap.add_argument("--attention-bias", action="store_true")
    ap.add_argument("--text", default="Hello there, attention heads!")
    ap.add_argument("--capture", help="also write an attnscope capture of the run to this folder, through "
                    "tools/capture/attnscope_capture.py's attention function called as transformers calls it")
    ap.add_argument("--capture-ranks", type=int, default=1, help="as that many tensor-parallel ranks, then merged")
    ap.add_argument("--capture-dtype", default="F32", choices=["F32", "BF16"])
    ap.add_argument("--capture-lse", action="store_true", help="the capture stores each row's log-sum-exp")
    ap.add_argument("--capture-values", action="store_true", help="the capture stores v and W_O's rows")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    cfg = make_config(args)
    held = write_weights(args.out, make_weights(cfg, rng), args.dtype, args.shards)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False)
    ids = [256] + list(args.text.encode("utf-8"))  # BOS, then one token per byte
    value_norms = []
    texts = ["<bos>"] + [chr(b) if 32 <= b < 127 else f"<0x{b:02X}>" for b in args.text.encode("utf-8")]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    hook = None
    if args.capture:
        hook = capture_attention(args.capture, f"tiny {args.family}", ids, texts, hd ** -0.5, ranks=args.capture_ranks,
                                 dtype=args.capture_dtype, lse=args.capture_lse, values=args.capture_values,
                                 o_proj=lambda l: held[f"model.layers.{l}.self_attn.o_proj.weight"])
    maps, hidden = forward(held, cfg, ids, value_norms=value_norms, attention=hook)
    group = args.heads // args.kv_heads
    expected = {"ids": ids, "kv_head": [h // group for h in range(args.heads)], "weights": maps.tolist(),
                "hidden": hidden.tolist(), "rollout": rollout(maps).tolist(),
                "value_norms": np.stack(value_norms).tolist()}
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(expected, f)
    if args.capture:
        finish_capture(args.capture, args.capture_ranks)


CAPTURES = []


def capture_attention(out_dir, model, ids, texts, scaling, ranks=1, dtype="F32", lse=False, values=False, softcap=0,
                      o_proj=None):
    """A reference forward's attention hook (also gemma_reference.py's): each layer's q, k, v handed to
    attnscope_capture's attention function as transformers calls it (module with layer_idx and o_proj; query
    (1, H, n, hd) after RoPE, key and value (1, KV, n, hd); the scaling, sliding_window and softcap keywords), by
    each of `ranks` tensor-parallel ranks for its heads (and its columns of o_proj, `o_proj(layer)` (d, H hd)).
    Checks that what it returns is the attention's output (the forward goes on unchanged). finish_capture() writes
    the folder."""
    global attnscope_capture, torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "capture"))
    import attnscope_capture  # noqa: E402
    import torch  # noqa: E402
    stored = torch.float32 if dtype == "F32" else torch.bfloat16
    CAPTURES.extend(attnscope_capture.Capture(out_dir, model=model, token_ids=ids, tokens=texts, dtype=stored, rank=r,
                                              world_size=ranks, lse=lse, values=values)
                    for r in range(ranks))

    class Linear:  # a module's o_proj as transformers' nn.Linear holds it: weight (out, in)
        def __init__(self, weight):
            self.weight = torch.from_numpy(np.ascontiguousarray(weight, dtype=np.float32))

    class Module:  # what an attention function reads of its module
        training = False

        def __init__(self, layer, o_proj_weight):
            self.layer_idx = layer
            self.o_proj = Linear(o_proj_weight) if o_proj_weight is not None else None

    def hook(layer, q, k, v, window):
        H, KV, n, hd = q.shape[0], k.shape[0], q.shape[1], q.shape[2]
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        allowed = (j <= i) & ((j > i - window) if window else True)
        mask = torch.from_numpy(allowed)[None, None]  # (1, 1, n, n), True = attend (transformers' boolean mask)
        for r, capture in enumerate(CAPTURES):
            hs, kvs = slice(r * H // ranks, (r + 1) * H // ranks), slice(r * KV // ranks, (r + 1) * KV // ranks)
            t = lambda a, s: torch.from_numpy(np.ascontiguousarray(a[s], dtype=np.float32))[None]
            o = o_proj(layer)[:, hs.start * hd:hs.stop * hd] if o_proj else None  # the rank's columns (row-parallel)
            out, _ = capture.attention(Module(layer, o), t(q, hs), t(k, kvs), t(v, kvs), mask, scaling=scaling,
                                       dropout=0.0, sliding_window=window, softcap=softcap or None)
            # What the forward goes on with: the rank's heads' attention output, (1, n, heads, hd), against NumPy's.
            kr, vr = np.repeat(k[kvs], H // KV, axis=0), np.repeat(v[kvs], H // KV, axis=0)
            s = (q[hs] @ kr.transpose(0, 2, 1)) * scaling
            if softcap:
                s = np.tanh(s / softcap) * softcap
            s = np.where(allowed, s, -np.inf)
            a = np.exp(s - s.max(axis=-1, keepdims=True))
            want = ((a / a.sum(axis=-1, keepdims=True)) @ vr).transpose(1, 0, 2)[None]
            worst = float(np.abs(out.double().numpy() - want).max())
            assert worst < 1e-5, f"layer {layer} rank {r}: the attention output differs by {worst}"
    return hook


def finish_capture(out_dir, ranks):
    """Writes each rank's capture, then merges the ranks' files (more than one rank)."""
    for c in CAPTURES:
        c.save()
    if ranks > 1:
        attnscope_capture.merge(out_dir, ranks)


if __name__ == "__main__":
    main()
