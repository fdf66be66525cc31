#!/usr/bin/env python3
"""NumPy GPT-2 forward (float32, the same shape and work as bench_model.cpp: every layer's maps kept), timed.

Usage: bench_numpy_forward.py [N] [REPEATS]. Prints one JSON line: n, median_s, min_s, runs.
"""
import json
import sys
import time

import numpy as np


def layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def gelu_tanh(x):
    return np.float32(0.5) * x * (np.float32(1) + np.tanh(np.float32(0.7978845608028654) * (x + np.float32(0.044715) * x ** 3)))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    L, H, d, V, P = 12, 12, 768, 50257, 1024
    dh = d // H
    rng = np.random.default_rng(1)
    f32 = np.float32
    wte = rng.uniform(-0.1, 0.1, (V, d)).astype(f32)
    wpe = rng.uniform(-0.02, 0.02, (P, d)).astype(f32)
    blocks = [dict(c_attn_w=rng.uniform(-0.08, 0.08, (d, 3 * d)).astype(f32), c_attn_b=np.zeros(3 * d, f32),
                   c_proj_w=rng.uniform(-0.05, 0.05, (d, d)).astype(f32), c_proj_b=np.zeros(d, f32),
                   fc_w=rng.uniform(-0.05, 0.05, (d, 4 * d)).astype(f32), fc_b=np.zeros(4 * d, f32),
                   proj_w=rng.uniform(-0.03, 0.03, (4 * d, d)).astype(f32), proj_b=np.zeros(d, f32),
                   g=np.ones(d, f32), b=np.zeros(d, f32)) for _ in range(L)]
    ids = (np.arange(n) * 7919) % V
    causal = np.tril(np.ones((n, n), dtype=bool))
    scale = f32(1 / np.sqrt(dh))

    def forward():
        x = wte[ids] + wpe[:n]
        maps = []
        for blk in blocks:
            a = layer_norm(x, blk["g"], blk["b"])
            qkv = a @ blk["c_attn_w"] + blk["c_attn_b"]
            q = qkv[:, :d].reshape(n, H, dh).transpose(1, 0, 2)
            k = qkv[:, d:2 * d].reshape(n, H, dh).transpose(1, 0, 2)
            v = qkv[:, 2 * d:].reshape(n, H, dh).transpose(1, 0, 2)
            s = (q @ k.transpose(0, 2, 1)) * scale  # (H, n, n)
            s = np.where(causal, s, f32(-np.inf))
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            w = s / s.sum(axis=-1, keepdims=True)
            maps.append(w)
            out = (w @ v).transpose(1, 0, 2).reshape(n, d)
            x = x + out @ blk["c_proj_w"] + blk["c_proj_b"]
            m = gelu_tanh(layer_norm(x, blk["g"], blk["b"]) @ blk["fc_w"] + blk["fc_b"])
            x = x + m @ blk["proj_w"] + blk["proj_b"]
        return maps, layer_norm(x, np.ones(d, f32), np.zeros(d, f32))

    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        maps, hidden = forward()
        times.append(time.perf_counter() - t)
        assert len(maps) == L and maps[0].dtype == np.float32
        del maps, hidden
    print(json.dumps({"n": n, "median_s": float(np.median(times)), "min_s": min(times), "runs": repeats}))


if __name__ == "__main__":
    main()
