"""Capture what attnscope needs to show a model's attention, from the model where it runs: each layer's queries
after RoPE and keys (O(n d) a layer, where the maps are O(n^2)), written as an attnscope capture folder
(docs/capture.md) that `attnscope view CAPTURE` and the window open.

With Hugging Face transformers (it hands an attention function the query after RoPE and the key before the KV
heads are repeated):

    from transformers import AttentionInterface, AutoModelForCausalLM
    import attnscope_capture
    capture = attnscope_capture.Capture("run1", model="Llama-3-70B", token_ids=ids, tokens=texts)
    AttentionInterface.register("attnscope_capture", capture.attention)
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="attnscope_capture", device_map="auto")
    model(torch.tensor([ids]))
    capture.save()

`capture.attention` keeps batch row 0's q and k of the layer (module.layer_idx), then returns what the stock
attention returns (transformers' sdpa function when transformers is there, else an eager one), so the forward is
unchanged. Only PyTorch is needed (no safetensors package: the files are written here).
"""
import json
import math
import os
import struct

import torch

FORMAT, VERSION = "attnscope-capture", 1
_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def write_safetensors(path, tensors):
    """A safetensors file (an 8-byte little-endian header length, the JSON header, the data) from CPU tensors of
    the dtypes above, written to a temporary name and renamed, so a reader never sees half a file."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().to("cpu").contiguous()
        raw = t.view(torch.int16) if t.dtype in (torch.float16, torch.bfloat16) else t
        data = raw.numpy().tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def eager_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """The stock attention when transformers is not there: (batch, n, heads, d) and the weights, as
    transformers' eager_attention_forward gives them (KV heads repeated, an additive or boolean mask, soft cap)."""
    group = query.shape[1] // key.shape[1]
    key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)
    scores = query @ key.transpose(-1, -2) * (scaling if scaling is not None else query.shape[-1] ** -0.5)
    softcap = kwargs.get("softcap")
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    if attention_mask is not None:
        mask = attention_mask[..., : key.shape[-2]]
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    weights = torch.softmax(scores.float(), dim=-1).to(query.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training if module is not None else False)
    return (weights @ value).transpose(1, 2).contiguous(), weights


