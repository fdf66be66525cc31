"""Independent float64 reference for scenes with kv_heads and rope (issue 19), written from the issue's formulas,
not from the engine: q = X W_Q + b_Q, k = X_key W_K[kv] + b_K[kv], v likewise; then for t < dims/2 the pair
(t, t + dims/2) of q and k turns by angle = position * theta^(-2t/dims) (Hugging Face's rotate_half); scores
q k^T / sqrt(d_k) (or the scene's scale), the mask, softmax, weights V, concat, W_O.

usage: gqa_rope_reference.py SCENE.json OUT.json   (OUT: {"heads": [{"q", "k", "weights", "output"}], "output"})
"""
import json
import sys

import numpy as np


def rotate(x, positions, theta, dims):
    half = dims // 2
    t = np.arange(half, dtype=np.float64)
    angle = np.asarray(positions, dtype=np.float64)[:, None] * theta ** (-2.0 * t / dims)[None, :]  # (n, half)
    c, s = np.cos(angle), np.sin(angle)
    out = x.copy()
    a, b = x[:, :half], x[:, half:dims]
    out[:, :half] = a * c - b * s
    out[:, half:dims] = b * c + a * s
    return out


def main(scene_path, out_path):
    scene = json.load(open(scene_path))
    mat = lambda v: np.array(v, dtype=np.float64)
    x = mat(scene["query"])
    xk = mat(scene["key"]) if "key" in scene else x
    xv = mat(scene["value"]) if "value" in scene else xk
    n_q, n_k = x.shape[0], xk.shape[0]
    rope = scene.get("rope")
    qpos = scene.get("query_positions", list(range(n_q)))
    kpos = scene.get("key_positions", list(range(n_k)))
    mask = np.ones((n_q, n_k), dtype=bool)
    if scene.get("mask") == "causal":
        mask = np.tril(np.ones((n_q, n_k), dtype=bool))
    heads_out, outputs = [], []
    for head in scene["heads"]:
        kv = scene["kv_heads"][head["kv"]] if "kv_heads" in scene else head
        q = x @ mat(head["w_q"]) + mat(head.get("b_q", 0.0))
        k = xk @ mat(kv["w_k"]) + mat(kv.get("b_k", 0.0))
        v = xv @ mat(kv["w_v"]) + mat(kv.get("b_v", 0.0))
        if rope:
            q = rotate(q, qpos, float(rope["theta"]), int(rope["dims"]))
            k = rotate(k, kpos, float(rope["theta"]), int(rope["dims"]))
        scale = scene.get("scale", 1.0 / np.sqrt(q.shape[1]))
        s = np.where(mask, q @ k.T * scale, -np.inf)
        w = np.exp(s - s.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        o = w @ v
        outputs.append(o)
        heads_out.append({"q": q.tolist(), "k": k.tolist(), "weights": w.tolist(), "output": o.tolist()})
    concat = np.concatenate(outputs, axis=1)
    out = concat @ mat(scene["w_o"]) + mat(scene.get("b_o", 0.0)) if "w_o" in scene else concat
    json.dump({"heads": heads_out, "output": out.tolist()}, open(out_path, "w"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
