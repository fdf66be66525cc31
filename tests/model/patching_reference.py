#!/usr/bin/env python3
"""Which heads matter, independently of attnscope: ablation and activation patching in float64 NumPy, each
intervention a whole forward from layer 0 with a hook (as TransformerLens runs them), on a checkpoint written by
gpt2_reference.py or llama_reference.py (their own forwards, with their edit_residual / edit_heads hooks).

  patching_reference.py CKPT --ids '[...]' [--corrupt '[...]'] --metric logit-diff:A,B|logprob:T|loss
                        [--position P] [--ablate zero|mean [--reference '[...]']] [--direction denoise|noise]
                        --out OUT.json

Writes {"clean", "corrupt", "heads": [layer][head], "layers": [layer], "mlp": [layer], "residual": [layer][position]
(patching),
"unembed_l1": the largest sum |W_U[t, :]| over the vocabulary} in float64."""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference  # noqa: E402
from head_finding_reference import read_safetensors  # noqa: E402
import llama_reference  # noqa: E402


def load(ckpt):
    with open(os.path.join(ckpt, "config.json")) as f:
        cfg = json.load(f)
    w = read_safetensors(os.path.join(ckpt, "model.safetensors"))
    if cfg.get("model_type", "gpt2") == "gpt2":
        prefix = "transformer." if "transformer.wte.weight" in w else ""
        run = lambda ids, **hooks: gpt2_reference.forward(w, cfg, ids, prefix, **hooks)[1]  # noqa: E731
        unembed = w[prefix + "wte.weight"]
        layers, heads = cfg["n_layer"], cfg["n_head"]
        hd = cfg["n_embd"] // heads
    else:
        run = lambda ids, **hooks: llama_reference.forward(w, cfg, ids, **hooks)[1]  # noqa: E731
        unembed = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        layers, heads = cfg["num_hidden_layers"], cfg["num_attention_heads"]
        hd = cfg.get("head_dim") or cfg["hidden_size"] // heads
    return run, unembed, layers, heads, hd


def metric_of(kind, tokens, position, unembed, softcap=0.0, bias=None, encoder=False):
    """The metric of final hidden states (n, d): logits unembed @ h (+ bias: an encoder's masked-LM head, whose
    transform the run applied), soft-capped; an encoder's loss is each position's own token's."""
    def logits(h):
        z = unembed @ h + (bias if bias is not None else 0.0)
        return np.tanh(z / softcap) * softcap if softcap else z

    def log_softmax(z):
        top = z.max()
        return z - top - np.log(np.exp(z - top).sum())

    def value(hidden, ids):
        if kind == "loss" and encoder:
            return float(np.mean([-log_softmax(logits(hidden[i]))[ids[i]] for i in range(max(position, 0), len(ids))]))
        if kind == "loss":
            return float(np.mean([-log_softmax(logits(hidden[i]))[ids[i + 1]]
                                  for i in range(max(position, 0), len(ids) - 1)]))
        z = logits(hidden[position if position >= 0 else len(ids) - 1])
        if kind == "logprob":
            return float(log_softmax(z)[tokens[0]])
        return float(z[tokens[0]] - z[tokens[1]])
    return value


def recorded(run, ids, layers):
    """The run's hidden state, each layer's entering residual stream, its heads' outputs before W_O and its MLP's
    output."""
    residual, heads, mlp = [None] * layers, [None] * layers, [None] * layers

    def keep_x(layer, x):
        residual[layer] = x.copy()
        return x

    def keep_z(layer, z):
        heads[layer] = z.copy()
        return z

    def keep_m(layer, m):
        mlp[layer] = m.copy()
        return m
    hidden = run(ids, edit_residual=keep_x, edit_heads=keep_z, edit_mlp=keep_m)
    return hidden, residual, heads, mlp


