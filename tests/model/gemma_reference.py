#!/usr/bin/env python3
"""Tiny Gemma checkpoints (model_type gemma, gemma2, gemma3_text, gemma3) for attnscope's tests, and an independent
NumPy float64 forward on them, written from transformers' modeling_gemma.py, modeling_gemma2.py and
modeling_gemma3.py, not from attnscope's C++:
- GemmaRMSNorm: x / sqrt(mean(x^2) + eps) * (1 + w);
- the embedding times sqrt(hidden_size) cast to the model's dtype (GemmaModel's `normalizer`,
  Gemma3TextScaledWordEmbedding's embed_scale.to(weight.dtype));
- q_proj / k_proj / v_proj viewed as (n, heads, head_dim), head_dim from the config; Gemma 3: q_norm and k_norm
  (GemmaRMSNorm over head_dim) before RoPE; rotate_half RoPE on rope_theta (Gemma 3's sliding layers on
  rope_local_base_freq, unscaled; its global ones with rope_scaling);
- scores q k^T times head_dim^-0.5 (Gemma) or query_pre_attn_scalar^-0.5 (Gemma 2/3); Gemma 2: tanh(s / c) c
  (attn_logit_softcapping) before the mask; the causal mask, and on sliding layers keys i - W < j <= i;
  repeat_kv: query head h reads kv head h // (heads / kv_heads);
- Gemma: x += o_proj(attn); x += mlp(post_attention_layernorm(x)). Gemma 2/3 (sandwich norms):
  x += post_attention_layernorm(o_proj(attn(input_layernorm(x))));
  x += post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x)));
- GemmaMLP: down(gelu_pytorch_tanh(gate(x)) * up(x)); the final norm.
Sliding layers: layer_types, else Gemma 2's `not bool(layer_idx % 2)` and Gemma 3's
`bool((layer_idx + 1) % sliding_window_pattern)`.

Usage: gemma_reference.py OUT_DIR [--family gemma|gemma2|gemma3_text|gemma3] [--dtype F32|F16|BF16]
       [--layers L] [--heads H] [--kv-heads K] [--head-dim D] [--hidden D] [--inter I] [--scalar S]
       [--softcap C|none] [--window W] [--layer-types sf..] [--pattern P] [--rope-theta T] [--local-theta T]
       [--linear-scaling F] [--v5] [--torch-dtype bfloat16|float16|float32] [--positions P] [--text TEXT]
       [--seed S] [--bad-shape]
Writes OUT_DIR/{config.json, model.safetensors, tokenizer.json} in the family's exact tensor names (gemma3: the
text model under language_model.model., beside a vision tower tensor that is not read) and OUT_DIR/expected.json:
{"ids", "weights": [L][H][n][n], "hidden": [n][d], "rollout": [n][n]}, float64. The same --seed gives the same
arrays whatever the family (every array is drawn; a family writes those it has), so that families differ only
in their switches.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

import patching_reference  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_reference import rollout, write_safetensors  # noqa: E402  (shared helpers)
from llama_reference import capture_attention, finish_capture, head_value_norms, tokenizer_json  # noqa: E402

V = 300


def rms1(x, w, eps):
    """GemmaRMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w), over the last axis."""
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * (1.0 + w)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def in_dtype(x, torch_dtype):
    """torch.tensor(x, dtype=...) from a Python float: round to nearest even with 8 (bf16), 11 (f16) or 24 bits."""
    bits = {"bfloat16": 8, "float16": 11, "float32": 24}[torch_dtype]
    m, e = math.frexp(x)  # x = m 2^e, 0.5 <= m < 1
    return round(m * 2 ** bits) / 2 ** bits * 2 ** e


def forward(w, c, ids, value_norms=None, attention=None, edit_residual=None, edit_heads=None, edit_mlp=None):
    """(maps (L, H, n, n), final norm output (n, d)) in float64. w: name -> array (PyTorch layouts), names without
    the body prefix; c: the reference's switches. `attention(layer, q, k, v, window)`, when given, sees each layer's
    q (H, n, hd) and k, v (K, n, hd) after RoPE, before repeat_kv (llama_reference.capture_attention).
    edit_residual(layer, x), edit_heads(layer, z): interventions (patching_reference.py), as llama_reference's."""
    H, K, hd, eps = c["heads"], c["kv_heads"], c["head_dim"], 1e-6
    n = len(ids)
    pos = np.arange(n, dtype=np.float64)

    def cos_sin(theta, factor):
        inv = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd) / factor
        emb = np.concatenate([pos[:, None] * inv[None, :]] * 2, axis=-1)
        return np.cos(emb), np.sin(emb)

    x = w["embed_tokens.weight"][ids] * in_dtype(math.sqrt(c["hidden"]), c["torch_dtype"])
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    maps = []
    for layer in range(c["layers"]):
        p = f"layers.{layer}."
        if edit_residual is not None:
            x = edit_residual(layer, x)
        sliding = c["sliding"][layer]
        h = rms1(x, w[p + "input_layernorm.weight"], eps)

        def proj(t, name, heads):
            y = t @ w[p + name + ".weight"].T
            if p + name + ".bias" in w:
                y = y + w[p + name + ".bias"]
            return y.reshape(n, heads, hd).transpose(1, 0, 2)  # (heads, n, hd)

        q, k, v = proj(h, "self_attn.q_proj", H), proj(h, "self_attn.k_proj", K), proj(h, "self_attn.v_proj", K)
        if c["qk_norm"]:
            q = rms1(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms1(k, w[p + "self_attn.k_norm.weight"], eps)
        if sliding and c["local_theta"]:
            cos, sin = cos_sin(c["local_theta"], 1.0)
        else:
            cos, sin = cos_sin(c["rope_theta"], c["linear_factor"])
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if attention is not None:
            attention(layer, q, k, v, c["window"] if sliding else 0)
        k, v = np.repeat(k, H // K, axis=0), np.repeat(v, H // K, axis=0)  # repeat_kv
        s = (q @ k.transpose(0, 2, 1)) * c["scaling"]
        if c["softcap"]:
            s = np.tanh(s / c["softcap"]) * c["softcap"]
        seen = (j <= i) & ((j > i - c["window"]) if sliding else True)
        s = np.where(seen, s, -np.inf)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        a = s / s.sum(axis=-1, keepdims=True)
        maps.append(a)
        if value_norms is not None:  # before the sandwich norm: what each head writes into o_proj's sum
            value_norms.append(head_value_norms(v, w[p + "self_attn.o_proj.weight"]))
        z = (a @ v).transpose(1, 0, 2).reshape(n, H * hd)
        if edit_heads is not None:
            z = edit_heads(layer, z)
        o = z @ w[p + "self_attn.o_proj.weight"].T
        if p + "self_attn.o_proj.bias" in w:
            o = o + w[p + "self_attn.o_proj.bias"]
        if c["sandwich"]:
            x = x + rms1(o, w[p + "post_attention_layernorm.weight"], eps)
            h = rms1(x, w[p + "pre_feedforward_layernorm.weight"], eps)
        else:
            x = x + o
            h = rms1(x, w[p + "post_attention_layernorm.weight"], eps)
        m = (gelu_tanh(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)) @ \
            w[p + "mlp.down_proj.weight"].T
        if edit_mlp is not None:  # before the sandwich norm
            m = edit_mlp(layer, m)
        x = x + (rms1(m, w[p + "post_feedforward_layernorm.weight"], eps) if c["sandwich"] else m)
    return np.stack(maps), rms1(x, w["norm.weight"], eps)


def make_weights(a, rng):
    """Every array any family has, drawn in one order; names without prefix. Gemma 1's pre-MLP norm is drawn as
    pre_feedforward_layernorm and renamed when written, so Gemma and Gemma 2 differ only in the sandwich norms."""
    H, K, hd, d, inter = a.heads, a.kv_heads, a.head_dim, a.hidden, a.inter
    s = d ** -0.5
    w = {"embed_tokens.weight": rng.normal(0, s, (V, d))}  # times sqrt(d): rows of size about 1
    for layer in range(a.layers):
        p = f"layers.{layer}."
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            w[p + norm + ".weight"] = rng.normal(0, 0.2, d)  # applied as 1 + w
        # q and k larger than v so that the maps are far from uniform
        w[p + "self_attn.q_proj.weight"] = rng.normal(0, 2.5 * s, (H * hd, d))
        w[p + "self_attn.k_proj.weight"] = rng.normal(0, 2.5 * s, (K * hd, d))
        w[p + "self_attn.v_proj.weight"] = rng.normal(0, s, (K * hd, d))
        w[p + "self_attn.o_proj.weight"] = rng.normal(0, (H * hd) ** -0.5, (d, H * hd))
        w[p + "self_attn.q_norm.weight"] = rng.normal(0, 0.3, hd)
        w[p + "self_attn.k_norm.weight"] = rng.normal(0, 0.3, hd)
        w[p + "mlp.gate_proj.weight"] = rng.normal(0, s, (inter, d))
        w[p + "mlp.up_proj.weight"] = rng.normal(0, s, (inter, d))
        w[p + "mlp.down_proj.weight"] = rng.normal(0, inter ** -0.5, (d, inter))
    w["norm.weight"] = rng.normal(0, 0.2, d)
    return w


def family_weights(w, a):
    """The arrays the family's checkpoint holds, under their names (without prefix)."""
    out = {}
    for name, arr in w.items():
        if ("q_norm" in name or "k_norm" in name) and not a.family.startswith("gemma3"):
            continue
        if a.family == "gemma":
            if "post_attention_layernorm" in name or "post_feedforward_layernorm" in name:
                continue
            name = name.replace("pre_feedforward_layernorm", "post_attention_layernorm")
        out[name] = arr
    if a.bad_shape:  # hostile: layer 0's q_proj with one head too few
        out["layers.0.self_attn.q_proj.weight"] = out["layers.0.self_attn.q_proj.weight"][: -a.head_dim]
    return out


def sliding_layers(a):
    if a.layer_types:
        return [t == "s" for t in a.layer_types]
    if a.family == "gemma":
        return [False] * a.layers
    if a.family == "gemma2":
        return [layer % 2 == 0 for layer in range(a.layers)]
    return [(layer + 1) % a.pattern != 0 for layer in range(a.layers)]


def make_config(a):
    t = "gemma3_text" if a.family == "gemma3" else a.family
    cfg = {"architectures": ["X"], "model_type": t, "hidden_size": a.hidden, "num_hidden_layers": a.layers,
           "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads, "head_dim": a.head_dim,
           "intermediate_size": a.inter, "vocab_size": V, "max_position_embeddings": a.positions,
           "rms_norm_eps": 1e-6, "hidden_activation": "gelu_pytorch_tanh", "hidden_act": "gelu",
           "bos_token_id": 256, "eos_token_id": 256, "pad_token_id": 0, "attention_bias": False,
           "tie_word_embeddings": True}
    if a.family != "gemma":
        cfg["query_pre_attn_scalar"] = a.scalar
        cfg["sliding_window"] = a.window
        cfg["attn_logit_softcapping"] = None if a.softcap == "none" else float(a.softcap)
        cfg["final_logit_softcapping"] = None if a.family.startswith("gemma3") else 30.0
        if a.layer_types:
            cfg["layer_types"] = ["sliding_attention" if ch == "s" else "full_attention" for ch in a.layer_types]
    scaling = {"rope_type": "linear", "factor": a.linear_scaling} if a.linear_scaling else None
    if a.family.startswith("gemma3"):
        cfg["sliding_window_pattern"] = a.pattern
        if a.v5:
            cfg["rope_parameters"] = {"full_attention": dict(scaling or {"rope_type": "default"}, rope_theta=a.rope_theta),
                                      "sliding_attention": {"rope_type": "default", "rope_theta": a.local_theta}}
        else:
            cfg["rope_theta"], cfg["rope_local_base_freq"], cfg["rope_scaling"] = a.rope_theta, a.local_theta, scaling
    elif a.v5:
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": a.rope_theta}
    else:
        cfg["rope_theta"] = a.rope_theta
    dtype_key = "dtype" if a.v5 else "torch_dtype"
    if a.family == "gemma3":  # Gemma3ForConditionalGeneration: the text model in text_config
        return {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "text_config": cfg,
                "vision_config": {"model_type": "siglip_vision_model"}, dtype_key: a.torch_dtype,
                "tie_word_embeddings": True}
    cfg[dtype_key] = a.torch_dtype
    return cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--family", default="gemma2", choices=["gemma", "gemma2", "gemma3_text", "gemma3"])
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=16)  # not hidden / heads (12)
    ap.add_argument("--hidden", type=int, default=48)    # sqrt(48) = 6.928..., 6.9375 in bf16
    ap.add_argument("--inter", type=int, default=96)
    ap.add_argument("--scalar", type=float, default=24.0)  # query_pre_attn_scalar, not head_dim
    ap.add_argument("--softcap", default="none")
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--layer-types", default="")  # e.g. "sf": layer 0 sliding, layer 1 full
    ap.add_argument("--pattern", type=int, default=2)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--local-theta", type=float, default=10000.0)
    ap.add_argument("--linear-scaling", type=float, default=0.0)
    ap.add_argument("--v5", action="store_true")
    ap.add_argument("--torch-dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--positions", type=int, default=256)
    ap.add_argument("--bad-shape", action="store_true")
    ap.add_argument("--text", default="Hello there, attention heads!")
    ap.add_argument("--capture", help="also write an attnscope capture of the run to this folder "
                    "(llama_reference.capture_attention: the capture's attention function called as transformers does)")
    ap.add_argument("--capture-lse", action="store_true", help="the capture stores each row's log-sum-exp")
    ap.add_argument("--capture-values", action="store_true", help="the capture stores v and W_O's rows")
    ap.add_argument("--patch", help="interventions to run (a JSON list, patching_reference.run_specs), into "
                    "OUT/patch.json")
    a = ap.parse_args()
    if a.layer_types and len(a.layer_types) != a.layers:
        sys.exit("--layer-types needs one letter per layer")
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    ours = family_weights(make_weights(a, rng), a)
    prefix = "language_model.model." if a.family == "gemma3" else "model."
    tensors = {prefix + name: arr for name, arr in ours.items()}
    if a.family == "gemma3":  # a vision tower tensor: not the text model's, never read
        tensors["vision_tower.vision_model.embeddings.patch_embedding.bias"] = rng.normal(0, 1, 8)
    held = write_safetensors(os.path.join(a.out, "model.safetensors"), tensors, a.dtype)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(make_config(a), f, indent=2)
    with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False)
    if a.bad_shape:
        return
    w = {name[len(prefix):]: arr for name, arr in held.items() if name.startswith(prefix)}
    gemma1 = a.family == "gemma"
    ref = {"heads": a.heads, "kv_heads": a.kv_heads, "head_dim": a.head_dim, "hidden": a.hidden,
           "layers": a.layers, "torch_dtype": a.torch_dtype, "qk_norm": a.family.startswith("gemma3"),
           "sandwich": not gemma1, "scaling": a.head_dim ** -0.5 if gemma1 else a.scalar ** -0.5,
           "softcap": None if gemma1 or a.softcap == "none" else float(a.softcap), "window": a.window,
           "sliding": sliding_layers(a), "rope_theta": a.rope_theta, "linear_factor": a.linear_scaling or 1.0,
           "local_theta": a.local_theta if a.family.startswith("gemma3") else None}
    ids = [256] + list(a.text.encode("utf-8"))  # BOS, then one token per byte
    value_norms = []
    hook = None
    if a.capture:
        texts = ["<bos>"] + [chr(b) if 32 <= b < 127 else f"<0x{b:02X}>" for b in a.text.encode("utf-8")]
        hook = capture_attention(a.capture, f"tiny {a.family}", ids, texts, ref["scaling"], lse=a.capture_lse,
                                 values=a.capture_values, softcap=ref["softcap"] or 0,
                                 o_proj=lambda l: w[f"layers.{l}.self_attn.o_proj.weight"])
    maps, hidden = forward(w, ref, ids, value_norms, attention=hook)
    if a.capture:
        finish_capture(a.capture, 1)
    expected = {"ids": ids, "kv_head": [h // (a.heads // a.kv_heads) for h in range(a.heads)],
                "weights": maps.tolist(), "hidden": hidden.tolist(), "rollout": rollout(maps).tolist(),
                "value_norms": np.stack(value_norms).tolist()}
    with open(os.path.join(a.out, "expected.json"), "w") as f:
        json.dump(expected, f)
    if a.patch:
        final_cap = None if gemma1 or a.family.startswith("gemma3") else 30.0  # make_config's
        H = a.heads
        out = patching_reference.run_specs(json.loads(a.patch),
                                           lambda t, **hooks: forward(w, ref, t, **hooks)[1], w["embed_tokens.weight"],
                                           a.layers, H, a.head_dim, final_cap or 0.0)
        with open(os.path.join(a.out, "patch.json"), "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
