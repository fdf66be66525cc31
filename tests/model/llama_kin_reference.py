#!/usr/bin/env python3
"""Tiny Phi-3, OLMo 2 and Mixtral checkpoints for attnscope's tests, and an independent NumPy float64 forward on
them, written from transformers' modeling_phi3.py, modeling_olmo2.py and modeling_mixtral.py (not from attnscope's
C++):
  Phi-3 (Phi3DecoderLayer): x += o(attn(rms(x))); x += down(up * silu(gate)) of rms(x), where qkv_proj's output is
    split q | k | v (q: heads x head_dim, k and v: kv_heads x head_dim) and gate_up_proj's output chunk(2) gives
    gate then up; rotate_half RoPE on the first int(head_dim x partial_rotary_factor) dims with
    inv_freq = 1 / theta^(arange(0, rot, 2) / rot); a sliding window keeps key j for query i when i - W < j <= i.
  OLMo 2 (Olmo2DecoderLayer): q = rms(x Wq^T) * q_norm over the whole q_dim, k likewise over kv_dim, then RoPE;
    x = x + rms(attn(x)) * post_attention_layernorm; x = x + rms(mlp(x)) * post_feedforward_layernorm.
  Mixtral (MixtralSparseMoeBlock): Mistral's attention; router logits = h gate^T, softmax over experts, the top
    num_experts_per_tok, their weights divided by their sum; out = sum_k w_k w2(silu(w1 h) * w3 h).
Scores scaled by head_dim^-0.5, the causal mask, softmax; GQA: query head h reads kv head h // (heads / kv_heads).

Usage: llama_kin_reference.py OUT_DIR --family phi3|olmo2|mixtral [--dtype F32|F16|BF16] [--layers L] [--heads H]
       [--kv-heads K] [--hidden D] [--inter I] [--rotary F] [--theta T] [--window W] [--experts E] [--topk K] [--v5]
       [--positions P] [--text TEXT] [--seed S] [--wrong per-head-qk|pre-norm] [--bad-qkv] [--bad-gate-up]
       [--drop-expert E]
Writes OUT_DIR/{config.json, model.safetensors (with __metadata__), tokenizer.json} and expected.json:
{"ids", "kv_head": [H], "weights": [L][H][n][n], "hidden": [n][d], "rollout": [n][n]}. --wrong computes
expected.json with a deliberately wrong OLMo 2 forward (q_norm per head; or the norms before the sublayers), to show that the engine
would fail a forward that got it wrong. --v5 writes rope_parameters instead of rope_theta / partial_rotary_factor.
The --bad-* and --drop-expert flags write hostile checkpoints (no expected.json).
"""
import argparse
import json
import os
import sys

import numpy as np

import patching_reference  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_reference import rollout, write_safetensors  # noqa: E402  (shared helpers; __metadata__ written)
from llama_reference import head_value_norms, tokenizer_json  # noqa: E402  (byte-level BPE, BOS 256; shared)

EPS = 1e-5
V = 300


def rms(x, g):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS) * g


def silu(x):
    return x / (1.0 + np.exp(-x))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def attention(q, k, v, H, K, hd, rot, theta, window):
    """q: (n, H hd), k, v: (n, K hd) before RoPE. Returns (maps (H, n, n), heads' outputs concatenated (n, H hd))."""
    n = q.shape[0]
    inv = 1.0 / theta ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    freqs = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)

    def rope(t):  # (heads, n, hd): the first rot dims turn, the rest pass
        r, keep = t[..., :rot], t[..., rot:]
        return np.concatenate([r * cos + rotate_half(r) * sin, keep], axis=-1)

    qh = rope(q.reshape(n, H, hd).transpose(1, 0, 2))
    kh = rope(k.reshape(n, K, hd).transpose(1, 0, 2))
    vh = v.reshape(n, K, hd).transpose(1, 0, 2)
    group = H // K
    kh, vh = np.repeat(kh, group, axis=0), np.repeat(vh, group, axis=0)  # repeat_kv
    s = (qh @ kh.transpose(0, 2, 1)) * hd ** -0.5
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    allowed = j <= i
    if window:
        allowed &= j > i - window
    s = np.where(allowed, s, -np.inf)
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    a = s / s.sum(axis=-1, keepdims=True)
    return a, (a @ vh).transpose(1, 0, 2).reshape(n, H * hd)


