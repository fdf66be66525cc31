#!/usr/bin/env python3
"""Writes sentence_heads.json: one causal layer of four heads built by hand on a ten-word sentence, each doing
one of the jobs interpretability papers name (previous token, first token, induction, duplicate token), for the
README's pictures and the tour. Deterministic (seeded). Usage: make_sentence_heads.py OUT.json

Each input row x_i = [one-hot position i (10) | one-hot token (7) | one-hot token at i - 1 (7)] plus noise of
0.05: the last block is what an earlier previous-token head would have written into the residual stream, which
is what an induction head reads. Each head has d_k = 18 (scale 1/sqrt(18)); its W_Q and W_K pick the blocks it
compares, so a score is a logit L where the pattern holds and about 0 elsewhere; every head but the first-token
one also gives key 0 (the first token) a smaller logit, the "sink" real heads fall back on."""
import json, math, sys
import numpy as np

words = "the cat sat on the mat and the cat slept".split()
vocab = sorted(set(words), key=words.index)
n, V, dk, dv = len(words), len(vocab), 18, 4
P, T, PT = 0, n, n + V          # column offsets of the three blocks
d = n + 2 * V
scale = 1 / math.sqrt(dk)
rng = np.random.default_rng(7)

X = np.zeros((n, d))
for i, w in enumerate(words):
    X[i, P + i] = 1
    X[i, T + vocab.index(w)] = 1
    if i > 0:
        X[i, PT + vocab.index(words[i - 1])] = 1
X += rng.normal(0, 0.05, X.shape)

def c(logit):  # the entry whose square, scaled, is that logit
    return math.sqrt(logit / scale)

SINK = dk - 1   # the q/k column that gives key 0 its logit

def head(match, sink):
    wq, wk, bq = np.zeros((d, dk)), np.zeros((d, dk)), np.zeros(dk)
    match(wq, wk)
    bq[SINK] = c(sink)
    wk[P + 0, SINK] = c(sink)
    return wq, wk, bq

def previous_token(wq, wk):      # query at i matches the key at i - 1
    for i in range(1, n):
        wq[P + i, i - 1] = c(5)
        wk[P + i - 1, i - 1] = c(5)

def first_token(wq, wk):         # only the sink (below), and a little of the query's own position
    for i in range(n):
        wq[P + i, i] = c(1)
        wk[P + i, i] = c(1)

def induction(wq, wk):           # query token t matches a key whose previous token was t
    for t in range(V):
        wq[T + t, t] = c(5)
        wk[PT + t, t] = c(5)

def duplicate_token(wq, wk):     # query token t matches key token t, minus the query itself
    for t in range(V):
        wq[T + t, t] = c(5)
        wk[T + t, t] = c(5)
    for i in range(min(n, SINK - V)):
        wq[P + i, V + i] = -c(5)
        wk[P + i, V + i] = c(5)

heads = []
for match, sink in [(previous_token, 1.5), (first_token, 4), (induction, 2.5), (duplicate_token, 2.5)]:
    wq, wk, bq = head(match, sink)
    wv = rng.normal(0, 1 / math.sqrt(d), (d, dv))
    heads.append({"w_q": wq.tolist(), "w_k": wk.tolist(), "w_v": wv.tolist(), "b_q": bq.tolist()})

scene = {
    "format": "attnscope-scene", "version": 1,
    "description": "Four heads built by hand on one sentence, each doing one job: previous token, first token "
                   "(the sink), induction (attend to the token after an earlier copy of this one) and duplicate "
                   "token (attend to earlier copies). Rows: one-hot position, token, and previous token, plus "
                   "noise. Written by assets/scenes/make_sentence_heads.py.",
    "d_model": d, "query_tokens": words,
    "query": np.round(X, 4).tolist(),
    "heads": [{k: np.round(np.array(v), 4).tolist() for k, v in h.items()} for h in heads],
    "w_o": np.round(rng.normal(0, 1 / math.sqrt(4 * dv), (4 * dv, d)), 4).tolist(),
    "mask": "causal",
}
with open(sys.argv[1], "w") as f:
    json.dump(scene, f, separators=(",", ":"))
    f.write("\n")
