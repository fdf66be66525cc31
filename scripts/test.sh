#!/usr/bin/env bash
# Sets up, builds and runs every test: unit, GPU parity (llvmpipe through EGL) and real-window tests (Xvfb).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh --test
# In CI: warnings are errors, and the GPU parity tests must run (llvmpipe through EGL is installed), so a
# missing GL 4.3 context there is a failure, not a skip. Elsewhere warnings stay warnings and GPU tests skip
# with the reason.
if [[ "${CI:-}" == "true" ]]; then
  export ATTNSCOPE_REQUIRE_GPU=1
  scripts/build.sh -DATTNSCOPE_WERROR=ON
else
  scripts/build.sh
fi
ctest --test-dir build --output-on-failure --timeout 600 -j "$(nproc)"
# In CI, also compile for the instruction sets users' CPUs have (x86-64-v2, and v4 with AVX-512), and fuzz the
# safetensors header, scene JSON, config.json and vocab.json + merges.txt readers for 30 s each (clang, ASan +
# UBSan; about 4 min in all with the builds).
if [[ "${CI:-}" == "true" ]]; then
  scripts/build-arch-variants.sh
  scripts/fuzz.sh 30
fi
