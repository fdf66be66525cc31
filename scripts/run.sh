#!/usr/bin/env bash
# Sets up, builds and opens attnscope on the worked example. Extra arguments go to attnscope.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
exec build/app/attnscope "$@"
