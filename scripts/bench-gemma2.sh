#!/usr/bin/env bash
# Gemma-2-2B's shape (26 layers, 8 heads, 4 KV heads, head_dim 256, hidden 2304, intermediate 9216, vocab 1024) on
# N tokens (default 1024) on the CPU, 2 threads each: attnscope's `model` (every map kept; the forward's seconds
# from ATTNSCOPE_TIMINGS) and a PyTorch eager float32 forward in plain torch ops keeping every map
# (scripts/bench_gemma2.py, as transformers runs with output_attentions), RUNS runs each (default 3), alternated.
# Prints each run and the medians, and each process's peak RSS (/usr/bin/time -v). The checkpoint (4 GB of BF16,
# 8 GB as float32) goes to $GEMMA_BENCH_DIR (default /tmp/attnscope-gemma2-2b), made once. Build first.
# On a card: BACKEND=gpu runs attnscope's whole forward on the GPU (--backend gpu; the renderer is printed with
# its timings) and TORCH_DEVICE=cuda PyTorch's on the same card.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-1024}"; runs="${2:-3}"; dir="${GEMMA_BENCH_DIR:-/tmp/attnscope-gemma2-2b}"
backend="${BACKEND:-cpu}"; torch_device="${TORCH_DEVICE:-cpu}"
[[ -f "$dir/model.safetensors" ]] || /usr/bin/python3 scripts/bench_gemma2.py make "$dir" "$n"
log="$dir/logs"; rm -rf "$log"; mkdir -p "$log"  # each run's stderr, kept for a look
for r in $(seq "$runs"); do
  # Every map kept, as PyTorch keeps them (past the default 256 MiB maps limit Gemma 2 too now keeps tiles' inputs).
  OMP_NUM_THREADS=2 ATTNSCOPE_TIMINGS=1 ATTNSCOPE_MAPS_LIMIT=64G /usr/bin/time -v "${ATTNSCOPE:-build/app/attnscope}" model "$dir" \
    --text-file "$dir/text.txt" --backend "$backend" >/dev/null 2>"$log/ours.$r"
  /usr/bin/time -v /usr/bin/python3 scripts/bench_gemma2.py torch "$dir" 1 "$torch_device" >"$log/torch.$r.json" \
    2>"$log/torch.$r"
done
LOG="$log" RUNS="$runs" N="$n" /usr/bin/python3 - <<'PY'
import json, os, re, statistics
log, runs = os.environ["LOG"], int(os.environ["RUNS"])
def rss(path):  # MiB
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read()).group(1)) / 1024
def wall(path):
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", open(path).read())
    return int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
def cpu_s(path):  # user + sys seconds of the whole process (loading included): less moved by other load than wall
    t = open(path).read()
    return sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", t).group(1)) for k in ("User", "System"))
def forward_s(path):  # the forward's own total (ATTNSCOPE_TIMINGS: "attnscope: timings: forward S s")
    return float(re.search(r"timings: forward ([\d.]+) s", open(path).read()).group(1))
def renderer(path):  # the GPU forward names its renderer: "forward S s (the GPU forward on RENDERER)"
    m = re.search(r"timings: forward [\d.]+ s \(the GPU forward on (.*)\)", open(path).read())
    return m.group(1) if m else "cpu"
ours = [forward_s(f"{log}/ours.{r}") for r in range(1, runs + 1)]
torch = [json.load(open(f"{log}/torch.{r}.json"))["forward_s"][0] for r in range(1, runs + 1)]
out = {"ours_device": renderer(f"{log}/ours.1"), "torch_device": json.load(open(f"{log}/torch.1.json"))["device"],
       "ours_forward_s": [round(t, 2) for t in ours], "torch_forward_s": [round(t, 2) for t in torch],
       "ours_median_s": round(statistics.median(ours), 2), "torch_median_s": round(statistics.median(torch), 2),
       "ours_wall_s": [round(wall(f"{log}/ours.{r}"), 1) for r in range(1, runs + 1)],
       "torch_wall_s": [round(wall(f"{log}/torch.{r}"), 1) for r in range(1, runs + 1)],
       "ours_cpu_s": [round(cpu_s(f"{log}/ours.{r}"), 1) for r in range(1, runs + 1)],
       "torch_cpu_s": [round(cpu_s(f"{log}/torch.{r}"), 1) for r in range(1, runs + 1)],
       "ours_peak_rss_MiB": round(max(rss(f"{log}/ours.{r}") for r in range(1, runs + 1))),
       "torch_peak_rss_MiB": round(max(rss(f"{log}/torch.{r}") for r in range(1, runs + 1)))}
weights = (1024 * 2304 + 26 * (2304 * (2048 + 1024 + 1024) + 2048 * 2304 + 3 * 9216 * 2304 + 4 * 2304) + 2304) * 4
maps = 26 * 8 * int(os.environ["N"]) ** 2 * 4
out["float32_weights_MiB"], out["maps_MiB"] = round(weights / 2**20), round(maps / 2**20)
out["ours_rss_over_weights_maps"] = round(out["ours_peak_rss_MiB"] * 2**20 / (weights + maps), 2)
print(json.dumps(out))
PY
