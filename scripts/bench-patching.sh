#!/usr/bin/env bash
# Which heads matter, timed (issue 44): `attnscope model --patch-out` on 20-token texts against the same ablation in
# NumPy as TransformerLens runs it (tests/model/patching_reference.py: one whole forward per head, float64), on a
# GPT-2-small shape (12 layers x 12 heads, d 768) and a Qwen3-0.6B shape (28 layers x 16 heads, 8 KV heads,
# head_dim 128, hidden 1024, intermediate 3072). Both with a 300-token vocabulary: the metric here (a logit
# difference) reads two rows of the unembedding, so the vocabulary does not enter the time. Random weights from the
# reference scripts (made once under $PATCH_BENCH_DIR, default /tmp/attnscope-patch-bench; the Qwen3 shape is
# 1.7 GB). Prints each run's wall time, alternated, RUNS times (default 2). NumPy is timed on the first layer's
# heads only and scaled by the count (each of its interventions is a whole forward, the same cost). Build first.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-2}"; dir="${PATCH_BENCH_DIR:-/tmp/attnscope-patch-bench}"
app="${ATTNSCOPE:-build/app/attnscope}"
mkdir -p "$dir"
[[ -f "$dir/gpt2s/model.safetensors" ]] ||
  /usr/bin/python3 tests/model/gpt2_reference.py "$dir/gpt2s" --layers 12 --heads 12 --embd 768 --positions 64 --tokens 20
[[ -f "$dir/qwen3/model.safetensors" ]] ||
  /usr/bin/python3 tests/model/llama_reference.py "$dir/qwen3" --family qwen3 --layers 28 --heads 16 --kv-heads 8 \
    --hidden 1024 --head-dim 128 --inter 3072 --positions 64 --tie --text "Nineteen bytes here"
echo "renderer: none (CPU), $(nproc) cores, OMP_NUM_THREADS=2"
for shape in gpt2s qwen3; do
  for r in $(seq "$runs"); do
    # 20 tokens: 10 random ones repeated (the same ids every run), then NumPy on the ids attnscope wrote.
    t0=$(date +%s.%N)
    OMP_NUM_THREADS=2 "$app" model "$dir/$shape" --repeated-random 10 --metric logit-diff:5,7 --ablate zero \
      --patch-out "$dir/$shape.ours.json" >/dev/null 2>"$dir/$shape.ours.log"
    t1=$(date +%s.%N)
    ids=$(/usr/bin/python3 -c "import json; print(json.load(open('$dir/$shape.ours.json'))['token_ids'])")
    OMP_NUM_THREADS=2 /usr/bin/python3 tests/model/patching_reference.py "$dir/$shape" --ids "$ids" \
      --metric logit-diff:5,7 --layers-only 1 --out "$dir/$shape.numpy.json"
    t2=$(date +%s.%N)
    SHAPE=$shape T0=$t0 T1=$t1 T2=$t2 OUT="$dir/$shape.ours.json" /usr/bin/python3 - <<'PY'
import json, os
ours, numpy_first = float(os.environ["T1"]) - float(os.environ["T0"]), float(os.environ["T2"]) - float(os.environ["T1"])
got = json.load(open(os.environ["OUT"]))
layers, heads = len(got["heads"]), len(got["heads"][0])
runs = layers * (heads + 2)  # every head, then every layer's heads at once, then every layer's MLP
# NumPy ran the clean forward, the first layer's heads, its heads at once and its MLP: heads + 3 whole forwards.
numpy_all = numpy_first / (heads + 3) * (runs + 1)
print(f"{os.environ['SHAPE']}: {layers} x {heads} heads, {len(got['tokens'])} tokens, {runs} ablations: "
      f"attnscope {ours:.1f} s (whole command), NumPy (a forward per head) {numpy_all:.1f} s (from "
      f"{numpy_first:.1f} s for the first layer), ratio {ours / numpy_all:.2f}")
PY
  done
done
