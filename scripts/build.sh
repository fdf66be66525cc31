#!/usr/bin/env bash
# Configures and builds attnscope (Release) into build/. Usage: scripts/build.sh [--target NAME] [extra cmake args]
# --target builds that target alone: scripts/run.sh builds the app (`attnscope`) and none of the tests and
# benchmarks, which scripts/test.sh builds (it names no target).
set -euo pipefail
cd "$(dirname "$0")/.."
target=()
if [[ "${1:-}" == "--target" ]]; then
  [[ $# -ge 2 ]] || { echo "build.sh: --target: expected a target name, got nothing" >&2; exit 2; }
  target=(--target "$2")
  shift 2
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build "${target[@]}"
