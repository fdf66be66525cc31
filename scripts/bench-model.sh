#!/usr/bin/env bash
# GPT-2 small's shape at N tokens (default 1024): attnscope's forward (Google Benchmark, 5 runs with a fresh
# result each, and 5 reusing one) and a NumPy forward of the same shape (5 runs) in one go; prints the medians
# and the ratios. Build first (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-1024}"
cpp_json="$(build/tests/bench/attnscope_bench --benchmark_filter="BM_Gpt2SmallForward/$n/" --benchmark_format=json 2>/dev/null)"
np_json="$(/usr/bin/python3 tests/model/bench_numpy_forward.py "$n" 5)"
CPP_JSON="$cpp_json" NP_JSON="$np_json" /usr/bin/python3 - <<'PY'
import json, os
cpp = json.loads(os.environ["CPP_JSON"])
np_ = json.loads(os.environ["NP_JSON"])
med = {b["run_name"].split("/")[2]: b for b in cpp["benchmarks"] if b.get("aggregate_name") == "median"}
fresh, reused = med["0"], med.get("1")
out = {"n": np_["n"], "attnscope_fresh_median_s": round(fresh["real_time"] / 1000, 3),
       "numpy_median_s": round(np_["median_s"], 3),
       "ratio_fresh_over_numpy": round(fresh["real_time"] / 1000 / np_["median_s"], 3)}
if reused:
    out["attnscope_reused_median_s"] = round(reused["real_time"] / 1000, 3)
    out["ratio_reused_over_numpy"] = round(reused["real_time"] / 1000 / np_["median_s"], 3)
out.update({"peak_rss_MiB": round(fresh["peak_rss_MiB"]), "weights_MiB": round(fresh["weights_MiB"]),
            "maps_MiB": round(fresh["maps_MiB"]), "rss_over_weights_maps": round(fresh["rss_over_weights_maps"], 2)})
print(json.dumps(out))
PY
