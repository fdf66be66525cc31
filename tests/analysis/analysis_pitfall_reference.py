#!/usr/bin/env python3
# An independent NumPy version of each seed pitfall (tests/analysis/test_analysis_pitfalls.cpp compares the engine with
# it). Usage: analysis_pitfall_reference.py SCENE.json PITFALL  -> JSON on stdout:
# {"weights": [per head (n_q, n_k)], "output": (n_q, d_model) or null, "entropy": [per head]}
import json
import sys

import numpy as np

scene = json.load(open(sys.argv[1]))
pitfall = sys.argv[2]
X = np.array(scene["query"], dtype=np.float64)
Xk = np.array(scene["key"], dtype=np.float64) if "key" in scene else X
Xv = np.array(scene["value"], dtype=np.float64) if "value" in scene else Xk
n_q, n_k = X.shape[0], Xk.shape[0]
d_model = scene["d_model"]
heads = scene["heads"]

mask = scene.get("mask", "none")
allowed = np.ones((n_q, n_k), dtype=bool)
if mask == "causal":
    allowed = np.arange(n_k)[None, :] <= np.arange(n_q)[:, None]
elif isinstance(mask, list):
    allowed = np.array(mask, dtype=bool)
if "key_padding" in scene:
    allowed &= ~np.array(scene["key_padding"], dtype=bool)[None, :]
if pitfall == "mask_ignored":
    allowed = np.ones((n_q, n_k), dtype=bool)

sum_dk = sum(len(h["w_q"][0]) for h in heads)


def softmax_rows(s, ok):
    s = np.where(ok, s, -np.inf)
    m = s.max(axis=1, keepdims=True)
    e = np.where(ok, np.exp(s - np.where(np.isfinite(m), m, 0)), 0.0)
    tot = e.sum(axis=1, keepdims=True)
    return np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)


def entropy_rows(w, ok):
    # rows with one allowed key (weight 1 by construction) are left out, as the heads' statistics do
    rows = [r for r, a in zip(w, ok) if r.sum() > 0 and a.sum() > 1]
    return float(np.mean([-(r[r > 0] * np.log(r[r > 0])).sum() for r in rows])) if rows else 0.0


weights, outs, entropy = [], [], []
for h in heads:
    proj = lambda rows, w, b: rows @ np.array(h[w]) + (np.array(h[b]) if b in h else 0)
    Q, K, V = proj(X, "w_q", "b_q"), proj(Xk, "w_k", "b_k"), proj(Xv, "w_v", "b_v")
    d_k = Q.shape[1]
    scale = {"scale_full_width": 1 / np.sqrt(sum_dk), "scale_d_model": 1 / np.sqrt(d_model),
             "no_scale": 1.0}.get(pitfall, scene.get("scale", 1 / np.sqrt(d_k)))
    S = scale * (Q @ K.T)
    if pitfall == "softmax_query_axis":
        W = softmax_rows(S.T, allowed.T).T
        entropy.append(entropy_rows(W.T, allowed.T))
    else:
        W = softmax_rows(S, allowed)
        entropy.append(entropy_rows(W, allowed))
    weights.append(W.tolist())
    outs.append(W @ V)

concat = np.concatenate(outs, axis=1)
sum_dv = concat.shape[1]
output = concat
if "w_o" in scene:
    output = concat @ np.array(scene["w_o"]) + (np.array(scene["b_o"]) if "b_o" in scene else 0)
if pitfall == "reshape_dk_for_dv" and sum_dk != sum_dv:
    output = None  # reshape((n, sum_dk)) of n * sum_dv values fails
json.dump({"weights": weights, "output": None if output is None else output.tolist(), "entropy": entropy},
          sys.stdout)
