"""Independent float64 reference for scenes with kv_heads and rope (issue 19), written from the issue's formulas,
not from the engine: q = X W_Q + b_Q, k = X_key W_K[kv] + b_K[kv], v likewise; then for t < dims/2 the pair
(t, t + dims/2) of q and k turns by angle = position * theta^(-2t/dims) (Hugging Face's rotate_half); scores
q k^T / sqrt(d_k) (or the scene's scale), the mask, softmax, weights V, concat, W_O.
Also the later scene keys: rope "scaling" (linear: every frequency / factor; llama3: transformers'
_compute_llama3_parameters, written from its definition), and q_norm / k_norm (RMSNorm over d_k, before the
rotation: x / sqrt(mean(x^2) + eps) * weight), and an explicit 0/1 mask.

usage: gqa_rope_reference.py SCENE.json OUT.json   (OUT: {"heads": [{"q", "k", "weights", "output"}], "output"})
"""
import json
import sys

import numpy as np


def frequencies(theta, dims, scaling):
    f = theta ** (-2.0 * np.arange(dims // 2, dtype=np.float64) / dims)
    if not scaling:
        return f
    if scaling["rope_type"] == "linear":
        return f / scaling["factor"]
    factor, lo, hi = scaling["factor"], scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    old = scaling.get("original_max_position_embeddings", 8192)
    out = []
    for v in f:
        wavelen = 2 * np.pi / v
        if wavelen < old / hi:
            out.append(v)
        elif wavelen > old / lo:
            out.append(v / factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append((1 - smooth) * v / factor + smooth * v)
    return np.array(out)


def rms_norm(x, norm):
    if not norm:
        return x
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + norm.get("eps", 1e-6)) * np.array(norm["weight"])


def rotate(x, positions, theta, dims, scaling=None):
    half = dims // 2
    angle = np.asarray(positions, dtype=np.float64)[:, None] * frequencies(theta, dims, scaling)[None, :]  # (n, half)
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
    elif isinstance(scene.get("mask"), list):
        mask = np.array(scene["mask"]) == 1
    heads_out, outputs = [], []
    for head in scene["heads"]:
        kv = scene["kv_heads"][head["kv"]] if "kv_heads" in scene else head
        q = x @ mat(head["w_q"]) + mat(head.get("b_q", 0.0))
        k = xk @ mat(kv["w_k"]) + mat(kv.get("b_k", 0.0))
        v = xv @ mat(kv["w_v"]) + mat(kv.get("b_v", 0.0))
        q, k = rms_norm(q, scene.get("q_norm")), rms_norm(k, scene.get("k_norm"))
        if rope:
            q = rotate(q, qpos, float(rope["theta"]), int(rope["dims"]), rope.get("scaling"))
            k = rotate(k, kpos, float(rope["theta"]), int(rope["dims"]), rope.get("scaling"))
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
