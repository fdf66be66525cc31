#!/usr/bin/env bash
# Sets up, builds the app alone (not the tests and benchmarks: scripts/test.sh builds those) and opens attnscope
# on the worked example. Extra arguments go to attnscope (`scripts/run.sh --scene assets/scenes/sentence_heads.json`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh --target attnscope
exec build/app/attnscope "$@"
