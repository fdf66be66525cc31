"""The Export tab's value-norm test (gui_export_value_norms): a cross-attention scene of 4 query heads sharing
2 key/value heads, with value biases and a mixing W_O, and NumPy's float64 numbers for it.

Writes OUT/vn_scene.json and OUT/vn_expected.json: {"weights": [h][n_q][n_k] (alpha_ij), "norms": [h][n_k]
(||(x_j W_V + b_V) W_O^h||, W_O^h head h's d_v rows of W_O, V from the head's KV head), "weighted": [h][n_q][n_k]
(alpha_ij * norms[h][j])}. The inputs are multiples of 1/8, so the file's decimals are the floats NumPy uses.

usage: /usr/bin/python3 value_norms_fixture.py OUT
"""
import json
import sys

import numpy as np

D, NQ, NK, HEADS, KV, DK, DV = 4, 3, 4, 4, 2, 2, 2


def eighths(rng, *shape):
    return rng.integers(-12, 13, size=shape) / 8.0


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(32)
    xq, xk, xv = eighths(rng, NQ, D), eighths(rng, NK, D), eighths(rng, NK, D)
    kv = [{"w_k": eighths(rng, D, DK), "w_v": eighths(rng, D, DV), "b_k": eighths(rng, DK), "b_v": eighths(rng, DV)}
          for _ in range(KV)]
    heads = [{"w_q": eighths(rng, D, DK), "b_q": eighths(rng, DK), "kv": h // 2} for h in range(HEADS)]
    w_o, b_o = eighths(rng, HEADS * DV, D), eighths(rng, D)

    weights, norms = [], []
    for h, head in enumerate(heads):
        g = kv[head["kv"]]
        q = xq @ head["w_q"] + head["b_q"]
        k = xk @ g["w_k"] + g["b_k"]
        v = xv @ g["w_v"] + g["b_v"]  # (n_k, d_v)
        s = q @ k.T / np.sqrt(DK)
        a = np.exp(s - s.max(axis=1, keepdims=True))
        weights.append(a / a.sum(axis=1, keepdims=True))
        norms.append(np.linalg.norm(v @ w_o[h * DV:(h + 1) * DV], axis=1))  # what head h writes for key j
    weights, norms = np.array(weights), np.array(norms)

    lst = lambda a: np.asarray(a).tolist()
    scene = {"format": "attnscope-scene", "version": 1,
             "description": "gui_export_value_norms: 4 query heads on 2 KV heads, value biases, a mixing W_O",
             "d_model": D, "query_tokens": ["q1", "q2", "q3"], "key_tokens": ["k1", "k2", "k3", "k4"],
             "query": lst(xq), "key": lst(xk), "value": lst(xv),
             "kv_heads": [{name: lst(m) for name, m in g.items()} for g in kv],
             "heads": [{"w_q": lst(hd["w_q"]), "b_q": lst(hd["b_q"]), "kv": hd["kv"]} for hd in heads],
             "w_o": lst(w_o), "b_o": lst(b_o)}
    with open(f"{out}/vn_scene.json", "w") as f:
        json.dump(scene, f)
    with open(f"{out}/vn_expected.json", "w") as f:
        json.dump({"weights": lst(weights), "norms": lst(norms), "weighted": lst(weights * norms[:, None, :])}, f)


if __name__ == "__main__":
    main()