def row_log_sum_exp(q, k, scale, causal, window, softcap=0, key_padding=None, block=1024):
    """(heads, n) float32: per query row, log sum_j exp(s_ij) over its allowed keys (j <= i when causal, j > i -
    window with a sliding window, and not a padded key: key_padding[j] 1), s = scale q k^T in float32, soft-capped
    (s -> c tanh(s / c)) when softcap > 0; 0 for a row with no allowed key (its cells are masked: any finite value
    serves); q (heads, n, d), k (kv_heads, n, d) on any device, blocks of `block` query rows at a time."""
    heads, n, _ = q.shape
    k = k.float().repeat_interleave(heads // k.shape[0], dim=0)
    out = torch.empty(heads, n, dtype=torch.float32, device=q.device)
    j = torch.arange(n, device=q.device)[None, :]
    padded = torch.tensor(key_padding, dtype=torch.bool, device=q.device)[None, :] if key_padding else None
    for r0 in range(0, n, block):
        i = torch.arange(r0, min(n, r0 + block), device=q.device)[:, None]
        s = (q[:, r0:r0 + block].float() @ k.transpose(-1, -2)) * scale  # (heads, rows, n)
        if softcap:
            s = torch.tanh(s / softcap) * softcap
        allowed = torch.ones_like(s[0], dtype=torch.bool)
        if causal:
            allowed &= j <= i
        if window:
            allowed &= j > i - window
        if padded is not None:
            allowed &= ~padded
        out[:, r0:r0 + block] = torch.logsumexp(s.masked_fill(~allowed, float("-inf")), dim=-1)
    return torch.nan_to_num(out, neginf=0.0)


def stock_attention(module, query, key, value, attention_mask, **kwargs):
    try:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
    except ImportError:
        return eager_attention(module, query, key, value, attention_mask, **kwargs)
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


class Capture:
    """Collects each layer's q and k as the forward runs, and writes the capture folder on save().

    out_dir:   the capture folder (made if needed)
    model:     the model's name, shown by attnscope
    token_ids, tokens: the run's token ids and their texts (tokens default to the ids as text)
    dtype:     what q and k are stored as (torch.float32, torch.float16 or torch.bfloat16; default float32)
    causal:    the model's mask (False for an encoder)
    attention_mask: the tokenizer's attention mask of the captured row (1 a token, 0 padding; a list or a tensor of
               n): padded keys are never attended in attnscope's maps (None: no padding)
    values:    also store each layer's v (kv_heads, n, d) and its heads' rows of W_O (heads, d, d_model, from
               module.o_proj.weight), so that attnscope weights the maps by value norms ||v_j W_O^h||
    lse:       also store each query row's log-sum-exp of its scaled, masked scores, computed here where q and k
               are (on the GPU: O(n^2 d) a layer, in blocks of query rows, never an (n, n) matrix), so that attnscope
               opens the capture in O(n d) instead of working the rows' statistics out itself
    rank, heads_per_rank: under tensor parallelism each rank sees its own query heads
               [rank * heads_per_rank, ...) and KV heads; it writes layer files of its heads only
               (layer_L.rankR.safetensors) and merge() joins them (heads_per_rank None: one process, all heads)
    """

    def __init__(self, out_dir, model="", token_ids=None, tokens=None, dtype=torch.float32, causal=True,
                 rank=0, world_size=1, lse=False, values=False, attention_mask=None):
        self.out_dir, self.model, self.dtype, self.causal, self.lse = out_dir, model, dtype, causal, lse
        self.values = values
        self.key_padding = None if attention_mask is None else [0 if int(m) else 1 for m in list(attention_mask)]
        self.token_ids = list(token_ids) if token_ids is not None else None
        self.tokens = list(tokens) if tokens is not None else None
        self.rank, self.world_size = rank, world_size
        self.layers = {}  # layer -> {"q": (heads, n, d), "k": (kv_heads, n, d)[, "lse", "v", "w_o"]}
        self.windows, self.scale, self.softcap = {}, None, None

    def attention(self, module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        """transformers' attention-function signature (AttentionInterface.register): query (batch, heads, n, d)
        after RoPE, key and value (batch, kv_heads, n, d) before repeat_kv."""
        layer = int(getattr(module, "layer_idx"))
        scale = float(scaling if scaling is not None else query.shape[-1] ** -0.5)
        if self.scale is not None and not math.isclose(scale, self.scale, rel_tol=1e-6):
            raise ValueError(f"attnscope capture: layer {layer}'s scale {scale} differs from {self.scale}")
        self.scale = scale
        self.windows[layer] = int(kwargs.get("sliding_window") or 0)
        softcap = float(kwargs.get("softcap") or 0)
        if self.softcap is not None and softcap != self.softcap:
            raise ValueError(f"attnscope capture: layer {layer}'s softcap {softcap} differs from {self.softcap}")
        self.softcap = softcap
        kept = {"q": query[0].detach().to("cpu", self.dtype), "k": key[0].detach().to("cpu", self.dtype)}
        if self.lse:
            kept["lse"] = row_log_sum_exp(query[0].detach(), key[0].detach(), scale, self.causal,
                                          self.windows[layer], softcap, self.key_padding).to("cpu")
        if self.values:  # o_proj.weight (d_model, heads d): head h's rows of W_O are its columns, transposed
            heads, d = query.shape[1], query.shape[3]
            w_o = module.o_proj.weight.detach()
            kept["v"] = value[0].detach().to("cpu", self.dtype)
            kept["w_o"] = w_o.t().reshape(heads, d, w_o.shape[0]).to("cpu", self.dtype)
        self.layers[layer] = kept
        return stock_attention(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)

    def _file(self, layer):
        return f"layer_{layer:03d}.safetensors" if self.world_size == 1 else f"layer_{layer:03d}.rank{self.rank}.safetensors"

    def save(self):
        """Writes every layer's file, then capture.json (last: a folder without it is not a capture yet)."""
        if not self.layers:
            raise ValueError("attnscope capture: no layer was captured (is attn_implementation set?)")
        layers = sorted(self.layers)
        if layers != list(range(len(layers))):
            raise ValueError(f"attnscope capture: layers {layers} captured, expected 0 .. {len(layers) - 1}")
        os.makedirs(self.out_dir, exist_ok=True)
        for layer in layers:
            write_safetensors(os.path.join(self.out_dir, self._file(layer)), self.layers[layer])
        q, k = self.layers[0]["q"], self.layers[0]["k"]
        n = q.shape[1]
        ids = self.token_ids if self.token_ids is not None else list(range(n))
        info = {"format": FORMAT, "version": VERSION, "model": self.model, "n_layer": len(layers),
                "n_head": q.shape[0] * self.world_size, "n_kv_head": k.shape[0] * self.world_size,
                "head_dim": q.shape[2], "n_tokens": n, "scale": self.scale, "softcap": self.softcap or 0,
                "causal": self.causal, "sliding_window": [self.windows[l] for l in layers],
                "key_padding": self.key_padding, "token_ids": ids,
                "tokens": self.tokens if self.tokens is not None else [str(i) for i in ids],
                "files": [f"layer_{l:03d}.safetensors" for l in layers]}
        name = "capture.json" if self.world_size == 1 else f"capture.rank{self.rank}.json"
        tmp = os.path.join(self.out_dir, name + ".partial")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(info, f, ensure_ascii=False)
        os.replace(tmp, os.path.join(self.out_dir, name))


def read_safetensors(path):
    """name -> CPU tensor, of the files write_safetensors writes (F32, F16, BF16)."""
    with open(path, "rb") as f:
        raw = f.read()
    length = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + length])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        data = bytearray(raw[8 + length + begin:8 + length + end])
        if info["dtype"] == "F32":
            t = torch.frombuffer(data, dtype=torch.float32)
        else:
            t = torch.frombuffer(data, dtype=torch.int16).view(torch.float16 if info["dtype"] == "F16" else torch.bfloat16)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def merge(out_dir, world_size):
    """Joins the ranks' files of a tensor-parallel capture (rank r holding query heads [r H/R, (r+1) H/R) and its
    KV heads) into one layer file each and capture.json, then removes the ranks' files."""
    infos = []
    for r in range(world_size):
        with open(os.path.join(out_dir, f"capture.rank{r}.json"), encoding="utf-8") as f:
            infos.append(json.load(f))
    info = dict(infos[0])
    for layer in range(info["n_layer"]):
        parts = [read_safetensors(os.path.join(out_dir, f"layer_{layer:03d}.rank{r}.safetensors"))
                 for r in range(world_size)]
        write_safetensors(os.path.join(out_dir, f"layer_{layer:03d}.safetensors"),
                          {name: torch.cat([p[name] for p in parts]) for name in parts[0]})
    tmp = os.path.join(out_dir, "capture.json.partial")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(info, f, ensure_ascii=False)
    os.replace(tmp, os.path.join(out_dir, "capture.json"))
    for r in range(world_size):
        os.remove(os.path.join(out_dir, f"capture.rank{r}.json"))
        for layer in range(info["n_layer"]):
            os.remove(os.path.join(out_dir, f"layer_{layer:03d}.rank{r}.safetensors"))