def forward(w, c, ids, value_norms=None, edit_residual=None, edit_heads=None, edit_mlp=None):
    """(maps (L, H, n, n), the final norm's output (n, d), the smallest router gap) in float64. edit_residual(layer,
    x), edit_heads(layer, z): interventions (patching_reference.py), as llama_reference's."""
    H, K, d, I = c["heads"], c["kv_heads"], c["hidden"], c["inter"]
    hd = d // H
    rot = int(hd * c["rotary"])
    fam = c["family"]
    x = w["model.embed_tokens.weight"][ids]
    maps, gap = [], np.inf
    for layer in range(c["layers"]):
        p = f"model.layers.{layer}."
        if edit_residual is not None:
            x = edit_residual(layer, x)

        def W(name):
            return w[p + name + ".weight"]

        if fam == "olmo2":
            h = x if c["wrong"] != "pre-norm" else rms(x, W("post_attention_layernorm"))
            q, k, v = h @ W("self_attn.q_proj").T, h @ W("self_attn.k_proj").T, h @ W("self_attn.v_proj").T
            if c["wrong"] == "per-head-qk":  # Qwen3-style, wrong for OLMo 2
                q = rms(q.reshape(-1, H, hd), W("self_attn.q_norm").reshape(H, hd)).reshape(-1, H * hd)
                k = rms(k.reshape(-1, K, hd), W("self_attn.k_norm").reshape(K, hd)).reshape(-1, K * hd)
            else:
                q, k = rms(q, W("self_attn.q_norm")), rms(k, W("self_attn.k_norm"))
        else:
            h = rms(x, W("input_layernorm"))
            if fam == "phi3":
                qkv = h @ W("self_attn.qkv_proj").T
                q, k, v = qkv[:, :H * hd], qkv[:, H * hd:(H + K) * hd], qkv[:, (H + K) * hd:]
            else:
                q, k, v = h @ W("self_attn.q_proj").T, h @ W("self_attn.k_proj").T, h @ W("self_attn.v_proj").T
        a, heads = attention(q, k, v, H, K, hd, rot, c["theta"], c["window"])
        if edit_heads is not None:
            heads = edit_heads(layer, heads)
        maps.append(a)
        if value_norms is not None:  # OLMo 2: before its post_attention_layernorm
            vh = np.repeat(v.reshape(len(ids), K, hd).transpose(1, 0, 2), H // K, axis=0)  # (H, n, hd)
            value_norms.append(head_value_norms(vh, W("self_attn.o_proj")))
        attn = heads @ W("self_attn.o_proj").T
        if fam == "olmo2":
            if c["wrong"] == "pre-norm":
                x = x + attn
                m = rms(x, W("post_feedforward_layernorm"))
                x = x + (silu(m @ W("mlp.gate_proj").T) * (m @ W("mlp.up_proj").T)) @ W("mlp.down_proj").T
            else:
                x = x + rms(attn, W("post_attention_layernorm"))
                m = (silu(x @ W("mlp.gate_proj").T) * (x @ W("mlp.up_proj").T)) @ W("mlp.down_proj").T
                x = x + rms(m, W("post_feedforward_layernorm"))
            continue
        x = x + attn
        h = rms(x, W("post_attention_layernorm"))
        if fam == "phi3":
            gu = h @ W("mlp.gate_up_proj").T
            gate, up = gu[:, :I], gu[:, I:]  # chunk(2, dim=-1)
            m = (up * silu(gate)) @ W("mlp.down_proj").T
            x = x + (edit_mlp(layer, m) if edit_mlp is not None else m)
        else:
            logits = h @ W("block_sparse_moe.gate").T  # (n, E)
            prob = np.exp(logits - logits.max(axis=-1, keepdims=True))
            prob /= prob.sum(axis=-1, keepdims=True)
            out = np.zeros_like(h)
            for t in range(h.shape[0]):
                order = np.argsort(-logits[t], kind="stable")
                top = order[:c["topk"]]
                if c["topk"] < c["experts"]:  # how far the choice is from flipping
                    gap = min(gap, logits[t, order[c["topk"] - 1]] - logits[t, order[c["topk"]]])
                wts = prob[t, top] / prob[t, top].sum()
                for e, we in zip(top, wts):
                    ep = f"block_sparse_moe.experts.{e}."
                    y = silu(h[t] @ W(ep + "w1").T) * (h[t] @ W(ep + "w3").T)
                    out[t] += we * (y @ W(ep + "w2").T)
            x = x + (edit_mlp(layer, out) if edit_mlp is not None else out)
    return np.stack(maps), rms(x, w["model.norm.weight"]), gap


def make_weights(a, rng):
    H, K, d, I = a.heads, a.kv_heads, a.hidden, a.inter
    hd = d // H
    s = d ** -0.5
    w = {"model.embed_tokens.weight": rng.normal(0, 1.0, (V, d))}

    def g():
        return 1 + rng.normal(0, 0.1, d)

    for layer in range(a.layers):
        p = f"model.layers.{layer}."
        # q and k larger than v so that the maps are far from uniform
        q = rng.normal(0, 1.5 * s, (H * hd, d))
        k, v = rng.normal(0, 1.5 * s, (K * hd, d)), rng.normal(0, s, (K * hd, d))
        if a.family == "olmo2":
            w[p + "post_attention_layernorm.weight"] = g()
            w[p + "post_feedforward_layernorm.weight"] = g()
            w[p + "self_attn.q_norm.weight"] = 1 + rng.normal(0, 0.3, H * hd)
            w[p + "self_attn.k_norm.weight"] = 1 + rng.normal(0, 0.3, K * hd)
        else:
            w[p + "input_layernorm.weight"] = g()
            w[p + "post_attention_layernorm.weight"] = g()
        if a.family == "phi3":
            qkv = np.concatenate([q, k, v])
            w[p + "self_attn.qkv_proj.weight"] = qkv[:-hd] if a.bad_qkv else qkv
        else:
            for name, t in (("q_proj", q), ("k_proj", k), ("v_proj", v)):
                w[p + "self_attn." + name + ".weight"] = t
        w[p + "self_attn.o_proj.weight"] = rng.normal(0, s, (d, H * hd))
        if a.family == "phi3":
            gu = rng.normal(0, s, (2 * I, d))
            w[p + "mlp.gate_up_proj.weight"] = gu[:I] if a.bad_gate_up else gu
            w[p + "mlp.down_proj.weight"] = rng.normal(0, I ** -0.5, (d, I))
        elif a.family == "olmo2":
            w[p + "mlp.gate_proj.weight"] = rng.normal(0, s, (I, d))
            w[p + "mlp.up_proj.weight"] = rng.normal(0, s, (I, d))
            w[p + "mlp.down_proj.weight"] = rng.normal(0, I ** -0.5, (d, I))
        else:
            w[p + "block_sparse_moe.gate.weight"] = rng.normal(0, 3 * s, (a.experts, d))  # logits of a few units
            for e in range(a.experts):
                ep = p + f"block_sparse_moe.experts.{e}."
                w[ep + "w1.weight"] = rng.normal(0, s, (I, d))
                w[ep + "w2.weight"] = rng.normal(0, 2 * I ** -0.5, (d, I))
                w[ep + "w3.weight"] = rng.normal(0, s, (I, d))
                if a.drop_expert == e and layer == 0:
                    del w[ep + "w2.weight"]
    w["model.norm.weight"] = g()
    w["lm_head.weight"] = rng.normal(0, s, (V, d))
    return w


def make_config(a):
    arch = {"phi3": "Phi3ForCausalLM", "olmo2": "Olmo2ForCausalLM", "mixtral": "MixtralForCausalLM"}[a.family]
    cfg = {"architectures": [arch], "model_type": a.family, "hidden_size": a.hidden, "num_hidden_layers": a.layers,
           "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads, "intermediate_size": a.inter,
           "vocab_size": V, "max_position_embeddings": a.positions, "rms_norm_eps": EPS, "hidden_act": "silu",
           "tie_word_embeddings": False, "bos_token_id": 256, "eos_token_id": 256, "torch_dtype": "float32",
           "attention_bias": False, "rope_scaling": None, "sliding_window": a.window or None}
    if a.family == "mixtral":
        cfg["num_local_experts"], cfg["num_experts_per_tok"] = a.experts, a.topk
        cfg["router_jitter_noise"] = 0.0
    if a.family == "phi3":
        cfg["original_max_position_embeddings"] = a.positions
    if a.v5:
        del cfg["rope_scaling"]
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": a.theta}
        if a.family == "phi3":
            cfg["rope_parameters"]["partial_rotary_factor"] = a.rotary
    else:
        cfg["rope_theta"] = a.theta
        if a.family == "phi3":
            cfg["partial_rotary_factor"] = a.rotary
    return cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--family", required=True, choices=["phi3", "olmo2", "mixtral"])
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--inter", type=int, default=96)
    ap.add_argument("--rotary", type=float, default=1.0)  # Phi-3's partial_rotary_factor
    ap.add_argument("--theta", type=float, default=10000.0)
    ap.add_argument("--window", type=int, default=0)
    ap.add_argument("--experts", type=int, default=4)
    ap.add_argument("--topk", type=int, default=2)
    ap.add_argument("--v5", action="store_true")
    ap.add_argument("--positions", type=int, default=256)
    ap.add_argument("--wrong", default="", choices=["", "per-head-qk", "pre-norm"])
    ap.add_argument("--bad-qkv", action="store_true")      # qkv_proj one head_dim of rows short
    ap.add_argument("--bad-gate-up", action="store_true")  # gate_up_proj with intermediate rows, not 2 x
    ap.add_argument("--drop-expert", type=int, default=-1)  # layer 0's expert E without its w2
    ap.add_argument("--text", default="Hello there, attention heads!")
    ap.add_argument("--patch", help="interventions to run (a JSON list, patching_reference.run_specs), into "
                    "OUT/patch.json")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    held = write_safetensors(os.path.join(a.out, "model.safetensors"), make_weights(a, rng), a.dtype)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(make_config(a), f, indent=2)
    with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False)
    if a.bad_qkv or a.bad_gate_up or a.drop_expert >= 0:
        return
    ids = [256] + list(a.text.encode("utf-8"))  # BOS, then one token per byte
    c = {"family": a.family, "heads": a.heads, "kv_heads": a.kv_heads, "hidden": a.hidden, "inter": a.inter,
         "layers": a.layers, "rotary": a.rotary if a.family == "phi3" else 1.0, "theta": a.theta, "window": a.window,
         "experts": a.experts, "topk": a.topk, "wrong": a.wrong}
    value_norms = []
    maps, hidden, gap = forward(held, c, ids, value_norms)
    # float32 router logits are within ~1e-5 of these: a closer call could route differently, so none is allowed.
    if gap < 1e-3:
        sys.exit(f"llama_kin_reference.py: a router choice {gap:.2g} from flipping; pick another --seed")
    expected = {"ids": ids, "kv_head": [h // (a.heads // a.kv_heads) for h in range(a.heads)],
                "weights": maps.tolist(), "hidden": hidden.tolist(), "rollout": rollout(maps).tolist(),
                "router_gap": None if gap == np.inf else gap, "value_norms": np.stack(value_norms).tolist()}
    with open(os.path.join(a.out, "expected.json"), "w") as f:
        json.dump(expected, f)
    if a.patch:
        out = patching_reference.run_specs(json.loads(a.patch), lambda t, **hooks: forward(held, c, t, **hooks)[1],
                                           held["lm_head.weight"], a.layers, a.heads, a.hidden // a.heads)
        with open(os.path.join(a.out, "patch.json"), "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
