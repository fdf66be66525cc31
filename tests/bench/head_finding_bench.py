#!/usr/bin/env python3
"""Finding heads on the Qwen3-0.6B-shaped checkpoint (28 layers x 16 heads on 8 kv heads, head_dim 128, hidden
1024): `attnscope model DIR --repeated-random N/2 --analysis-out A.json` (the forward, every head-type score
of all 448 heads, composition of all 448 x 448 pairs in q, k and v, and direct logit attribution) beside the
same run without --analysis-out, each a few times, with ATTNSCOPE_TIMINGS's per-stage seconds. Prints one JSON
line. Not a ctest: the build machine is shared, so numbers are printed only.

Usage: tests/bench/head_finding_bench.py BUILD/app/attnscope [WORK_DIR] [N] [REPEAT] [BASELINE]   (/usr/bin/python3)
BASELINE: another attnscope binary (an older build) whose --analysis-out run alternates with this one's, so that
the machine's load falls on both alike; its stages are printed with a "baseline_" prefix.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_bench import qwen3_shaped_checkpoint  # noqa: E402


def timed(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(r.stderr)
    return time.perf_counter() - t0, r.stderr


def main():
    binary = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else "/tmp/attnscope_head_finding_bench"
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    baseline = sys.argv[5] if len(sys.argv) > 5 else None
    if not os.path.exists(os.path.join(work, "config.json")):
        qwen3_shaped_checkpoint(work)
    env = dict(os.environ, ATTNSCOPE_TIMINGS="1")
    base = [binary, "model", work, "--repeated-random", str(n // 2)]
    plain, full, stages = [], [], {}
    stage = r"timings: +(composition|head scores|forward|factors|gram slabs|pair products)[^\d]* ([\d.]+) s"
    for _ in range(repeat):  # alternated, so the machine's load falls on both alike
        plain.append(timed(base, env)[0])
        s, err = timed(base + ["--analysis-out", os.path.join(work, "analysis.json")], env)
        full.append(s)
        for what, secs in re.findall(stage, err):
            stages.setdefault(what, []).append(float(secs))
        if baseline:
            s, err = timed([baseline] + base[1:] + ["--analysis-out", os.path.join(work, "baseline.json")], env)
            stages.setdefault("baseline with analysis", []).append(s)
            for what, secs in re.findall(stage, err):
                stages.setdefault("baseline " + what, []).append(float(secs))
    print(json.dumps({"n": n, "runs": repeat, "model_run_median_s": round(statistics.median(plain), 2),
                      "with_analysis_median_s": round(statistics.median(full), 2),
                      "analysis_median_s": round(statistics.median(full) - statistics.median(plain), 2),
                      **{what.replace(" ", "_") + "_median_s": round(statistics.median(v), 2)
                         for what, v in stages.items()},
                      "load_avg": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
