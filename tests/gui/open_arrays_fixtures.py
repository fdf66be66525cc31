#!/usr/bin/python3
"""Files for the open_arrays GUI test, and NumPy's weights for them (expected.json), independent of the engine.

  att.npy           (2, 3, 6, 6) float32 softmax rows (no mask: every cell a weight), with tokens.json
  att.safetensors   "big" (3, 5, 5) and "small" (2, 5, 5): two tensors, so the form asks which
  layer.npz         nn.MultiheadAttention's state dict (E = 4, 2 heads) and its input x (4 tokens)

Usage: open_arrays_fixtures.py OUT_DIR
"""
import json
import struct
import sys

import numpy as np


def softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main(out):
    rng = np.random.default_rng(19)
    # Sharp rows (scores of scale 3) so that cells span the colour map.
    att = softmax(3 * rng.standard_normal((2, 3, 6, 6))).astype(np.float32)
    np.save(f"{out}/att.npy", att)
    with open(f"{out}/tokens.json", "w") as f:
        json.dump(["The", "cat", "sat", "on", "the", "mat"], f)
    big = softmax(3 * rng.standard_normal((3, 5, 5))).astype(np.float32)
    small = softmax(3 * rng.standard_normal((2, 5, 5))).astype(np.float32)
    write_safetensors(f"{out}/att.safetensors", {"big": big, "small": small})

    # nn.MultiheadAttention(E, 2): y = x W^T + b with in_proj_weight = [W_q; W_k; W_v] (3E, E); head h reads
    # rows h * d_k .. (h + 1) * d_k of each; weights softmax(q_h k_h^T / sqrt(d_k)), no mask.
    e, heads, n = 4, 2, 4
    d_k = e // heads
    w_in = rng.standard_normal((3 * e, e)).astype(np.float32)
    b_in = (0.5 * rng.standard_normal(3 * e)).astype(np.float32)
    x = rng.standard_normal((n, e)).astype(np.float32)
    np.savez(f"{out}/layer.npz", **{"in_proj_weight": w_in, "in_proj_bias": b_in,
                                     "out_proj.weight": rng.standard_normal((e, e)).astype(np.float32),
                                     "out_proj.bias": np.zeros(e, np.float32), "x": x})
    xd, wd, bd = x.astype(np.float64), w_in.astype(np.float64), b_in.astype(np.float64)
    q = xd @ wd[:e].T + bd[:e]
    k = xd @ wd[e:2 * e].T + bd[e:2 * e]
    layer = [softmax(q[:, h * d_k:(h + 1) * d_k] @ k[:, h * d_k:(h + 1) * d_k].T / np.sqrt(d_k)).tolist()
             for h in range(heads)]
    with open(f"{out}/expected.json", "w") as f:
        json.dump({"npy": att.astype(np.float64).tolist(), "big": big.astype(np.float64).tolist(),
                   "layer": layer}, f)


if __name__ == "__main__":
    main(sys.argv[1])
