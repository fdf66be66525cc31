#!/usr/bin/env python3
"""Finding heads across a checkpoint, in NumPy float64, written from the definitions (README "Head-type scores";
Elhage et al. 2021 for composition), not from attnscope's C++: the head-type scores of every layer and head on
the given ids, from maps this script's own forward computes (gpt2_reference.py's or llama_reference.py's), and
the composition scores from DENSE d x d products per pair (what the engine avoids), so the two meet only in
the definitions.

Direct logit attribution from the definition: the residual stream's parts at the position (the forward's own
embedding, each head's output through its rows of W_O, W_O's bias, each MLP's output), each read through the
final norm with its scale frozen at this forward's: (part - mean part) . (g * W_U[t]) / s for LayerNorm,
part . (g * W_U[t]) / s for RMSNorm.

Usage: head_finding_reference.py DIR --family gpt2|llama --ids '[...]' [--window 2] [--dla-position P]
       [--dla-target T]
Prints JSON: {"head_scores": {name: [L][H] or null}, "composition": {"q","k","v": [L][H][L][H]},
"dla": {"position", "target", "top", "logit", "heads": [L][H], "attention_bias", "mlp": [L], "embedding",
"final_bias"}}.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference  # noqa: E402
import llama_reference  # noqa: E402


def read_safetensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        raw = data[t["data_offsets"][0]:t["data_offsets"][1]]
        if t["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif t["dtype"] == "F16":
            a = np.frombuffer(raw, dtype="<f2")
        else:  # BF16: the high half of a float32
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        out[name] = a.astype(np.float64).reshape(t["shape"])
    return out


def head_scores(maps, ids, window):
    """maps: (L, H, n, n). Each score a mean over its rows; rows with one allowed key (row 0, causal) left out."""
    L, H, n, _ = maps.shape
    names = ["previous_token", "current_token", "first_token", "local", "induction", "duplicate_token"]
    out = {name: [[None] * H for _ in range(L)] for name in names}
    for layer in range(L):
        for h in range(H):
            w = maps[layer, h]
            rows = {name: [] for name in names}
            for i in range(1, n):  # row 0 sees only key 0 under the causal mask
                rows["previous_token"].append(w[i, i - 1])
                rows["current_token"].append(w[i, i])
                rows["first_token"].append(w[i, 0])
                rows["local"].append(sum(w[i, j] for j in range(max(0, i - window), min(n, i + window + 1))))
                earlier = [j for j in range(i) if ids[j] == ids[i]]
                if earlier:
                    rows["duplicate_token"].append(sum(w[i, j] for j in earlier))
                    if earlier[-1] + 1 < n:
                        rows["induction"].append(w[i, earlier[-1] + 1])
            for name in names:
                out[name][layer][h] = float(np.mean(rows[name])) if rows[name] else None
    return out


def factors(family, w, cfg):
    """Per layer: g (d), W_Q (H, d, hd), W_K and W_V per query head (its KV head's), W_O (H, hd, d), row-vector form."""
    layers = []
    if family == "gpt2":
        d, H = cfg["n_embd"], cfg["n_head"]
        hd = d // H
        pre = "transformer." if "transformer.wte.weight" in w else ""
        for layer in range(cfg["n_layer"]):
            p = f"{pre}h.{layer}."
            c = w[p + "attn.c_attn.weight"]  # (d, 3d): x c -> q | k | v
            o = w[p + "attn.c_proj.weight"]  # (d, d): z o
            split = lambda base: np.stack([c[:, base + h * hd: base + (h + 1) * hd] for h in range(H)])
            layers.append((w[p + "ln_1.weight"], split(0), split(d), split(2 * d),
                           np.stack([o[h * hd:(h + 1) * hd, :] for h in range(H)])))
    else:
        d, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        hd = cfg.get("head_dim") or d // H
        group = H // KV
        for layer in range(cfg["num_hidden_layers"]):
            p = f"model.layers.{layer}."
            q, k, v = (w[p + f"self_attn.{x}_proj.weight"].T for x in "qkv")  # (d, out)
            o = w[p + "self_attn.o_proj.weight"].T  # (q_dim, d)
            head = lambda m, h: m[:, h * hd:(h + 1) * hd]
            layers.append((w[p + "input_layernorm.weight"], np.stack([head(q, h) for h in range(H)]),
                           np.stack([head(k, h // group) for h in range(H)]),
                           np.stack([head(v, h // group) for h in range(H)]),
                           np.stack([o[h * hd:(h + 1) * hd, :] for h in range(H)])))
    return layers


def composition(layers):
    L, H = len(layers), layers[0][1].shape[0]
    out = {m: np.zeros((L, H, L, H)) for m in "qkv"}
    mats = []
    for g, wq, wk, wv, wo in layers:
        G = np.diag(g)
        mats.append([((G @ wv[h]) @ wo[h], (G @ wq[h]) @ (G @ wk[h]).T) for h in range(H)])  # (W_OV, W_QK)
    fro = np.linalg.norm
    for la in range(L):
        for ha in range(H):
            ov_a = mats[la][ha][0]
            for lb in range(la + 1, L):
                for hb in range(H):
                    ov_b, qk_b = mats[lb][hb]
                    for m, b in (("q", qk_b), ("k", qk_b.T), ("v", ov_b)):
                        out[m][la, ha, lb, hb] = fro(ov_a @ b) / (fro(ov_a) * fro(b))
    return {m: out[m].tolist() for m in "qkv"}


def dla(family, w, cfg, ids, trace, position, target):
    if family == "gpt2":
        pre = "transformer." if "transformer.wte.weight" in w else ""
        g, b, eps = w[pre + "ln_f.weight"], w[pre + "ln_f.bias"], cfg["layer_norm_epsilon"]
        unembed = w[pre + "wte.weight"]
    else:
        g, b, eps = w["model.norm.weight"], None, cfg["rms_norm_eps"]
        unembed = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    xs = [x[position] for x in trace["x"]]
    x = xs[-1]
    if b is not None:  # LayerNorm
        s = np.sqrt(x.var() + eps)
        hidden = (x - x.mean()) / s * g + b
    else:
        s = np.sqrt((x * x).mean() + eps)
        hidden = x / s * g
    logits = unembed @ hidden
    top = int(np.argmax(logits))
    t = top if target is None else target
    u = g * unembed[t]
    part = (lambda c: float((c - c.mean()) @ u / s)) if b is not None else (lambda c: float(c @ u / s))
    L = len(trace["heads"])
    return {"position": position, "target": t, "top": top, "logit": float(logits[t]),
            "heads": [[part(hh[position]) for hh in trace["heads"][l]] for l in range(L)],
            "attention_bias": [part(trace["attn_bias"][l]) for l in range(L)],
            "mlp": [part(xs[2 + 2 * l] - xs[1 + 2 * l]) for l in range(L)],
            "embedding": part(xs[0]), "final_bias": float(b @ unembed[t]) if b is not None else 0.0,
            "u_l1": float(np.abs(u - u.mean() if b is not None else u).sum())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--family", required=True, choices=["gpt2", "llama"])
    ap.add_argument("--ids", required=True)
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--dla-position", type=int, default=None)
    ap.add_argument("--dla-target", type=int, default=None)
    args = ap.parse_args()
    with open(os.path.join(args.dir, "config.json")) as f:
        cfg = json.load(f)
    w = read_safetensors(os.path.join(args.dir, "model.safetensors"))
    ids = json.loads(args.ids)
    trace = {}
    if args.family == "gpt2":
        prefix = "transformer." if "transformer.wte.weight" in w else ""
        maps, _ = gpt2_reference.forward(w, cfg, ids, prefix, trace=trace)
    else:
        maps, _ = llama_reference.forward(w, cfg, ids, trace=trace)
    position = len(ids) - 1 if args.dla_position is None else args.dla_position
    json.dump({"head_scores": head_scores(np.asarray(maps), ids, args.window),
               "composition": composition(factors(args.family, w, cfg)),
               "dla": dla(args.family, w, cfg, ids, trace, position, args.dla_target)}, sys.stdout)


if __name__ == "__main__":
    main()
