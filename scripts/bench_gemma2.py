#!/usr/bin/env python3
"""Gemma-2-2B's shape (26 layers, 8 heads, 4 KV heads, head_dim 256, hidden 2304, intermediate 9216; vocab 1024 to
keep the file small) for scripts/bench-gemma2.sh.

  bench_gemma2.py make DIR N       a random BF16 checkpoint (config.json, model.safetensors, tokenizer.json: one
                                   token per byte, BOS 256) and DIR/text.txt, N - 1 bytes (N tokens with BOS)
  bench_gemma2.py torch DIR RUNS [DEVICE]
                                   PyTorch eager float32 (on 2 CPU threads, or on DEVICE, e.g. cuda), written in
                                   plain torch ops as transformers' Gemma2ForCausalLM runs with
                                   output_attentions=True (every layer's (heads, n, n) map kept, on the device;
                                   eager attention: scores, soft cap, mask, softmax); one JSON line of the
                                   forward's seconds per run (the weights loaded and moved once, before; on a GPU
                                   each run ends with torch.cuda.synchronize())
"""
import json
import math
import os
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "model"))

L, H, K, HD, D, I, V = 26, 8, 4, 256, 2304, 9216, 1024


def shapes():
    s = [("model.embed_tokens.weight", (V, D))]
    for layer in range(L):
        p = f"model.layers.{layer}."
        s += [(p + "input_layernorm.weight", (D,)), (p + "self_attn.q_proj.weight", (H * HD, D)),
              (p + "self_attn.k_proj.weight", (K * HD, D)), (p + "self_attn.v_proj.weight", (K * HD, D)),
              (p + "self_attn.o_proj.weight", (D, H * HD)), (p + "post_attention_layernorm.weight", (D,)),
              (p + "pre_feedforward_layernorm.weight", (D,)), (p + "mlp.gate_proj.weight", (I, D)),
              (p + "mlp.up_proj.weight", (I, D)), (p + "mlp.down_proj.weight", (D, I)),
              (p + "post_feedforward_layernorm.weight", (D,))]
    return s + [("model.norm.weight", (D,))]


def make(out, n):
    from llama_reference import tokenizer_json
    os.makedirs(out, exist_ok=True)
    header, offset = {}, 0
    for name, shape in shapes():
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    # One pool of 2^24 N(0, 1) values, tensors cut from it at random offsets and scaled: 2 billion fresh normals
    # take many minutes on a loaded machine, and the timings do not depend on the values.
    rng = np.random.default_rng(0)
    pool = rng.standard_normal(1 << 24, dtype=np.float32)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape in shapes():
            scale = np.float32(0.1 if len(shape) == 1 else shape[1] ** -0.5)
            count = int(np.prod(shape))
            for start in range(0, count, 1 << 22):
                m = min(1 << 22, count - start)
                at = int(rng.integers(0, (1 << 24) - m + 1))
                a = pool[at:at + m] * scale
                f.write((a.view(np.uint32) >> 16).astype(np.uint16).tobytes())  # BF16 by truncation
    cfg = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": D, "num_hidden_layers": L,
           "num_attention_heads": H, "num_key_value_heads": K, "head_dim": HD, "intermediate_size": I,
           "vocab_size": V, "max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256, "sliding_window": 4096,
           "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "torch_dtype": "bfloat16",
           "tie_word_embeddings": True, "bos_token_id": 256, "eos_token_id": 256}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False)
    words = ("the attention maps of every head in every layer " * 64).encode()
    with open(os.path.join(out, "text.txt"), "wb") as f:
        f.write(words[: n - 1])


def load(out, torch):
    """name -> float32 torch tensor, read from the BF16 file one tensor at a time."""
    with open(os.path.join(out, "model.safetensors"), "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        base = 8 + size
        w = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            a, b = info["data_offsets"]
            f.seek(base + a)
            raw = np.frombuffer(f.read(b - a), dtype=np.uint16)
            w[name] = torch.from_numpy((raw.astype(np.uint32) << 16).view(np.float32).reshape(info["shape"]))
    return w


def torch_forward(torch, w, ids, dev="cpu"):
    F = torch.nn.functional
    n, eps = len(ids), 1e-6
    normalizer = torch.tensor(D ** 0.5, dtype=torch.bfloat16).float().to(dev)  # GemmaModel's, in the model's dtype

    def rms(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + g)

    inv = 1.0 / (10000.0 ** (torch.arange(0, HD, 2, dtype=torch.int64, device=dev).float() / HD))
    freqs = torch.arange(n, device=dev).float()[:, None] * inv[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rope(t):
        half = t.shape[-1] // 2
        return t * cos + torch.cat([-t[..., half:], t[..., :half]], dim=-1) * sin

    i = torch.arange(n, device=dev)[:, None]
    j = torch.arange(n, device=dev)[None, :]
    full = torch.where(j <= i, 0.0, float("-inf"))
    sliding = torch.where((j <= i) & (j > i - 4096), 0.0, float("-inf"))
    x = w["model.embed_tokens.weight"][torch.tensor(ids, device=dev)] * normalizer
    maps = []
    for layer in range(L):
        p = f"model.layers.{layer}."
        h = rms(x, w[p + "input_layernorm.weight"])
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(n, H, HD).transpose(0, 1)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(n, K, HD).transpose(0, 1)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(n, K, HD).transpose(0, 1)
        q, k = rope(q), rope(k)
        k = k.repeat_interleave(H // K, dim=0)  # repeat_kv
        v = v.repeat_interleave(H // K, dim=0)
        s = (q @ k.transpose(1, 2)) * 256 ** -0.5
        s = torch.tanh(s / 50.0) * 50.0
        s = s + (sliding if layer % 2 == 0 else full)
        a = F.softmax(s, dim=-1, dtype=torch.float32)
        maps.append(a)
        o = (a @ v).transpose(0, 1).reshape(n, H * HD) @ w[p + "self_attn.o_proj.weight"].T
        x = x + rms(o, w[p + "post_attention_layernorm.weight"])
        h = rms(x, w[p + "pre_feedforward_layernorm.weight"])
        m = F.gelu(h @ w[p + "mlp.gate_proj.weight"].T, approximate="tanh") * (h @ w[p + "mlp.up_proj.weight"].T)
        x = x + rms(m @ w[p + "mlp.down_proj.weight"].T, w[p + "post_feedforward_layernorm.weight"])
    return rms(x, w["model.norm.weight"]), maps


def run_torch(out, runs, dev="cpu"):
    import torch
    torch.set_num_threads(2)
    w = {name: t.to(dev) for name, t in load(out, torch).items()}
    sync = torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
    with open(os.path.join(out, "text.txt"), "rb") as f:
        ids = [256] + list(f.read())
    times = []
    with torch.no_grad():
        for _ in range(runs):
            sync()
            t0 = time.perf_counter()
            hidden, maps = torch_forward(torch, w, ids, dev)
            sync()
            times.append(time.perf_counter() - t0)
            del hidden, maps
    device = torch.cuda.get_device_name() if dev.startswith("cuda") else "cpu"
    print(json.dumps({"n": len(ids), "torch": torch.__version__, "device": device,
                      "forward_s": [round(t, 3) for t in times]}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]))
    else:
        run_torch(sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "cpu")
