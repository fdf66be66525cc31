#!/usr/bin/env python3
"""Qwen3-0.6B-shaped forward, attnscope against NumPy float32, side by side (issue 18's speed goal).

Writes a random BF16 checkpoint of Qwen3-0.6B's shape (28 layers, 16 query heads on 8 kv heads, head_dim 128,
hidden 1024, intermediate 3072; vocabulary 300 with the test tokenizer), then times (1) NumPy's float32 forward
of the same weights on N tokens with every layer's maps kept (llama_reference.forward, transformers' maths,
batched over heads), (2) `attnscope model DIR --text-file T` under /usr/bin/time -v (its whole run: loading
and the forward). Prints one JSON line. Not a ctest: the build machine is shared, so numbers are printed only.

Usage: tests/bench/llama_bench.py BUILD/app/attnscope [WORK_DIR] [N]   (/usr/bin/python3)
"""
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
from llama_reference import forward, tokenizer_json, write_safetensors  # noqa: E402


def qwen3_shaped_checkpoint(work):
    """Writes the random BF16 Qwen3-0.6B-shaped checkpoint into `work`; returns (config, weights as float32)."""
    L, H, KV, hd, d, inter, V = 28, 16, 8, 128, 1024, 3072, 300
    cfg = {"model_type": "qwen3", "hidden_size": d, "num_hidden_layers": L, "num_attention_heads": H,
           "num_key_value_heads": KV, "head_dim": hd, "intermediate_size": inter, "vocab_size": V,
           "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "hidden_act": "silu",
           "tie_word_embeddings": True, "attention_bias": False, "use_sliding_window": False}
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    f32 = np.float32
    shapes = {"model.embed_tokens.weight": (V, d), "model.norm.weight": (d,)}
    for layer in range(L):
        p = f"model.layers.{layer}."
        shapes.update({p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
                       p + "self_attn.q_proj.weight": (H * hd, d), p + "self_attn.k_proj.weight": (KV * hd, d),
                       p + "self_attn.v_proj.weight": (KV * hd, d), p + "self_attn.o_proj.weight": (d, H * hd),
                       p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
                       p + "mlp.gate_proj.weight": (inter, d), p + "mlp.up_proj.weight": (inter, d),
                       p + "mlp.down_proj.weight": (d, inter)})
    tensors = {}
    for name, shape in shapes.items():
        if len(shape) == 1:
            tensors[name] = 1 + 0.1 * rng.standard_normal(shape, dtype=f32)
        else:
            tensors[name] = rng.standard_normal(shape, dtype=f32) * f32(shape[1] ** -0.5)
    held = write_safetensors(os.path.join(work, "model.safetensors"), tensors, "BF16")
    del tensors
    w = {k: v.astype(f32) for k, v in held.items()}  # the BF16 values as float32, what both forwards read
    del held
    with open(os.path.join(work, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(work, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False)
    return cfg, w


def main():
    binary = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else "/tmp/attnscope_llama_bench"
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    cfg, w = qwen3_shaped_checkpoint(work)
    L, H = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    f32 = np.float32
    text = ("attention " * 200)[: n - 1]  # n - 1 bytes: BOS and one token per byte
    with open(os.path.join(work, "text.txt"), "w") as f:
        f.write(text)
    ids = [256] + list(text.encode())
    weight_bytes = sum(v.nbytes for v in w.values())
    map_bytes = L * H * n * n * 4

    t0 = time.perf_counter()
    maps, hidden = forward(w, cfg, ids, dtype=f32)
    numpy_s = time.perf_counter() - t0
    assert maps.dtype == f32 and hidden.dtype == f32, (maps.dtype, hidden.dtype)
    del maps, hidden, w

    r = subprocess.run(["/usr/bin/time", "-v", binary, "model", work, "--text-file", os.path.join(work, "text.txt")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", r.stderr)
    attnscope_s = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) * 1024
    print(json.dumps({"n": n, "numpy_forward_s": round(numpy_s, 2), "attnscope_run_s": round(attnscope_s, 2),
                      "ratio": round(attnscope_s / numpy_s, 3), "attnscope_peak_rss_mib": rss >> 20,
                      "weights_f32_mib": weight_bytes >> 20, "maps_mib": map_bytes >> 20,
                      "rss_over_weights_plus_maps": round(rss / (weight_bytes + map_bytes), 3),
                      "load_avg": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
