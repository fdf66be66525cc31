#!/usr/bin/env bash
# Sets up, builds and runs every test: unit, GPU parity (llvmpipe through EGL) and real-window tests (Xvfb).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 600 -j "$(nproc)"
