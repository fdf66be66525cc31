#!/usr/bin/env bash
# GPT-2 small's shape at N tokens (default 1024): attnscope's forward (Google Benchmark, 5 runs) and a NumPy
# forward of the same shape (5 runs) in one go; prints both medians and the ratio. Build first (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-1024}"
cpp_json="$(build/tests/bench/attnscope_bench --benchmark_filter="BM_Gpt2SmallForward/$n/" --benchmark_format=json 2>/dev/null)"
np_json="$(/usr/bin/python3 tests/model/bench_numpy_forward.py "$n" 5)"
CPP_JSON="$cpp_json" NP_JSON="$np_json" /usr/bin/python3 - <<'PY'
import json, os
cpp = json.loads(os.environ["CPP_JSON"])
med = next(b for b in cpp["benchmarks"] if b.get("aggregate_name") == "median")
np_ = json.loads(os.environ["NP_JSON"])
cpp_s = med["real_time"] / 1000.0
print(json.dumps({"n": np_["n"], "attnscope_median_s": round(cpp_s, 3), "numpy_median_s": round(np_["median_s"], 3),
                  "ratio_attnscope_over_numpy": round(cpp_s / np_["median_s"], 3),
                  "peak_rss_MiB": round(med["peak_rss_MiB"]), "weights_MiB": round(med["weights_MiB"]),
                  "maps_MiB": round(med["maps_MiB"]), "rss_over_weights_maps": round(med["rss_over_weights_maps"], 2)}))
PY