def interventions(run, unembed, layers, heads, hd, clean, metric, corrupt=None, position=-1, ablate="zero",
                  direction="denoise", softcap=0.0, layers_only=0, reference=None, bias=None, encoder=False, sensitivity=None):
    """Every intervention as a whole forward with a hook. run(ids, edit_residual=, edit_heads=, edit_mlp=) -> final
    hidden (n, d); unembed (V, d); softcap: the logits' (Gemma 2); reference: ids whose run's means a mean ablation
    puts in (else the clean run's). Returns the dict the module's header describes."""
    kind, _, tokens = metric.partition(":")
    value = metric_of(kind, [int(t) for t in tokens.split(",")] if tokens else [], position, unembed, softcap, bias,
                      encoder)
    hidden, residual, z, mlp = recorded(run, clean, layers)
    mean_z, mean_mlp = (z, mlp) if reference is None else recorded(run, reference, layers)[2:]
    # unembed_l1: how far a logit moves at most per unit of error in every element of the last layer's output (the
    # tests' bar): W_U's largest row sum of |.|, or `sensitivity` (an encoder's, through its masked-LM head).
    l1 = float(np.abs(unembed).sum(axis=1).max()) if sensitivity is None else sensitivity
    out = {"clean": value(hidden, clean), "unembed_l1": l1}

    def edit_head(layer, head, new):  # new(z) -> the head's columns
        def edit(l, m):
            if l != layer:
                return m
            m = m.copy()
            m[:, head * hd:(head + 1) * hd] = new(m)
            return m
        return edit

    if corrupt is None:
        if layers_only:
            layers = layers_only
        out["heads"] = [[value(run(clean, edit_heads=edit_head(
            l, h, (lambda m, h=h: 0.0) if ablate == "zero"
            else (lambda m, l=l, h=h: mean_z[l][:, h * hd:(h + 1) * hd].mean(axis=0)))), clean)
            for h in range(heads)] for l in range(layers)]

        def whole(layer, means):
            def edit(l, m):
                if l != layer:
                    return m
                return np.zeros_like(m) if ablate == "zero" else np.broadcast_to(means[l].mean(axis=0), m.shape).copy()
            return edit
        out["layers"] = [value(run(clean, edit_heads=whole(l, mean_z)), clean) for l in range(layers)]
        out["mlp"] = [value(run(clean, edit_mlp=whole(l, mean_mlp)), clean) for l in range(layers)]
        return out
    c_hidden, c_residual, c_z, c_mlp = recorded(run, corrupt, layers)
    out["corrupt"] = value(c_hidden, corrupt)
    into_corrupt = direction == "denoise"
    ids = corrupt if into_corrupt else clean
    src_z, src_x, src_mlp = (z, residual, mlp) if into_corrupt else (c_z, c_residual, c_mlp)
    out["heads"] = [[value(run(ids, edit_heads=edit_head(l, h, lambda m, l=l, h=h: src_z[l][:, h * hd:(h + 1) * hd])),
                           ids) for h in range(heads)] for l in range(layers)]
    out["layers"] = [value(run(ids, edit_heads=lambda ll, m, l=l: src_z[l].copy() if ll == l else m), ids)
                     for l in range(layers)]
    out["mlp"] = [value(run(ids, edit_mlp=lambda ll, m, l=l: src_mlp[l].copy() if ll == l else m), ids)
                  for l in range(layers)]

    def patch_x(layer, p):
        def edit(ll, x):
            if ll != layer:
                return x
            x = x.copy()
            x[p] = src_x[layer][p]
            return x
        return edit
    out["residual"] = [[value(run(ids, edit_residual=patch_x(l, p)), ids) for p in range(len(ids))]
                       for l in range(layers)]
    return out


def run_specs(specs, run, unembed, layers, heads, hd, softcap=0.0, bias=None, encoder=False, sensitivity=None):
    """A list of runs (each {"ids", "metric"} and optionally "corrupt", "ablate", "direction", "position",
    "reference"), as a family's reference script hands them from --patch: the list of their results. bias, encoder:
    an encoder's (metric_of)."""
    return [interventions(run, unembed, layers, heads, hd, s["ids"], s["metric"], s.get("corrupt"),
                          s.get("position", -1), s.get("ablate", "zero"), s.get("direction", "denoise"), softcap,
                          reference=s.get("reference"), bias=bias, encoder=encoder, sensitivity=sensitivity)
            for s in specs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--corrupt")
    ap.add_argument("--metric", required=True)
    ap.add_argument("--position", type=int, default=-1)
    ap.add_argument("--ablate", default="zero", choices=["zero", "mean"])
    ap.add_argument("--direction", default="denoise", choices=["denoise", "noise"])
    ap.add_argument("--reference", help="ids whose run's means --ablate mean puts in")
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers-only", type=int, default=0,
                    help="ablation of the first N layers' heads only (scripts/bench-patching.sh times them)")
    args = ap.parse_args()
    run, unembed, layers, heads, hd = load(args.ckpt)
    out = interventions(run, unembed, layers, heads, hd, json.loads(args.ids), args.metric,
                        json.loads(args.corrupt) if args.corrupt else None, args.position, args.ablate, args.direction,
                        layers_only=args.layers_only, reference=json.loads(args.reference) if args.reference else None)
    with open(args.out, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
